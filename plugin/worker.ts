import { MessageChannel, parentPort } from "node:worker_threads";
import { Comlink, type Remote, nodeEndpoint } from "./comlink.js";
import { methodError, toErrorData } from "./errors.js";
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

/** The piscina worker entry: runs one wire method or setup step, or a batch of read-only methods. */
export default function runMethodTask(task: MethodTask): Promise<MethodTaskOutcome> {
  if (task.kind === "batch") {
    // Each item fails alone: one method's error never becomes another's answer.
    return Promise.all(task.items.map((item) => runOne("method", item.method, item.params, task.described)));
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
    const result = await handler(params, {
      get runtime() {
        return runtimeChannel();
      },
      described,
      now: Date.now,
    });
    // A method returning nothing answers null, so the body is still {"result": …}.
    return { ok: true, json: JSON.stringify(result ?? null) };
  } catch (error) {
    const { data, expected } = toErrorData(error);
    return { ok: false, error: data, expected };
  }
}
