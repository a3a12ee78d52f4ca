import type { OAuthServerBinding, ServerTarget, StoredClient } from "../plugin/mcp-client/types.js";
import type { LiveState } from "../plugin/setup/operation.js";
import type { PermissionsInput } from "../plugin/setup/params.js";

/** What the profile runtime needs of its live connection manager (host-shim/live). */
export interface PermissionRecord extends PermissionsInput {
  approved: Record<string, string>;
}

export interface LiveSpec {
  name: string;
  target: ServerTarget;
  enabled: boolean;
  permissions: PermissionRecord;
  oauth: { binding: OAuthServerBinding; client: StoredClient } | null;
}

export interface LiveStatus {
  status: LiveState;
  reason: string | null;
  tools: Array<{ name: string; exposed: boolean; awaitingReview: boolean }>;
}

export interface LiveManager {
  /** False while this build has no working live connection manager: setup capabilities stay off. */
  readonly available: boolean;
  apply(spec: LiveSpec): Promise<LiveStatus>;
  remove(name: string): Promise<void>;
  status(name: string): LiveStatus | null;
  close(): Promise<void>;
}
