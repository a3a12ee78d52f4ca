import { timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/**
 * The token the request presents: the gateway's extractor header first, then `Authorization: Bearer`.
 * When the extractor header is present it alone counts, as the spec gives it precedence. Query strings
 * are never read.
 */
export function presentedToken(headers: IncomingHttpHeaders, tokenHeader: string): string | null {
  const extracted = headers[tokenHeader];
  if (extracted !== undefined) return Array.isArray(extracted) ? null : extracted.trim();
  const authorization = headers.authorization;
  if (authorization === undefined) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return match?.[1] ?? null;
}

let configured: { token: string; bytes: Buffer; scratch: Buffer } | undefined;

/** The configured token's bytes, encoded again only when the token changes (it may be rotated). */
function configuredBytes(token: string): { bytes: Buffer; scratch: Buffer } {
  if (configured?.token !== token) {
    const bytes = Buffer.from(token, "utf8");
    configured = { token, bytes, scratch: Buffer.alloc(bytes.length) };
  }
  return configured;
}

/**
 * Constant-time in the configured token's content: the presented bytes are copied into a buffer of the
 * configured length (cut or zero-padded) and compared whole, and only then are the lengths compared. The
 * work depends on the presented token's length, which the client already knows, never on the secret.
 */
export function tokenMatches(presented: string | null, token: string): boolean {
  if (presented === null || token.length === 0 || presented.length === 0) return false;
  const { bytes, scratch } = configuredBytes(token);
  scratch.fill(0);
  const written = scratch.write(presented, "utf8");
  const sameContent = timingSafeEqual(scratch, bytes);
  return sameContent && written === bytes.length && Buffer.byteLength(presented, "utf8") === bytes.length;
}
