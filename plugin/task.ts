import type { MessagePort } from "node:worker_threads";
import type { ErrorData } from "./errors.js";
import type { RuntimeDescription } from "./runtime-api.js";

/**
 * One piscina task: a validated envelope's method and params, and the runtime's description at the
 * moment of the request (what capabilities and the feature gates read, without a round trip).
 */
export interface SingleTask {
  /** A wire method, or a setup step the runtime runs detached from any request. */
  kind: "method" | "step";
  method: string;
  params: Record<string, unknown>;
  described: RuntimeDescription;
}

/**
 * Several read-only method calls that reached the pool in the same event-loop turn, run by one worker
 * as one task and answered one by one (see COALESCED_METHODS in host-shim/pool.ts).
 */
export interface BatchTask {
  kind: "batch";
  items: { method: string; params: Record<string, unknown> }[];
  described: RuntimeDescription;
}

export type MethodTask = SingleTask | BatchTask;

/**
 * A result crosses back as its JSON text: the route sends that text as is, and a string is far cheaper for
 * the main thread to receive than the object it encodes (and then to stringify again). `expected: false`
 * marks an error the method did not mean to raise: the shim answers 503, not 400.
 */
export type MethodTaskResult = { ok: true; json: string } | MethodTaskFailure;

export interface MethodTaskFailure {
  ok: false;
  error: ErrorData;
  expected: boolean;
}

/**
 * A batch answers one entry per item, in the items' order: a success as its bare JSON text, a failure as
 * a MethodTaskFailure. Strings are the cheapest thing for the main thread to receive, and most answers of
 * a batch are successes.
 */
export type BatchTaskEntry = string | MethodTaskFailure;

/** A single task answers one result; a batch answers one entry per item. */
export type MethodTaskOutcome = MethodTaskResult | BatchTaskEntry[];

/**
 * A worker asks for its channel to the runtime once, over piscina's parentPort, handing over one end of
 * a MessageChannel it made; the runtime serves the RuntimeApi on it with comlink for the worker's life.
 */
export const RUNTIME_CONNECT = "mcp-manage:runtime-connect";

export interface RuntimeConnectMessage {
  type: typeof RUNTIME_CONNECT;
  port: MessagePort;
}

export function isRuntimeConnect(message: unknown): message is RuntimeConnectMessage {
  return (
    typeof message === "object" &&
    message !== null &&
    (message as { type?: unknown }).type === RUNTIME_CONNECT &&
    typeof (message as { port?: { postMessage?: unknown } }).port?.postMessage === "function"
  );
}
