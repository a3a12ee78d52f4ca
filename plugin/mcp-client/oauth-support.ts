/**
 * Shared pieces of the OAuth client: turning SDK failures into owner-readable MethodErrors, and
 * converting between this package's stored shapes and the SDK's wire shapes.
 */
import { OAuthError, ServerError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import {
  type AuthorizationServerMetadata,
  type OAuthClientInformationMixed,
  OAuthMetadataSchema,
  type OAuthTokens,
  OpenIdProviderDiscoveryMetadataSchema,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { type MethodError, methodError } from "../errors.js";
import { type Deadline, type ObservedFetch, networkProblemOf } from "./observed-fetch.js";
import type { StoredClient, StoredTokens } from "./types.js";

/** Default bound on one OAuth step (discovery + registration, or one token request). */
export const DEFAULT_OAUTH_TIMEOUT_MS = 30_000;

/** RFC 6749 §4.1.2.1 authorization-endpoint error codes: the only ones a callback message may name. */
export const AUTHORIZATION_ERROR_CODES: ReadonlySet<string> = new Set([
  "invalid_request",
  "unauthorized_client",
  "access_denied",
  "unsupported_response_type",
  "invalid_scope",
  "server_error",
  "temporarily_unavailable",
]);

/** Registered codes a token or registration endpoint may answer with (RFC 6749 §5.2, RFC 7591, RFC 8707). */
const ENDPOINT_ERROR_CODES: ReadonlySet<string> = new Set([
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "invalid_target",
  "invalid_redirect_uri",
  "invalid_client_metadata",
  "temporarily_unavailable",
  "access_denied",
]);

/** A MethodError for a refresh that can never succeed again: the caller must authorize afresh. */
export type DeadChainError = MethodError & { dead: true };

export function deadChain(): DeadChainError {
  return Object.assign(
    methodError(
      "OAUTH_INVALID",
      "The authorization has expired or was revoked; authorize this server again.",
    ),
    { dead: true as const },
  );
}

/** How callers recognise a dead chain: by code and flag, never instanceof (errors cross threads as data). */
export function isDeadChain(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, dead } = error as { code?: unknown; dead?: unknown };
  return code === "OAUTH_INVALID" && dead === true;
}

export function isMethodError(error: unknown): error is MethodError {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "MethodError";
}

/** The registered OAuth error code of an SDK OAuthError, or null (unregistered codes and non-OAuth bodies). */
export function oauthErrorCode(error: unknown): string | null {
  if (!(error instanceof OAuthError) || error instanceof ServerError) return null;
  const code = error.errorCode;
  return ENDPOINT_ERROR_CODES.has(code) ? code : null;
}

/**
 * Maps anything an OAuth step threw to a MethodError with fixed text. `what` names the step for the
 * owner, e.g. "The token request". Raw SDK text (which can quote response bodies) is never used.
 */
export function oauthFailure(
  error: unknown,
  what: string,
  context: { observed: ObservedFetch; deadline: Deadline },
): MethodError {
  if (isMethodError(error)) return error;
  if (context.deadline.expired()) {
    return methodError(
      "CONNECTION_FAILED",
      `${what} timed out: the authorization server did not answer in time.`,
    );
  }
  const problem = networkProblemOf(error) ?? context.observed.seen.networkProblem;
  if (problem) {
    const detail =
      problem.kind === "tls" ? "its TLS certificate could not be verified" : "it could not be reached";
    return methodError("CONNECTION_FAILED", `${what} failed: ${detail}.`);
  }
  const code = oauthErrorCode(error);
  if (code) return methodError("OAUTH_INVALID", `${what} was refused by the authorization server (${code}).`);
  if (error instanceof ServerError) {
    const status = context.observed.seen.lastStatus;
    const suffix = status !== null && status >= 400 ? ` (HTTP ${status})` : "";
    return methodError("OAUTH_INVALID", `${what} failed at the authorization server${suffix}.`);
  }
  if (error instanceof Error && error.name === "ZodError") {
    return methodError("OAUTH_INVALID", `${what} got a malformed answer from the authorization server.`);
  }
  return methodError("OAUTH_INVALID", `${what} failed.`);
}

/** Stored RFC 8414 metadata back in the SDK's type; refuses a document that no longer parses. */
export function parseServerMetadata(metadata: Record<string, unknown>): AuthorizationServerMetadata {
  const oauth = OAuthMetadataSchema.safeParse(metadata);
  if (oauth.success) return oauth.data;
  const oidc = OpenIdProviderDiscoveryMetadataSchema.safeParse(metadata);
  if (oidc.success) return oidc.data;
  throw methodError(
    "OAUTH_INVALID",
    "The stored authorization server metadata is unusable; authorize again.",
  );
}

export function toClientInformation(client: StoredClient): OAuthClientInformationMixed {
  return {
    ...client.raw,
    client_id: client.clientId,
    ...(client.clientSecret !== null ? { client_secret: client.clientSecret } : {}),
  } as OAuthClientInformationMixed;
}

/** A registration response as stored: id and secret apart, the rest (issued-at, expiry, methods) raw. */
export function toStoredClient(info: OAuthClientInformationMixed): StoredClient {
  const {
    client_id,
    client_secret,
    issuer: _issuer,
    ...raw
  } = info as OAuthClientInformationMixed & {
    issuer?: unknown;
  };
  return { clientId: client_id, clientSecret: client_secret ?? null, raw };
}

export function toStoredTokens(
  tokens: OAuthTokens,
  {
    now,
    fallbackRefreshToken,
    fallbackScope,
  }: { now: () => number; fallbackRefreshToken: string | null; fallbackScope: string | null },
): StoredTokens {
  if (tokens.access_token === "") {
    throw methodError("OAUTH_INVALID", "The authorization server issued an empty access token.");
  }
  if (tokens.token_type.toLowerCase() !== "bearer") {
    throw methodError(
      "OAUTH_INVALID",
      "The authorization server issued a token type this gateway cannot use.",
    );
  }
  const expiresIn = tokens.expires_in;
  return {
    accessToken: tokens.access_token,
    tokenType: "Bearer",
    refreshToken: tokens.refresh_token || fallbackRefreshToken,
    expiresAt: expiresIn !== undefined && Number.isFinite(expiresIn) ? now() + expiresIn * 1000 : null,
    scope: tokens.scope ?? fallbackScope,
  };
}
