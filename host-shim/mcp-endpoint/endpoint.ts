import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { AccessKey, AccessRegistry } from "../access-contract.js";
import { drainAndLingerClose, mustCloseForUnreadBody, readBoundedBody } from "../body.js";
import type { HostLogger } from "../contract.js";
import { checkGate } from "./gate.js";
import { InFlight } from "./in-flight.js";
import { type McpEndpointLimits, resolveLimits } from "./limits.js";
import { ServerPool, authInfoOf } from "./mcp-server.js";
import { type Refusal, type RpcId, refusal, writeRefusal } from "./replies.js";
import { type RequestRecord, logOnClose, loggedMethod } from "./request-log.js";
import { sdkRequest } from "./sdk-request.js";
import type { CallScope } from "./tool-call.js";

export interface McpEndpointDeps {
  registry: AccessRegistry;
  logger: HostLogger;
  limits?: Partial<McpEndpointLimits>;
  /** The gateway's token header (GatewayHost.tokenHeader); its mere presence is refused. Default x-service-token. */
  gatewayTokenHeader?: string;
}

export interface McpEndpoint {
  /** The `/mcp` route handler (register with match "exact"). Never rejects. */
  handler(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Refuses new requests, cancels running calls, and resolves when every request has finished. */
  close(): Promise<void>;
}

/**
 * The external agents' MCP endpoint: the gate (transport, Origin, query, key), then bounds (method,
 * concurrency, body, calls per key), then the SDK's Streamable HTTP server in stateless JSON mode.
 */
export function createMcpEndpoint(deps: McpEndpointDeps): McpEndpoint {
  const limits = resolveLimits(deps.limits);
  const inFlight = new InFlight(limits.maxConcurrentRequests, limits.maxInFlightPerKey);
  const tokenHeader = (deps.gatewayTokenHeader ?? "x-service-token").toLowerCase();
  // One subscription for the endpoint's life: a key's invalidation stops that key's running calls.
  const unsubscribe = deps.registry.onInvalidated((keyId) => inFlight.abortKey(keyId, "revoked"));
  const servers = new ServerPool(limits.maxConcurrentRequests);
  const running = new Set<Promise<void>>();
  /** Requests still uploading their body: close() cuts these off rather than wait on a slow client. */
  const uploading = new Set<IncomingMessage>();
  let closing: Promise<void> | undefined;

  async function handler(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const record: RequestRecord = { keyId: null, method: null, onGone: null };
    logOnClose(res, deps.logger, record);
    const work = serve(req, res, record).catch(() => {
      // Whatever broke, the client gets no exception text; a half-written answer can only be cut off.
      if (res.headersSent) res.destroy();
      else answer(req, res, refusal(500, "UNAVAILABLE", "The MCP endpoint failed to answer."));
    });
    running.add(work);
    try {
      await work;
    } finally {
      running.delete(work);
    }
  }

  async function serve(req: IncomingMessage, res: ServerResponse, record: RequestRecord): Promise<void> {
    if (closing !== undefined) {
      return answer(req, res, refusal(503, "UNAVAILABLE", "The gateway is shutting down."));
    }
    const gate = checkGate(req, deps.registry, tokenHeader);
    if (!gate.ok) return answer(req, res, gate.refusal);
    record.keyId = gate.key.id;
    // Stateless: no GET notification stream and no session to DELETE. Clients treat 405 as "none".
    if (req.method !== "POST") {
      const message = "/mcp is stateless: it answers POST only (no GET stream, no session to delete).";
      return answer(req, res, refusal(405, "METHOD_NOT_ALLOWED", message, { headers: { Allow: "POST" } }));
    }
    const releaseRequest = inFlight.tryRequest();
    if (releaseRequest === null) {
      return answer(
        req,
        res,
        busy("The MCP endpoint is at its limit of concurrent requests; retry shortly."),
      );
    }
    try {
      await serveBounded(req, res, record, gate.key, gate.digest);
    } finally {
      releaseRequest();
    }
  }

  async function serveBounded(
    req: IncomingMessage,
    res: ServerResponse,
    record: RequestRecord,
    key: AccessKey,
    digest: string,
  ): Promise<void> {
    if (!isJsonMediaType(req.headers["content-type"])) {
      return answer(req, res, refusal(415, "INVALID_REQUEST", "Content-Type must be application/json."));
    }
    uploading.add(req);
    const body = await readBoundedBody(req, limits.maxBodyBytes).finally(() => uploading.delete(req));
    if (body.kind === "too_large") {
      return answer(
        req,
        res,
        refusal(413, "TOO_LARGE", `The request body exceeds ${limits.maxBodyBytes} bytes.`),
      );
    }
    if (body.kind === "aborted") return answer(req, res, invalid("The request body was cut short."));
    let message: unknown;
    try {
      message = JSON.parse(body.body.toString("utf8"));
    } catch {
      return answer(
        req,
        res,
        refusal(400, "INVALID_REQUEST", "Parse error: invalid JSON.", { rpcCode: -32700 }),
      );
    }
    // Batches left MCP in 2025-06-18 and no SDK client sends one; one message per request keeps the
    // per-key call count and the log line exact.
    if (Array.isArray(message))
      return answer(req, res, invalid("JSON-RPC batches are not supported on /mcp."));
    const { method, id } = (typeof message === "object" && message !== null ? message : {}) as {
      method?: unknown;
      id?: unknown;
    };
    record.method = loggedMethod(method);
    let releaseCall: (() => void) | null = null;
    if (method === "tools/call") {
      releaseCall = inFlight.tryCall(key.id);
      if (releaseCall === null) {
        const text = `This access key already has ${limits.maxInFlightPerKey} tool calls running; retry when one finishes.`;
        return answer(req, res, busy(text, rpcId(id)));
      }
    }
    const scope = newScope(record, key, digest);
    try {
      await runMcp(req, res, message, scope, servers);
    } finally {
      // A tool that ignored its signal still holds its key's slot until it really stops.
      if (releaseCall !== null) void Promise.allSettled(scope.lingering).then(releaseCall);
    }
  }

  function newScope(record: RequestRecord, key: AccessKey, digest: string): CallScope {
    const scope: CallScope = {
      registry: deps.registry,
      key,
      digest,
      limits,
      inFlight,
      logger: deps.logger,
      gone: false,
      onGone: null,
      lingering: [],
    };
    // The request's one 'close' listener (the log line's) tells the scope when the client went away.
    record.onGone = () => {
      scope.gone = true;
      scope.onGone?.();
    };
    return scope;
  }

  return {
    handler,
    close() {
      closing ??= (async () => {
        unsubscribe();
        inFlight.abortAll("shutdown");
        for (const req of uploading) req.destroy();
        while (running.size > 0) await Promise.allSettled([...running]);
      })();
      return closing;
    },
  };
}

/**
 * A fresh SDK transport for this request, and a server of the pool for as long as it lasts: connected,
 * given the message with the request's scope in `authInfo`, closed when the answer is written, then
 * returned. The SDK's web-standard transport is called directly: it gets a Request with only the headers
 * it reads (never the Authorization secret), and its Response is written back in one go.
 */
async function runMcp(
  req: IncomingMessage,
  res: ServerResponse,
  message: unknown,
  scope: CallScope,
  servers: ServerPool,
): Promise<void> {
  const server = servers.take();
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  try {
    await server.connect(transport);
    const response = await transport.handleRequest(sdkRequest(req), {
      parsedBody: message,
      authInfo: authInfoOf(scope),
    });
    const body = response.body === null ? "" : await response.text();
    if (res.destroyed || res.writableEnded) return;
    const headers: OutgoingHttpHeaders = { "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" };
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    headers["Content-Length"] = Buffer.byteLength(body, "utf8");
    res.writeHead(response.status, headers).end(body);
  } finally {
    await server.close();
    // Only after a request: a notification's handler may still run on its server after the answer.
    if (isRpcRequest(message)) servers.give(server);
  }
}

function isRpcRequest(message: unknown): boolean {
  if (typeof message !== "object" || message === null) return false;
  const { method, id } = message as { method?: unknown; id?: unknown };
  return typeof method === "string" && id !== undefined && id !== null;
}

/** A refused request's body up to this size is drained and the connection kept; a larger one closes it. */
const MAX_DRAINED_BYTES = 256 * 1024;

function answer(req: IncomingMessage, res: ServerResponse, refused: Refusal): void {
  // An unread upload must not be buffered, and must not turn into a reset that erases the answer.
  const unread = mustCloseForUnreadBody(req, MAX_DRAINED_BYTES);
  if (unread) drainAndLingerClose(req);
  writeRefusal(res, refused, { close: unread });
}

function busy(message: string, id: RpcId | null = null): Refusal {
  return refusal(429, "BUSY", message, { id, headers: { "Retry-After": "1" } });
}

function invalid(message: string): Refusal {
  return refusal(400, "INVALID_REQUEST", message, { rpcCode: -32600 });
}

function rpcId(value: unknown): RpcId | null {
  return typeof value === "string" || (typeof value === "number" && Number.isFinite(value)) ? value : null;
}

/** application/json with any parameters, as the SDK itself accepts. */
function isJsonMediaType(header: string | undefined): boolean {
  return header?.split(";")[0]?.trim().toLowerCase() === "application/json";
}
