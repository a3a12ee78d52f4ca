import { isIP } from "node:net";

/**
 * The shared host/origin check, for browsers: an http(s) Origin must name the same host as Host, and that
 * host must be one this gateway answers to. A DNS-rebound name passes the same-host test but not the second.
 * No Origin, or a non-web one (`app:`, `file:`, `null`), is not a browser page of another site and passes.
 */
export function passesOriginCheck(
  originHeader: string | undefined,
  hostHeader: string | undefined,
  allowedHosts: ReadonlySet<string>,
): boolean {
  if (originHeader === undefined) return true;
  let origin: URL;
  try {
    origin = new URL(originHeader);
  } catch {
    return !/^https?:/i.test(originHeader.trim());
  }
  if (origin.protocol !== "http:" && origin.protocol !== "https:") return true;
  const host = hostNameOf(hostHeader);
  if (host === null) return false;
  if (normalizeHostName(origin.hostname) !== host) return false;
  return isLoopbackHostName(host) || allowedHosts.has(host);
}

/**
 * `localhost` or a dotted 127.x.y.z in canonical form, with an optional port: names the URL parser gives
 * back unchanged (but for case), so the common loopback Host needs no URL object.
 */
const CANONICAL_LOOPBACK = /^(localhost|127(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})(?::(\d{1,5}))?$/i;

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), lower case; null when malformed. */
export function hostNameOf(hostHeader: string | undefined): string | null {
  if (hostHeader === undefined || hostHeader.length === 0 || hostHeader.length > 1024) return null;
  const loopback = CANONICAL_LOOPBACK.exec(hostHeader);
  if (loopback !== null && Number(loopback[2] ?? 0) <= 65535) return (loopback[1] ?? "").toLowerCase();
  return hostNameThroughUrl(hostHeader);
}

/** hostNameOf for any header, through the URL parser (exported so a test can hold the fast path to it). */
export function hostNameThroughUrl(hostHeader: string): string | null {
  if (hostHeader.length === 0 || hostHeader.length > 1024) return null;
  try {
    const url = new URL(`http://${hostHeader}`);
    if (url.username !== "" || url.password !== "" || url.pathname !== "/" || url.search !== "") return null;
    return normalizeHostName(url.hostname);
  } catch {
    return null;
  }
}

export function normalizeHostName(name: string): string {
  const lower = name.toLowerCase().replace(/\.$/, "");
  return lower.startsWith("[") && lower.endsWith("]") ? lower.slice(1, -1) : lower;
}

export function isLoopbackHostName(name: string): boolean {
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (name === "::1") return true;
  if (name.startsWith("::ffff:")) return isLoopbackHostName(mappedToDotted(name.slice("::ffff:".length)));
  return isIP(name) === 4 && name.startsWith("127.");
}

/** The URL parser writes [::ffff:127.0.0.1] as [::ffff:7f00:1]; turn the hex tail back into dotted IPv4. */
function mappedToDotted(tail: string): string {
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(tail);
  if (hex === null) return tail;
  const high = Number.parseInt(hex[1] ?? "0", 16);
  const low = Number.parseInt(hex[2] ?? "0", 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}
