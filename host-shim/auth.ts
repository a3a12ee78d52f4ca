import { createHash, timingSafeEqual } from "node:crypto";
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

let configuredCache: { token: string; digest: Buffer } | undefined;

/** The configured token's digest, hashed again only when the token changes (it may be rotated). */
function configuredDigest(configured: string): Buffer {
  if (configuredCache?.token !== configured) {
    configuredCache = { token: configured, digest: createHash("sha256").update(configured, "utf8").digest() };
  }
  return configuredCache.digest;
}

/** Constant-time in the token's content and length: both sides are hashed to a fixed size first. */
export function tokenMatches(presented: string | null, configured: string): boolean {
  if (presented === null || configured.length === 0 || presented.length === 0) return false;
  const a = createHash("sha256").update(presented, "utf8").digest();
  return timingSafeEqual(a, configuredDigest(configured));
}
