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
  res.statusCode = frame.status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(payload));
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("X-Content-Type-Options", "nosniff");
  if (options.allow !== undefined) res.setHeader("Allow", options.allow);
  if (options.close === true) res.setHeader("Connection", "close");
  res.end(payload);
}
