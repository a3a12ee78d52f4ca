import type { ServerResponse } from "node:http";
import type { ErrorData } from "../plugin/errors.js";

export type Frame =
  | { status: 200; body: { result: unknown } }
  | { status: number; body: { error: ErrorData } };

export function resultFrame(result: unknown): Frame {
  return { status: 200, body: { result } };
}

export function errorFrame(status: number, code: ErrorData["code"], message: string): Frame {
  return { status, body: { error: { code, message } } };
}

/**
 * The one function that writes a response of the owner route, whatever its status: a JSON body,
 * `Cache-Control: no-store`, and no CORS header ever. `close` asks the client to drop the connection
 * (used when the request body was not read to its end).
 */
export function writeFrame(
  res: ServerResponse,
  frame: Frame,
  options: { close?: boolean; allow?: string } = {},
): void {
  if (res.headersSent || res.writableEnded) return;
  const payload = JSON.stringify(frame.body);
  // A flat name/value list: the cheapest form writeHead takes, which matters on a busy route.
  const headers = [
    "Content-Type",
    "application/json; charset=utf-8",
    "Content-Length",
    String(Buffer.byteLength(payload)),
    "Cache-Control",
    "no-store",
    "X-Content-Type-Options",
    "nosniff",
  ];
  if (options.allow !== undefined) headers.push("Allow", options.allow);
  if (options.close === true) headers.push("Connection", "close");
  res.writeHead(frame.status, headers);
  res.end(payload);
}
