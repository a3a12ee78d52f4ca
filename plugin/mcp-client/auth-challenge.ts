/**
 * What a 401 from an MCP server means for the owner: an OAuth sign-in this gateway can start
 * (auth_required), or a refusal with nothing to sign in to (auth_refused).
 */
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { type Failure, statusFailure, timeoutFailure } from "./failure.js";
import { type Deadline, type FetchFn, withinDeadline } from "./observed-fetch.js";
import type { DiscoveryOutcome } from "./types.js";

type AuthRequired = Extract<DiscoveryOutcome, { kind: "auth_required" }>;

/** The RFC 9728 `resource_metadata` URL of a `WWW-Authenticate: Bearer` challenge, if it names a usable one. */
export function resourceMetadataUrlOf(challenge: string | null): string | null {
  if (!challenge) return null;
  let params: ReturnType<typeof extractWWWAuthenticateParams>;
  try {
    params = extractWWWAuthenticateParams(new Response(null, { headers: { "www-authenticate": challenge } }));
  } catch {
    return null;
  }
  const url = params.resourceMetadataUrl;
  return url && (url.protocol === "https:" || url.protocol === "http:") ? url.href : null;
}

/**
 * A 401 naming its metadata is auth_required at once. Otherwise the well-known RFC 9728 document, then
 * (the legacy MCP rule) RFC 8414 metadata at the server's origin, decide whether there is anything to
 * sign in to.
 */
export async function authChallengeOutcome(
  challenge: string | null,
  serverUrl: URL,
  fetchFn: FetchFn,
  deadline: Deadline,
  timeoutMs: number,
): Promise<AuthRequired | Failure> {
  const named = resourceMetadataUrlOf(challenge);
  if (named) return { kind: "auth_required", resourceMetadataUrl: named };
  try {
    await withinDeadline(discoverOAuthProtectedResourceMetadata(serverUrl, undefined, fetchFn), deadline);
    return { kind: "auth_required", resourceMetadataUrl: null };
  } catch {
    if (deadline.expired()) return timeoutFailure(timeoutMs);
  }
  try {
    const origin = new URL("/", serverUrl);
    const metadata = await withinDeadline(discoverAuthorizationServerMetadata(origin, { fetchFn }), deadline);
    if (metadata) return { kind: "auth_required", resourceMetadataUrl: null };
  } catch {
    if (deadline.expired()) return timeoutFailure(timeoutMs);
  }
  return statusFailure(401);
}
