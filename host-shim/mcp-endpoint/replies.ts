import type { ServerResponse } from "node:http";

/** A JSON-RPC request id, as the client sent it (echoed in an error that answers that request). */
export type RpcId = string | number;

/**
 * An answer given before (or instead of) the MCP server: an HTTP status with a JSON-RPC error body, so
 * MCP clients can parse it, and a string `data.code` from the project's error vocabulary for tools.
 */
export interface Refusal {
  status: number;
  code: string;
  message: string;
  /** JSON-RPC error code: -32000 (transport-level, the SDK's choice), -32600, -32700. */
  rpcCode: number;
  id?: RpcId | null;
  headers?: Record<string, string>;
}

export function refusal(
  status: number,
  code: string,
  message: string,
  extra: Partial<Pick<Refusal, "rpcCode" | "id" | "headers">> = {},
): Refusal {
  return {
    status,
    code,
    message,
    rpcCode: extra.rpcCode ?? -32000,
    id: extra.id ?? null,
    headers: extra.headers,
  };
}

/**
 * Writes a refusal: a JSON body, `Cache-Control: no-store`, no CORS header ever (no browser may call
 * /mcp, so nothing here ever grants one). `close` asks the client to drop a connection whose request
 * body was not read to its end.
 */
export function writeRefusal(res: ServerResponse, answer: Refusal, options: { close?: boolean } = {}): void {
  if (res.headersSent || res.writableEnded) return;
  const payload = JSON.stringify({
    jsonrpc: "2.0",
    id: answer.id ?? null,
    error: { code: answer.rpcCode, message: answer.message, data: { code: answer.code } },
  });
  res.statusCode = answer.status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(payload));
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("X-Content-Type-Options", "nosniff");
  for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
  if (options.close === true) res.setHeader("Connection", "close");
  res.end(payload);
}
