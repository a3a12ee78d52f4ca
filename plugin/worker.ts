import { Comlink, nodeEndpoint } from "./comlink.js";
import { methodError, toErrorData } from "./errors.js";
import { METHOD_HANDLERS } from "./methods/index.js";
import type { RuntimeApi } from "./runtime-api.js";
import { STEP_HANDLERS } from "./steps/index.js";
import type { MethodTask, MethodTaskResult } from "./task.js";

/** The piscina worker entry: runs one wire method against the runtime reached through the task's port. */
export default async function runMethodTask(task: MethodTask): Promise<MethodTaskResult> {
  const runtime = Comlink.wrap<RuntimeApi>(nodeEndpoint(task.runtimePort));
  try {
    const handler = (task.kind === "step" ? STEP_HANDLERS : METHOD_HANDLERS).get(task.method);
    if (handler === undefined) throw methodError("UNKNOWN_METHOD", "The method is not on the allowlist.");
    const result = await handler(task.params, { runtime, now: Date.now });
    return { ok: true, result };
  } catch (error) {
    const { data, expected } = toErrorData(error);
    return { ok: false, error: data, expected };
  } finally {
    runtime[Comlink.releaseProxy]();
    task.runtimePort.close();
  }
}
