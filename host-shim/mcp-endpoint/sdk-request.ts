import type { IncomingMessage } from "node:http";
import { MCP_PATH } from "./request-log.js";

/** The URL the SDK sees; it only ends up in the handlers' requestInfo. */
const SDK_URL = `http://localhost${MCP_PATH}`;

/** The headers the SDK's POST handling reads. Never Authorization: the secret stays out of requestInfo. */
const SDK_HEADERS = ["content-type", "accept", "mcp-protocol-version"] as const;

const real = Symbol("real Request");

interface LazyRequest {
  method: string;
  url: string;
  headers: Headers;
  [real]?: Request;
}

function realOf(request: LazyRequest): Request {
  request[real] ??= new Request(request.url, { method: request.method, headers: request.headers });
  return request[real];
}

/**
 * A Request whose method, URL and headers are ready-made, which is all the SDK's transport reads of a
 * POST with a parsed body; every other member builds a real Request of the same method, URL and headers
 * on first use and answers from it. The SDK's own Node adapter (@hono/node-server) hands it requests made
 * the same way; a native Request costs an AbortController and webidl conversions per request.
 */
const lazyPrototype: object = Object.create(Request.prototype);
const OWN = ["method", "url", "headers"];
for (const name of Object.getOwnPropertyNames(Request.prototype)) {
  if (name === "constructor") continue;
  if (OWN.includes(name)) {
    // Plain slots, so that each request's own values can be assigned over Request's getters.
    Object.defineProperty(lazyPrototype, name, { configurable: true, writable: true, value: undefined });
    continue;
  }
  const member = Object.getOwnPropertyDescriptor(Request.prototype, name);
  if (member?.get !== undefined) {
    Object.defineProperty(lazyPrototype, name, {
      configurable: true,
      get(this: LazyRequest) {
        return (realOf(this) as unknown as Record<string, unknown>)[name];
      },
    });
  } else if (typeof member?.value === "function") {
    Object.defineProperty(lazyPrototype, name, {
      configurable: true,
      writable: true,
      value(this: LazyRequest, ...args: unknown[]) {
        const target = realOf(this) as unknown as Record<string, (...args: unknown[]) => unknown>;
        return target[name]?.apply(target, args);
      },
    });
  }
}

/** The request as the SDK's web-standard transport gets it. */
export function sdkRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const name of SDK_HEADERS) {
    const value = req.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  const request: LazyRequest = Object.create(lazyPrototype);
  request.method = "POST";
  request.url = SDK_URL;
  request.headers = headers;
  return request as unknown as Request;
}
