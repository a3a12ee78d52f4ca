import type { ServerResponse } from "node:http";
import type { ErrorData } from "../plugin/errors.js";

export type Frame = (
  | { status: 200; body: { result: unknown } }
  | { status: number; body: { error: ErrorData } }
) & {
  /** The body as sent, for frames made once and answered many times (see fixedFrame). */
  readonly serialized?: Serialized;
};

interface Serialized {
  payload: string;
  headers: readonly string[];
}

export function resultFrame(result: unknown): Frame {
  return { status: 200, body: { result } };
}

export function errorFrame(status: number, code: ErrorData["code"], message: string): Frame {
  return { status, body: { error: { code, message } } };
}

/**
 * A 200 frame from a result's JSON text (as a worker sends it): sent as is, parsed only if someone reads
 * `body` (the gateway-method path does; the route does not).
 */
export function jsonResultFrame(json: string): Frame {
  return new JsonResultFrame(json);
}

/** A class rather than an object literal with a getter: defining an accessor per frame is slow in V8. */
class JsonResultFrame {
  readonly status = 200;
  readonly serialized: Serialized;
  #body: { result: unknown } | undefined;

  constructor(private readonly json: string) {
    const payload = `{"result":${json}}`;
    this.serialized = { payload, headers: headersFor(payload) };
  }

  get body(): { result: unknown } {
    this.#body ??= { result: JSON.parse(this.json) as unknown };
    return this.#body;
  }
}

/** A frame answered as is to many requests (the route's refusals): serialized once, frozen. */
export function fixedFrame(status: number, code: ErrorData["code"], message: string): Frame {
  const frame = errorFrame(status, code, message);
  const { payload, headers } = serialize(frame.body);
  return Object.freeze({ ...frame, serialized: Object.freeze({ payload, headers: Object.freeze(headers) }) });
}

function serialize(body: Frame["body"]): Serialized {
  const payload = JSON.stringify(body);
  return { payload, headers: headersFor(payload) };
}

/** A flat name/value list: the cheapest form writeHead takes, which matters on a busy route. */
function headersFor(payload: string): readonly string[] {
  return [
    "Content-Type",
    "application/json; charset=utf-8",
    "Content-Length",
    String(Buffer.byteLength(payload)),
    "Cache-Control",
    "no-store",
    "X-Content-Type-Options",
    "nosniff",
  ];
}

/**
 * The one function that writes a response of the owner route, whatever its status: a JSON body,
 * `Cache-Control: no-store`, and no CORS header ever. `close` asks the client to drop the connection
 * (used when the request body was not read to its end); `allow` is the Allow header of a 405.
 */
export function writeFrame(res: ServerResponse, frame: Frame, close = false, allow?: string): void {
  if (res.headersSent || res.writableEnded) return;
  const { payload, headers } = frame.serialized ?? serialize(frame.body);
  let list = headers as string[];
  if (close || allow !== undefined) {
    list = [...headers];
    if (allow !== undefined) list.push("Allow", allow);
    if (close) list.push("Connection", "close");
  }
  res.writeHead(frame.status, list);
  res.end(payload);
}
