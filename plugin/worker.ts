import { MessageChannel, parentPort } from "node:worker_threads";
import { Comlink, type Remote, nodeEndpoint } from "./comlink.js";
import { methodError, toErrorData } from "./errors.js";
import type { MethodContext } from "./method-context.js";
import { METHOD_HANDLERS } from "./methods/index.js";
import type { RuntimeApi, RuntimeDescription } from "./runtime-api.js";
import { STEP_HANDLERS } from "./steps/index.js";
import {
  type MethodTask,
  type MethodTaskOutcome,
  type MethodTaskResult,
  RUNTIME_CONNECT,
  type SingleTask,
} from "./task.js";

let runtime: Remote<RuntimeApi> | undefined;

/**
 * This worker's channel to its pool's runtime, made on first use and kept for the worker's life: a
 * channel per task would cost more than most methods do.
 */
function runtimeChannel(): Remote<RuntimeApi> {
  if (runtime !== undefined) return runtime;
  if (parentPort === null) throw new Error("not running in a worker thread");
  const { port1, port2 } = new MessageChannel();
  parentPort.postMessage({ type: RUNTIME_CONNECT, port: port2 }, [port2]);
  runtime = Comlink.wrap<RuntimeApi>(nodeEndpoint(port1));
  return runtime;
}

/**
 * A method's context in this worker. The channel to the runtime is made only when a method first reaches
 * for it; a getter on a class, as one defined on an object literal per call is slow in V8.
 */
class WorkerMethodContext implements MethodContext {
  readonly now = Date.now;
  constructor(readonly described: RuntimeDescription) {}
  get runtime(): Remote<RuntimeApi> {
    return runtimeChannel();
  }
}

/** The piscina worker entry: runs one wire method or setup step, or a batch of read-only methods. */
export default function runMethodTask(task: MethodTask): Promise<MethodTaskOutcome> {
  if (task.kind === "batch") {
    // Each item fails alone: one method's error never becomes another's answer.
    const runs = task.items.map((item) => runOne("method", item.method, item.params, task.described));
    return Promise.all(runs).then((results) => results.map((result) => (result.ok ? result.json : result)));
  }
  return runOne(task.kind, task.method, task.params, task.described);
}

async function runOne(
  kind: SingleTask["kind"],
  method: string,
  params: Record<string, unknown>,
  described: RuntimeDescription,
): Promise<MethodTaskResult> {
  try {
    const handler = (kind === "step" ? STEP_HANDLERS : METHOD_HANDLERS).get(method);
    if (handler === undefined) throw methodError("UNKNOWN_METHOD", "The method is not on the allowlist.");
    const result = await handler(params, new WorkerMethodContext(described));
    // A method returning nothing answers null, so the body is still {"result": …}.
    return { ok: true, json: JSON.stringify(result ?? null) };
  } catch (error) {
    const { data, expected } = toErrorData(error);
    return { ok: false, error: data, expected };
  }
}
