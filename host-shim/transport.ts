import type { Socket } from "node:net";
import { isIPv4 } from "node:net";
import type { TLSSocket } from "node:tls";

/**
 * The spec's transport rule: a TLS socket, or a loopback socket peer. Only the socket counts;
 * `Forwarded` and `X-Forwarded-*` are never read.
 */
export function isSecureTransport(socket: Socket): boolean {
  if ((socket as TLSSocket).encrypted === true) return true;
  return isLoopbackAddress(socket.remoteAddress);
}

/** 127.0.0.0/8, ::1, and IPv4-mapped ::ffff:127.0.0.0/104 (what a dual-stack `::` listener reports). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  // The addresses a loopback peer almost always has, answered without a parse (checked on every request).
  if (address === "127.0.0.1" || address === "::1" || address === "::ffff:127.0.0.1") return true;
  const lower = address.toLowerCase();
  if (lower === "::1") return true;
  const v4 = lower.startsWith("::ffff:") ? lower.slice("::ffff:".length) : lower;
  return isIPv4(v4) && v4.startsWith("127.");
}
