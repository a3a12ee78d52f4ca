import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

export const MAX_BODY_BYTES = 256 * 1024;

/** How long a connection that must close may keep draining a client's unwanted upload. */
export const LINGER_MS = 5_000;

export type BodyOutcome = { kind: "complete"; body: Buffer } | { kind: "too_large" } | { kind: "aborted" };

/**
 * Reads the request body as a stream and stops at `limit` bytes, whether the size was announced in
 * Content-Length or the body is chunked. Nothing past the limit is buffered.
 */
export function readBoundedBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyOutcome> {
  return new Promise((resolve) => onBoundedBody(req, limit, resolve));
}

/**
 * readBoundedBody with a callback, called exactly once, for the owner route: a promise per request is
 * another allocation and another turn of the microtask queue on a busy route.
 */
export function onBoundedBody(
  req: IncomingMessage,
  limit: number,
  done: (outcome: BodyOutcome) => void,
): void {
  const announced = req.headers["content-length"];
  if (announced !== undefined && Number(announced) > limit) {
    done({ kind: "too_large" });
    return;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  let settled = false;
  const settle = (outcome: BodyOutcome) => {
    if (settled) return;
    settled = true;
    req.off("data", onData);
    req.off("end", onEnd);
    req.off("close", onClose);
    done(outcome);
  };
  const onData = (chunk: Buffer) => {
    total += chunk.length;
    if (total > limit) {
      chunks.length = 0;
      settle({ kind: "too_large" });
      return;
    }
    chunks.push(chunk);
  };
  const onEnd = () => settle({ kind: "complete", body: Buffer.concat(chunks, total) });
  // No 'error' listener: an IncomingMessage emits 'error' only to listeners it has, and an upload cut
  // short always ends in 'close' without 'end'.
  const onClose = () => {
    if (!req.complete) settle({ kind: "aborted" });
  };
  req.on("data", onData);
  req.on("end", onEnd);
  req.on("close", onClose);
}

/**
 * True when an unread request body must not be drained on a kept-alive connection: it is larger than
 * the limit, or chunked (unbounded). A small announced body is left to Node, which discards it and keeps
 * the connection for the next request.
 */
export function mustCloseForUnreadBody(req: IncomingMessage, limit = MAX_BODY_BYTES): boolean {
  if (req.complete) return false;
  if (req.headers["transfer-encoding"] !== undefined) return true;
  const length = req.headers["content-length"];
  return length !== undefined && !(Number(length) <= limit);
}

/**
 * Prepares a connection whose request body will not be read to its end. The response is sent with
 * `Connection: close`; the rest of the upload is discarded as it arrives (never buffered), and the
 * socket is closed by a lingering close: FIN after the response, keep draining, destroy when the client
 * closes or after LINGER_MS. Node's default after such a response is to destroy the socket at once;
 * with unread bytes in its receive buffer the kernel then sends RST, which can erase the response from
 * a client that is still sending before it reads it.
 */
export function drainAndLingerClose(req: IncomingMessage): void {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  req.removeAllListeners("data");
  req.resume();
  socket.destroySoon = () => {
    if (socket.destroyed) return;
    socket.end();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  };
}
