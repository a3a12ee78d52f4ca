/**
 * The OAuth client side of connecting a server: beginning an authorization (RFC 9728 → RFC 8414 →
 * RFC 7591 → PKCE S256 + RFC 8707 resource + state). The callback check and the token requests live in
 * oauth-callback.ts and oauth-tokens.ts and are re-exported here. Built on the SDK's helpers.
 */
import { randomBytes as nodeRandomBytes } from "node:crypto";
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  registerClient,
  startAuthorization,
} from "@modelcontextprotocol/sdk/client/auth.js";
import {
  checkResourceAllowed,
  resourceUrlFromServerUrl,
} from "@modelcontextprotocol/sdk/shared/auth-utils.js";
import type {
  AuthorizationServerMetadata,
  OAuthClientMetadata,
  OAuthProtectedResourceMetadata,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { methodError } from "../errors.js";
import {
  DEFAULT_OAUTH_TIMEOUT_MS,
  oauthFailure,
  toClientInformation,
  toStoredClient,
} from "./oauth-support.js";
import {
  type Deadline,
  type FetchFn,
  type ObservedFetch,
  observeFetch,
  startDeadline,
} from "./observed-fetch.js";
import type { AuthorizationTransaction, OAuthServerBinding, StoredClient } from "./types.js";

export { checkCallback } from "./oauth-callback.js";
export { type DeadChainError, isDeadChain } from "./oauth-support.js";
export { exchangeCode, refreshTokens, type TokenRequestOptions } from "./oauth-tokens.js";

export interface BeginAuthorizationArgs {
  /** The MCP server URL (the protected resource). */
  serverUrl: string;
  /** From the 401's WWW-Authenticate; null → the RFC 9728 well-known locations. */
  resourceMetadataUrl: string | null;
  redirectUri: string;
  preRegistered: StoredClient | null;
  clientName: string;
  /** null/undefined → the protected-resource metadata's scopes_supported. */
  scope?: string | null;
  fetch?: FetchFn;
  randomBytes?: (n: number) => Buffer;
  /** Bound on the whole begin (discovery and registration). Default 30 s. */
  timeoutMs?: number;
}

export async function beginAuthorization(args: BeginAuthorizationArgs): Promise<AuthorizationTransaction> {
  const deadline = startDeadline(args.timeoutMs ?? DEFAULT_OAUTH_TIMEOUT_MS);
  const observed = observeFetch(args.fetch ?? globalThis.fetch, deadline.signal);
  try {
    return await begin(args, observed, deadline);
  } finally {
    deadline.clear();
  }
}

async function begin(args: BeginAuthorizationArgs, observed: ObservedFetch, deadline: Deadline) {
  const context = { observed, deadline };
  let serverUrl: URL;
  try {
    serverUrl = resourceUrlFromServerUrl(args.serverUrl);
  } catch {
    throw methodError("CONNECTION_FAILED", "The server URL is not a valid URL.");
  }

  const resourceMetadata = await protectedResourceMetadata(serverUrl, args.resourceMetadataUrl, context);
  // RFC 8707 indicator: the metadata's `resource` verbatim (the SDK's rule, #1968), checked against the server URL.
  let resource = serverUrl.href;
  if (resourceMetadata) {
    if (
      !checkResourceAllowed({ requestedResource: serverUrl, configuredResource: resourceMetadata.resource })
    ) {
      throw methodError(
        "OAUTH_INVALID",
        "The server's OAuth metadata is for a different resource than this server.",
      );
    }
    resource = resourceMetadata.resource;
  }
  // The legacy MCP rule when there is no RFC 9728 document: the server's origin is the authorization server.
  const authorizationServerUrl = resourceMetadata?.authorization_servers?.[0] ?? new URL("/", serverUrl).href;

  let metadata: AuthorizationServerMetadata | undefined;
  try {
    metadata = await discoverAuthorizationServerMetadata(authorizationServerUrl, { fetchFn: observed.fetch });
  } catch (error) {
    throw oauthFailure(error, "Reading the authorization server's metadata", context);
  }
  if (!metadata) {
    throw methodError("OAUTH_INVALID", "The authorization server publishes no OAuth metadata (RFC 8414).");
  }
  checkServerMetadata(metadata, authorizationServerUrl);

  const scope = args.scope || resourceMetadata?.scopes_supported?.join(" ") || null;
  const client =
    args.preRegistered ?? (await register(args, authorizationServerUrl, metadata, scope, context));
  const state = (args.randomBytes ?? nodeRandomBytes)(32).toString("base64url");

  let started: { authorizationUrl: URL; codeVerifier: string };
  try {
    started = await startAuthorization(authorizationServerUrl, {
      metadata,
      clientInformation: toClientInformation(client),
      redirectUrl: args.redirectUri,
      state,
      resource,
      ...(scope ? { scope } : {}),
    });
  } catch (error) {
    throw oauthFailure(error, "Preparing the authorization request", context);
  }

  const binding: OAuthServerBinding = {
    authorizationServerUrl,
    metadata: { ...metadata },
    resource,
    scope,
  };
  return {
    binding,
    client,
    codeVerifier: started.codeVerifier,
    state,
    redirectUri: args.redirectUri,
    authorizationUrl: started.authorizationUrl.href,
  };
}

async function protectedResourceMetadata(
  serverUrl: URL,
  named: string | null,
  context: { observed: ObservedFetch; deadline: Deadline },
): Promise<OAuthProtectedResourceMetadata | null> {
  let metadataUrl: URL | undefined;
  if (named !== null) {
    try {
      metadataUrl = new URL(named);
    } catch {
      throw methodError("OAUTH_INVALID", "The server named an invalid OAuth metadata URL.");
    }
    if (metadataUrl.protocol !== "https:" && metadataUrl.protocol !== "http:") {
      throw methodError("OAUTH_INVALID", "The server named an invalid OAuth metadata URL.");
    }
  }
  try {
    return await discoverOAuthProtectedResourceMetadata(
      serverUrl,
      metadataUrl ? { resourceMetadataUrl: metadataUrl } : undefined,
      context.observed.fetch,
    );
  } catch (error) {
    const failure = oauthFailure(error, "Reading the server's OAuth metadata", context);
    // The server named its metadata, so it must be there; well-known probing may find nothing (legacy servers).
    if (metadataUrl || failure.code === "CONNECTION_FAILED") throw failure;
    return null;
  }
}

function checkServerMetadata(metadata: AuthorizationServerMetadata, authorizationServerUrl: string): void {
  if (!sameIssuer(metadata.issuer, authorizationServerUrl)) {
    // RFC 8414 §3.3: a document for another issuer is a mix-up, not a typo to tolerate.
    throw methodError("OAUTH_INVALID", "The authorization server's metadata names a different issuer.");
  }
  if (!metadata.response_types_supported.includes("code")) {
    throw methodError(
      "OAUTH_INVALID",
      "The authorization server does not support the authorization code flow.",
    );
  }
  const grants = metadata.grant_types_supported;
  if (grants && !grants.includes("authorization_code")) {
    throw methodError(
      "OAUTH_INVALID",
      "The authorization server does not support the authorization code flow.",
    );
  }
  const methods = metadata.code_challenge_methods_supported;
  if (methods && !methods.includes("S256")) {
    throw methodError("OAUTH_INVALID", "The authorization server does not support PKCE with S256.");
  }
}

/** Identical, or differing only by the trailing "/" that URL serialization adds to an origin. */
function sameIssuer(issuer: string, expected: string): boolean {
  if (issuer === expected) return true;
  return `${issuer}/` === expected || issuer === `${expected}/`;
}

async function register(
  args: BeginAuthorizationArgs,
  authorizationServerUrl: string,
  metadata: AuthorizationServerMetadata,
  scope: string | null,
  context: { observed: ObservedFetch; deadline: Deadline },
): Promise<StoredClient> {
  if (!metadata.registration_endpoint) {
    throw methodError(
      "OAUTH_INVALID",
      "The authorization server does not offer dynamic client registration; a pre-registered client is needed.",
    );
  }
  const clientMetadata: OAuthClientMetadata = {
    client_name: args.clientName,
    redirect_uris: [args.redirectUri],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  try {
    const info = await registerClient(authorizationServerUrl, {
      metadata,
      clientMetadata,
      fetchFn: context.observed.fetch,
      ...(scope ? { scope } : {}),
    });
    return toStoredClient(info);
  } catch (error) {
    throw oauthFailure(error, "Registering this gateway with the authorization server", context);
  }
}
