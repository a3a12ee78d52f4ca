import { type Server, createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { selfSignedPair } from "../../fixtures/gateway/tls.js";
import type { HostLogger } from "../../host-shim/contract.js";
import {
  type McpEndpoint,
  type McpEndpointLimits,
  createMcpEndpoint,
} from "../../host-shim/mcp-endpoint/index.js";
import { type Reply, type SendOptions, send } from "../helpers/http.js";
import { RegistryDouble } from "./registry-double.js";

export interface LogLine {
  level: "info" | "warn" | "error";
  fields: Record<string, unknown>;
  message: string;
}

export interface Harness {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  base: string;
  /** The endpoint's URL: base + /mcp */
  url: string;
  ca: string | undefined;
  server: Server;
  endpoint: McpEndpoint;
  registry: RegistryDouble;
  logs: LogLine[];
  close(): Promise<void>;
}

/**
 * A real node:http(s) server on 127.0.0.1:0 that mounts the endpoint at /mcp as the gateway does
 * (exact path, query string not part of the match), over a registry double.
 */
export async function startEndpoint(
  options: { limits?: Partial<McpEndpointLimits>; tls?: boolean } = {},
): Promise<Harness> {
  const logs: LogLine[] = [];
  const logger: HostLogger = {
    info: (fields, message) => logs.push({ level: "info", fields, message }),
    warn: (fields, message) => logs.push({ level: "warn", fields, message }),
    error: (fields, message) => logs.push({ level: "error", fields, message }),
  };
  const registry = new RegistryDouble();
  const endpoint = createMcpEndpoint({ registry, logger, limits: options.limits });
  const pair = options.tls === true ? await selfSignedPair() : undefined;
  const route: Parameters<typeof createHttpServer>[1] = (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    void endpoint.handler(req, res);
  };
  const server: Server = pair === undefined ? createHttpServer(route) : createHttpsServer(pair, route);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const base = `${pair === undefined ? "http" : "https"}://127.0.0.1:${port}`;
  return {
    base,
    url: `${base}/mcp`,
    ca: pair?.cert,
    server,
    endpoint,
    registry,
    logs,
    async close() {
      registry.releaseAll();
      await endpoint.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The SDK's own client over Streamable HTTP, presenting the key as an MCP client is configured to. */
export async function connectClient(url: string, secret: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${secret}` } },
  });
  const client = new Client({ name: "mcp-endpoint-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** A raw JSON-RPC POST, for what the SDK client would never send (or to see the HTTP answer itself). */
export function rpc(
  h: Harness,
  secret: string | null,
  message: unknown,
  extra: Partial<SendOptions> & { headers?: Record<string, string | string[]> } = {},
): Promise<Reply> {
  return send({
    url: h.base,
    path: "/mcp",
    ca: h.ca,
    json: message,
    ...extra,
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(secret === null ? {} : { authorization: `Bearer ${secret}` }),
      ...(extra.headers ?? {}),
    },
  });
}

let nextId = 1;
export function callMessage(name: string, args: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name, arguments: args } };
}

export function listMessage(): Record<string, unknown> {
  return { jsonrpc: "2.0", id: nextId++, method: "tools/list", params: {} };
}

/** Makes the server's sockets report another peer address, as a connection from the network would. */
export function presentPeerAs(h: Harness, address: string): () => void {
  const event = h.ca === undefined ? "connection" : "secureConnection";
  const seam = (socket: Socket) =>
    Object.defineProperty(socket, "remoteAddress", { value: address, configurable: true });
  h.server.prependListener(event, seam);
  return () => h.server.off(event, seam);
}

/** The request log lines of /mcp. */
export function requestLines(h: Harness): Array<Record<string, unknown>> {
  return h.logs
    .filter((line) => line.fields.route === "/mcp" && "status" in line.fields)
    .map((line) => line.fields);
}

/** Resolves when the signal aborts (the mocha timeout is the bound, never a wall-clock assertion). */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

export function textOf(result: unknown): string {
  const content = ((result as { content?: unknown }).content ?? []) as Array<{
    type?: string;
    text?: string;
  }>;
  return content.map((item) => item.text ?? "").join("");
}
