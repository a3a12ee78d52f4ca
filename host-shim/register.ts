import { METHOD_NAMES } from "../plugin/method-names.js";
import type { GatewayHost, GatewayMethodFailure } from "./contract.js";
import { createManageHandler, MANAGE_PATH } from "./manage-route.js";
import { type PluginOptionsInput, resolveOptions } from "./options.js";
import { MethodPool, type MethodRun } from "./pool.js";
import { ProfileRuntime } from "./runtime.js";

export interface PluginHandle {
  /** Runs a method on this gateway's own runtime, as the route does for a request without a profile. */
  invoke(method: string, params: Record<string, unknown>): Promise<MethodRun>;
  /** Stops the pool and releases the state directory. */
  close(): Promise<void>;
}

/**
 * Loads the plugin into one gateway (or one profile of a multi-profile gateway): opens its runtime,
 * starts its worker pool, registers the owner route and the gateway methods its profile host calls.
 */
export async function register(host: GatewayHost, input?: PluginOptionsInput): Promise<PluginHandle> {
  const options = resolveOptions(input);
  const runtime = await ProfileRuntime.open(host, null, options);
  const pool = new MethodPool(options.pool);
  const invoke = (method: string, params: Record<string, unknown>) => pool.run(method, params, runtime);

  host.registerHttpRoute({ path: MANAGE_PATH, match: "exact", handler: createManageHandler(host, invoke) });
  for (const method of METHOD_NAMES) {
    host.registerGatewayMethod(method, async (params) => {
      const { frame } = await invoke(method, params);
      if ("result" in frame.body) return frame.body.result;
      const failure: GatewayMethodFailure = { ...frame.body.error, status: frame.status };
      throw failure;
    });
  }

  let closing: Promise<void> | undefined;
  return {
    invoke,
    close: () => {
      closing ??= pool.destroy().finally(() => runtime.close());
      return closing;
    },
  };
}
