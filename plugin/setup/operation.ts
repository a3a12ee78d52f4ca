import type { ErrorData } from "../errors.js";
import type { Discovery } from "../mcp-client/types.js";
import type { PermissionsInput } from "./params.js";

export const PHASES = [
  "checking",
  "awaiting_authorization",
  "review",
  "committing",
  "complete",
  "failed",
  "cancelled",
  "expired",
] as const;
export type Phase = (typeof PHASES)[number];

const TERMINAL_PHASES: ReadonlySet<Phase> = new Set(["complete", "failed", "cancelled", "expired"]);
export function isTerminal(phase: Phase): boolean {
  return TERMINAL_PHASES.has(phase);
}

export type Intent = "connect" | "reauthorize" | "permissions" | "action";
export type ConnectionAction = "enable" | "disable" | "retry" | "remove";

/** Where a connection's server is; published in the owner-readable config (never a secret value). */
export type ServerLocation = { url: string } | { command: string; args: string[] };

export type Draft =
  | { kind: "catalog"; catalogId: string; envKeys: string[] }
  | { kind: "custom"; server: ServerLocation; envKeys: string[]; headerKeys: string[] }
  | { kind: "existing" }
  | { kind: "action"; action: ConnectionAction };

export type LiveState = "connected" | "connecting" | "needs_auth" | "failed" | "disabled";

export interface RuntimeResult {
  applied: boolean;
  status: LiveState | "removed";
  reason: string | null;
}

/** An operation as the runtime keeps it (state file). Secrets live apart, in the secrets file. */
export interface OperationRecord {
  id: string;
  requestId: string;
  name: string;
  intent: Intent;
  /** Keyed digest of the begin params, for retry safety; keyed so a guessable secret cannot be tested. */
  digest: string;
  draft: Draft;
  redirectUri: string | null;
  sessionKey: string | null;
  phase: Phase;
  createdAt: number;
  expiresAt: number;
  updatedAt: number;
  endedAt: number | null;
  authorizationUrl: string | null;
  discovery: Discovery | null;
  error: ErrorData | null;
  saved: boolean;
  runtime: RuntimeResult | null;
  permissions: PermissionsInput | null;
  callbackDigest: string | null;
}

export interface OperationSnapshot {
  id: string;
  requestId: string;
  name: string;
  intent: Intent;
  phase: Phase;
  sessionKey: string | null;
  createdAt: string;
  expiresAt: string;
  authorizationUrl: string | null;
  tools: Array<{
    name: string;
    description: string;
    inputSchema: Record<string, unknown>;
    annotations: unknown;
  }>;
  capabilities: { resources: boolean; prompts: boolean } | null;
  error: ErrorData | null;
  saved: boolean;
  runtime: RuntimeResult | null;
  permissions: PermissionsInput | null;
}

export function snapshotOf(record: OperationRecord): OperationSnapshot {
  return {
    id: record.id,
    requestId: record.requestId,
    name: record.name,
    intent: record.intent,
    phase: record.phase,
    sessionKey: record.sessionKey,
    createdAt: new Date(record.createdAt).toISOString(),
    expiresAt: new Date(record.expiresAt).toISOString(),
    authorizationUrl: record.phase === "awaiting_authorization" ? record.authorizationUrl : null,
    tools: (record.discovery?.tools ?? []).map(({ name, description, inputSchema, annotations }) => ({
      name,
      description,
      inputSchema,
      annotations,
    })),
    capabilities:
      record.discovery === null
        ? null
        : { resources: record.discovery.resources, prompts: record.discovery.prompts },
    error: record.error,
    saved: record.saved,
    runtime: record.runtime,
    permissions: record.permissions,
  };
}
