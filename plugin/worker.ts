import { MessageChannel, parentPort } from "node:worker_threads";
import { Comlink, type Remote, nodeEndpoint } from "./comlink.js";
import { methodError, toErrorData } from "./errors.js";
import { METHOD_HANDLERS } from "./methods/index.js";
import type { RuntimeApi } from "./runtime-api.js";
import { STEP_HANDLERS } from "./steps/index.js";
import { type MethodTask, type MethodTaskResult, RUNTIME_CONNECT } from "./task.js";

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

/** The piscina worker entry: runs one wire method (or setup step) against the profile's runtime. */
export default async function runMethodTask(task: MethodTask): Promise<MethodTaskResult> {
  try {
    const handler = (task.kind === "step" ? STEP_HANDLERS : METHOD_HANDLERS).get(task.method);
    if (handler === undefined) throw methodError("UNKNOWN_METHOD", "The method is not on the allowlist.");
    const result = await handler(task.params, {
      get runtime() {
        return runtimeChannel();
      },
      described: task.described,
      now: Date.now,
    });
    return { ok: true, result };
  } catch (error) {
    const { data, expected } = toErrorData(error);
    return { ok: false, error: data, expected };
  }
}
