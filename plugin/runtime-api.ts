import type { ErrorData } from "./errors.js";

/**
 * The narrow API a profile runtime offers the workers, over comlink. Every call resolves to an Outcome:
 * errors cross the thread as data, because an Error loses its class and its `code` on the way.
 */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: ErrorData };

export interface RuntimeDescription {
  /** null for the gateway root. */
  profile: string | null;
  /** The state directory is open, locked and writable: setup can persist. */
  storeWritable: boolean;
  setupTimeoutSeconds: number;
  oauthCallbackModes: string[];
  oauthRedirectUris: string[];
}

export type ConnectionStatus = "connected" | "connecting" | "needs_auth" | "failed" | "disabled";

export interface ConnectionView {
  name: string;
  source: "catalog" | "custom" | "chat";
  transport: "streamable-http" | "sse" | "stdio";
  enabled: boolean;
  permissions: unknown;
  status: ConnectionStatus;
  statusReason: string | null;
}

export interface CatalogEntryView {
  id: string;
  title: string;
  configured: boolean;
}

export interface ConnectionsView {
  connections: ConnectionView[];
  catalog: CatalogEntryView[];
}

export interface RuntimeApi {
  describe(): Promise<Outcome<RuntimeDescription>>;
  listConnections(): Promise<Outcome<ConnectionsView>>;
}
