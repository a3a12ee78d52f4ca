import type { ErrorData } from "./errors.js";
import type { AuthorizationTransaction, Discovery, ServerTarget, StoredClient } from "./mcp-client/types.js";
import type { Draft, Intent, OperationRecord, OperationSnapshot } from "./setup/operation.js";
import type { PermissionsInput } from "./setup/params.js";

/**
 * The narrow API a profile runtime offers the workers, over comlink. Every call resolves to an Outcome:
 * errors cross the thread as data, because an Error loses its class and its `code` on the way.
 */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: ErrorData; expected: boolean };

export interface RuntimeDescription {
  /** null for the gateway root. */
  profile: string | null;
  /** The state directory is open, locked and writable: setup can persist. */
  storeWritable: boolean;
  /** A live connection manager runs: confirmed connections reach the agent. */
  liveConnections: boolean;
  /** The /mcp endpoint is served for this runtime's keys. */
  accessEndpoint: boolean;
  setupTimeoutSeconds: number;
  oauthCallbackModes: string[];
  oauthRedirectUris: string[];
  now: number;
}

export interface CatalogField {
  name: string;
  label: string;
  header?: string | undefined;
  prefix?: string | undefined;
}

export interface CatalogEntryView {
  id: string;
  title: string;
  description: string | null;
  transport: "http" | "stdio";
  fields: CatalogField[];
  oauthClient: boolean;
  configured: boolean;
}

export interface ConnectionView {
  name: string;
  source: "catalog" | "custom";
  catalogId: string | null;
  server: { url: string } | { command: string; args: string[] };
  enabled: boolean;
  oauth: boolean;
  permissions: PermissionsInput;
  status: "connected" | "connecting" | "needs_auth" | "failed" | "disabled";
  statusReason: string | null;
  tools: Array<{ name: string; exposed: boolean; awaitingReview: boolean }>;
  updatedAt: string;
}

export interface ConnectionsView {
  connections: ConnectionView[];
  catalog: CatalogEntryView[];
}

export interface BeginInput {
  requestId: string;
  name: string;
  intent: Exclude<Intent, "action">;
  paramsForDigest: string;
  draft: Draft;
  redirectUri: string | null;
  sessionKey: string | null;
  secrets: { env: Record<string, string>; headers: Record<string, string> };
}

/** What a setup step needs: the operation, the server with its credentials, and any OAuth state. */
export interface StepInput {
  operation: OperationRecord;
  target: ServerTarget;
  preRegisteredClient: StoredClient | null;
  /** Tokens to reach the server with: the operation's own after a callback, or the connection's. */
  accessToken: string | null;
  /** The binding and client to reuse when reauthorizing. */
  knownClient: { client: StoredClient; authorizationServerUrl: string } | null;
  transaction: AuthorizationTransaction | null;
  /**
   * For a permission review of a connected connection: what its live session lists now. The review reads
   * it instead of reconnecting, so it never spends the connection's tokens or refresh chain.
   */
  liveDiscovery: Discovery | null;
}

export type CallbackClaim =
  | { kind: "proceed"; transaction: AuthorizationTransaction }
  | { kind: "duplicate" };

export interface AccessCreateInput {
  id: string;
  label: string;
  sessionKey: string;
  tools: string[];
  tokenDigest: string;
  ttlSeconds: number;
}

export interface AccessView {
  id: string;
  label: string;
  sessionKey: string;
  tools: string[];
  createdAt: string;
  expiresAt: string;
  status: "active" | "expired" | "revoked" | "unavailable";
}

export interface AccessCatalog {
  conversations: Array<{ sessionKey: string; title: string }>;
  tools: Array<{
    name: string;
    description: string;
    source: "conversation" | "connection";
    connection: string | null;
  }>;
}

export interface RuntimeApi {
  accessCatalog(sessionKey: string | undefined): Promise<Outcome<AccessCatalog>>;
  accessList(): Promise<
    Outcome<{ credentials: AccessView[]; endpointPath: string; localEndpoint: string | null }>
  >;
  accessCreate(input: AccessCreateInput): Promise<Outcome<AccessView>>;
  accessRevoke(id: string): Promise<Outcome<AccessView>>;
  describe(): Promise<Outcome<RuntimeDescription>>;
  listConnections(): Promise<Outcome<ConnectionsView>>;
  catalogEntry(
    id: string,
  ): Promise<Outcome<CatalogEntryView & { server: { url: string } | { command: string; args: string[] } }>>;
  begin(input: BeginInput): Promise<Outcome<OperationSnapshot>>;
  operation(id: string): Promise<Outcome<OperationSnapshot>>;
  operations(filter: { sessionKey?: string | undefined }): Promise<Outcome<OperationSnapshot[]>>;
  stepInput(id: string): Promise<Outcome<StepInput>>;
  toReview(id: string, discovery: Discovery): Promise<Outcome<OperationSnapshot>>;
  toAwaiting(id: string, transaction: AuthorizationTransaction): Promise<Outcome<OperationSnapshot>>;
  fail(id: string, error: ErrorData): Promise<Outcome<OperationSnapshot>>;
  claimCallback(id: string, callbackForDigest: string): Promise<Outcome<CallbackClaim>>;
  afterExchange(
    id: string,
    oauth: { transaction: AuthorizationTransaction; tokens: import("./mcp-client/types.js").StoredTokens },
  ): Promise<Outcome<OperationSnapshot>>;
  confirm(
    id: string,
    decision: PermissionsInput,
    approved: Record<string, string>,
  ): Promise<Outcome<OperationSnapshot>>;
  cancel(id: string): Promise<Outcome<OperationSnapshot>>;
  cancelRequest(
    name: string,
    requestId: string,
  ): Promise<Outcome<{ cancelled: true; operation: OperationSnapshot | null }>>;
  action(input: {
    name: string;
    requestId: string;
    action: "enable" | "disable" | "retry" | "remove";
  }): Promise<Outcome<OperationSnapshot>>;
}
