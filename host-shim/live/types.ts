import type {
  OAuthServerBinding,
  ServerTarget,
  StoredClient,
  StoredTokens,
} from "../../plugin/mcp-client/types.js";
import type { HostLogger, ToolRegistry } from "../contract.js";

/** What the owner decided for one connection in the permission review. */
export interface PermissionRecord {
  mode: "all" | "selected" | "none";
  include: string[];
  exclude: string[];
  resources: boolean;
  prompts: boolean;
  /** Tool name → the definition hash the owner approved (what the owner saw). */
  approved: Record<string, string>;
}

export interface LiveSpec {
  name: string;
  target: ServerTarget;
  enabled: boolean;
  permissions: PermissionRecord;
  oauth: { binding: OAuthServerBinding; client: StoredClient } | null;
}

/** The runtime's secrets store for tokens; `save` must be durable before it resolves. */
export interface TokenVault {
  get(name: string): StoredTokens | null;
  save(name: string, tokens: StoredTokens): Promise<void>;
}

export type LiveState = "connected" | "connecting" | "needs_auth" | "failed" | "disabled";

export interface LiveToolStatus {
  name: string;
  /** Registered with the agent's tool registry right now. */
  exposed: boolean;
  /** The mode allows the tool but its current definition is not the approved one (new or changed). */
  awaitingReview: boolean;
}

export interface LiveStatus {
  status: LiveState;
  /** Owner-readable; never raw exception text, never a secret. Null when connected or disabled. */
  reason: string | null;
  tools: LiveToolStatus[];
}

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

export interface LiveDeps {
  tools: ToolRegistry;
  logger: HostLogger;
  vault: TokenVault;
  now: () => number;
  fetch?: typeof fetch;
  /** Connect (and ping) timeout. Default 10 s. */
  timeoutMs?: number;
  /** Reconnect backoff. Default 500 ms .. 30 s. */
  backoff?: BackoffOptions;
  /** Called after any change of a connection's status (state, reason or tools). */
  onChange?: (name: string) => void;
}

export type LiveCallErrorCode =
  | "NOT_FOUND"
  | "UNAVAILABLE"
  | "NOT_PERMITTED"
  | "NEEDS_AUTH"
  | "CALL_FAILED"
  | "CANCELLED";

/** What `callTool` (and the registered agent tools) reject with. Identify by `code`, not instanceof. */
export interface LiveCallError extends Error {
  code: LiveCallErrorCode;
}

export function liveCallError(code: LiveCallErrorCode, message: string): LiveCallError {
  const error = new Error(message) as LiveCallError;
  error.name = "LiveCallError";
  error.code = code;
  return error;
}

export const LIVE_CALL_ERROR_CODES: readonly LiveCallErrorCode[] = [
  "NOT_FOUND",
  "UNAVAILABLE",
  "NOT_PERMITTED",
  "NEEDS_AUTH",
  "CALL_FAILED",
  "CANCELLED",
];

export function isLiveCallError(value: unknown): value is LiveCallError {
  if (typeof value !== "object" || value === null) return false;
  const { code, name } = value as { code?: unknown; name?: unknown };
  return name === "LiveCallError" && (LIVE_CALL_ERROR_CODES as readonly unknown[]).includes(code);
}
