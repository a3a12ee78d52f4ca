import type { DiscoveredTool, Discovery } from "../plugin/mcp-client/types.js";
import type { LiveSpec, LiveStatus } from "./live/types.js";

export type { LiveSpec, LiveStatus, PermissionRecord } from "./live/types.js";

/** What the profile runtime needs of its live connection manager (host-shim/live). */
export interface LiveManager {
  /** False while no live connection manager works here: setup capabilities stay off. */
  readonly available: boolean;
  apply(spec: LiveSpec): Promise<LiveStatus>;
  remove(name: string): Promise<void>;
  status(name: string): LiveStatus | null;
  /** What a connected connection's live session lists now (all tools, not only exposed); else null. */
  discovery(name: string): Discovery | null;
  /** Definitions of a connection's tools exposed right now. */
  exposedTools(name: string): DiscoveredTool[];
  /** Calls an exposed tool; rejects with `{ code }` data (NOT_FOUND, NOT_PERMITTED, NEEDS_AUTH, …). */
  callTool(name: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  close(): Promise<void>;
}
