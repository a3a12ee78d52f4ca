/**
 * Token-endpoint requests through the SDK: exchanging an authorization code (with PKCE verifier and
 * RFC 8707 resource) and refreshing. A refresh answered `invalid_grant` is a dead chain: OAUTH_INVALID
 * with `dead: true`, so callers know to authorize afresh rather than retry.
 */
import { exchangeAuthorization, refreshAuthorization } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import {
  DEFAULT_OAUTH_TIMEOUT_MS,
  deadChain,
  oauthErrorCode,
  oauthFailure,
  parseServerMetadata,
  toClientInformation,
  toStoredTokens,
} from "./oauth-support.js";
import { type FetchFn, observeFetch, startDeadline } from "./observed-fetch.js";
import type { AuthorizationTransaction, OAuthServerBinding, StoredClient, StoredTokens } from "./types.js";

export interface TokenRequestOptions {
  fetch?: FetchFn;
  /** Clock for `expiresAt` (epoch ms). */
  now: () => number;
  /** Bound on the token request. Default 30 s. */
  timeoutMs?: number;
}

export async function exchangeCode(
  tx: AuthorizationTransaction,
  code: string,
  options: TokenRequestOptions,
): Promise<StoredTokens> {
  const metadata = parseServerMetadata(tx.binding.metadata);
  const tokens = await tokenRequest("The authorization code exchange", options, (fetchFn) =>
    exchangeAuthorization(tx.binding.authorizationServerUrl, {
      metadata,
      clientInformation: toClientInformation(tx.client),
      authorizationCode: code,
      codeVerifier: tx.codeVerifier,
      redirectUri: tx.redirectUri,
      resource: tx.binding.resource,
      fetchFn,
    }),
  );
  return toStoredTokens(tokens, {
    now: options.now,
    fallbackRefreshToken: null,
    fallbackScope: tx.binding.scope,
  });
}

export async function refreshTokens(
  binding: OAuthServerBinding,
  client: StoredClient,
  refreshToken: string,
  options: TokenRequestOptions,
): Promise<StoredTokens> {
  const metadata = parseServerMetadata(binding.metadata);
  const tokens = await tokenRequest(
    "Refreshing the access token",
    options,
    (fetchFn) =>
      refreshAuthorization(binding.authorizationServerUrl, {
        metadata,
        clientInformation: toClientInformation(client),
        refreshToken,
        resource: binding.resource,
        fetchFn,
      }),
    (error) => oauthErrorCode(error) === "invalid_grant",
  );
  // The SDK keeps the old refresh token when the server does not rotate; so does the fallback here.
  return toStoredTokens(tokens, {
    now: options.now,
    fallbackRefreshToken: refreshToken,
    fallbackScope: binding.scope,
  });
}

async function tokenRequest(
  what: string,
  options: TokenRequestOptions,
  request: (fetchFn: FetchFn) => Promise<OAuthTokens>,
  isDead: (error: unknown) => boolean = () => false,
): Promise<OAuthTokens> {
  const deadline = startDeadline(options.timeoutMs ?? DEFAULT_OAUTH_TIMEOUT_MS);
  const observed = observeFetch(options.fetch ?? globalThis.fetch, deadline.signal);
  try {
    return await request(observed.fetch);
  } catch (error) {
    if (isDead(error)) throw deadChain();
    throw oauthFailure(error, what, { observed, deadline });
  } finally {
    deadline.clear();
  }
}
