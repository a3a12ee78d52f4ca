/**
 * Contracts of the MCP client layer, shared by discovery/OAuth (in workers) and the live connection
 * manager (in the profile runtime). Everything here is plain data: it crosses threads.
 */

/** Where a server is and how to reach it. Secret values (env, headers) ride here only in memory. */
export type ServerTarget =
  | { kind: "http"; url: string; headers: Record<string, string> }
  | { kind: "stdio"; command: string; args: string[]; env: Record<string, string> };

export type TransportKind = "streamable-http" | "sse" | "stdio";

export interface DiscoveredTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: Record<string, unknown> | null;
  /** sha256 (hex) of the canonical JSON of {name, description, inputSchema}: what approval is pinned to. */
  hash: string;
}

export interface Discovery {
  transport: TransportKind;
  tools: DiscoveredTool[];
  resources: boolean;
  prompts: boolean;
}

/** Why a server could not be used, in words an owner can act on; never raw exception text. */
export type FailureReason =
  | "unreachable"
  | "tls"
  | "not_found"
  | "not_mcp"
  | "auth_refused"
  | "timeout"
  | "server_error"
  | "spawn_failed";

export type DiscoveryOutcome =
  | { kind: "ok"; discovery: Discovery }
  /** The server wants OAuth (401 with, or without, RFC 9728 metadata). */
  | { kind: "auth_required"; resourceMetadataUrl: string | null }
  | { kind: "failed"; reason: FailureReason; message: string };

/** Tokens as stored (secrets file only). `expiresAt` is epoch ms, computed at receipt. */
export interface StoredTokens {
  accessToken: string;
  tokenType: string;
  refreshToken: string | null;
  expiresAt: number | null;
  scope: string | null;
}

/** The OAuth client this gateway uses at one authorization server (registered or pre-registered). */
export interface StoredClient {
  clientId: string;
  clientSecret: string | null;
  /** The client_id_issued_at / secret expiry etc. as the AS sent them, for the SDK. */
  raw: Record<string, unknown>;
}

/** Everything the token endpoint needs later: the authorization server and the resource. */
export interface OAuthServerBinding {
  authorizationServerUrl: string;
  /** RFC 8414 metadata as fetched (issuer, endpoints, supported methods). */
  metadata: Record<string, unknown>;
  /** RFC 8707 resource indicator: the MCP server's canonical resource URL. */
  resource: string;
  scope: string | null;
}

/** One authorization in flight: single use, dies with its setup operation. Secret: never returned. */
export interface AuthorizationTransaction {
  binding: OAuthServerBinding;
  client: StoredClient;
  codeVerifier: string;
  /** At least 32 random characters; compared in constant time with the callback's. */
  state: string;
  redirectUri: string;
  authorizationUrl: string;
}

export interface OAuthCallback {
  code?: string | undefined;
  error?: string | undefined;
  errorDescription?: string | undefined;
  state: string;
  iss?: string | undefined;
}
