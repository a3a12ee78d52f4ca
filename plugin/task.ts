import type { MessagePort } from "node:worker_threads";
import type { ErrorData } from "./errors.js";

/** One piscina task: a validated envelope's method and params, and a port to the profile's runtime. */
export interface MethodTask {
  /** A wire method, or a setup step the runtime runs detached from any request. */
  kind: "method" | "step";
  method: string;
  params: Record<string, unknown>;
  runtimePort: MessagePort;
}

/** `expected: false` marks an error the method did not mean to raise: the shim answers 503, not 400. */
export type MethodTaskResult =
  | { ok: true; result: unknown }
  | { ok: false; error: ErrorData; expected: boolean };
