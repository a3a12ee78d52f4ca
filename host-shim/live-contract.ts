import type { LiveSpec, LiveStatus } from "./live/types.js";

export type { LiveSpec, LiveStatus, PermissionRecord } from "./live/types.js";

/** What the profile runtime needs of its live connection manager (host-shim/live). */
export interface LiveManager {
  /** False while no live connection manager works here: setup capabilities stay off. */
  readonly available: boolean;
  apply(spec: LiveSpec): Promise<LiveStatus>;
  remove(name: string): Promise<void>;
  status(name: string): LiveStatus | null;
  close(): Promise<void>;
}
