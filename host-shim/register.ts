import { BUILT_FEATURES } from "../plugin/features.js";
import { METHOD_NAMES } from "../plugin/method-names.js";
import { AccessBook } from "./access.js";
import { DEFAULT_CATALOG, loadCatalog } from "./catalog.js";
import type { GatewayHost, GatewayMethodFailure } from "./contract.js";
import type { LocalCall } from "./dispatch.js";
import { createLiveManager } from "./live-factory.js";
import { MANAGE_PATH, createManageHandler } from "./manage-route.js";
import { MCP_PATH, createMcpEndpoint } from "./mcp-endpoint/index.js";
import { type PluginOptionsInput, resolveOptions } from "./options.js";
import { MethodPool, type MethodRun } from "./pool.js";
import { ProfileRuntime } from "./runtime.js";
import { ProfileStore } from "./store.js";

export interface PluginHandle {
  /** Runs a method on this gateway's own runtime, as the route does for a request without a profile. */
  invoke(method: string, params: Record<string, unknown>): Promise<MethodRun>;
  /** Setup steps still running in the pool (discovery, authorization), for an orderly shutdown. */
  idle(): Promise<void>;
  /** Stops the pool and the live connections, and releases the state directory. */
  close(): Promise<void>;
}

/**
 * Loads the plugin into one gateway (or one profile of a multi-profile gateway): opens its state,
 * starts its worker pool and live connections, registers the owner route and the gateway methods its
 * profile host calls.
 */
export async function register(host: GatewayHost, input?: PluginOptionsInput): Promise<PluginHandle> {
  const options = resolveOptions(input);
  const catalog = loadCatalog(options.catalogFile ?? DEFAULT_CATALOG);
  const store = await ProfileStore.open(host.stateDir);
  const pool = new MethodPool(options.pool);
  const steps = new Set<Promise<unknown>>();
  const now = () => Date.now();
  const live = createLiveManager(host, store, options, now);
  const access = new AccessBook({ host, store, live, now });
  const accessEndpoint = BUILT_FEATURES.externalAgentAccess && host.servesHttpRoutes !== false;
  const runtime: ProfileRuntime = new ProfileRuntime({
    host,
    store,
    catalog,
    live,
    access,
    accessEndpoint,
    options,
    now,
    runStep: (step, id) => {
      const running = pool.run(step, { id }, runtime, "step").then(async ({ frame, fault }) => {
        if ("result" in frame.body) return;
        // A step that died leaves its operation failed, never stuck in checking.
        if (fault !== null) host.logger.warn({ step, fault }, "mcp-manage setup step failed");
        const error =
          fault === null
            ? frame.body.error
            : { code: "CONNECTION_FAILED" as const, message: "The setup step failed." };
        await runtime.api.fail(id, error);
      });
      steps.add(running);
      void running.finally(() => steps.delete(running));
    },
  });
  pool.attach(runtime);
  await runtime.start();
  const invoke = (method: string, params: Record<string, unknown>) => pool.run(method, params, runtime);

  const call: LocalCall = (method, params, done) => pool.call(method, params, runtime, done);
  host.registerHttpRoute({ path: MANAGE_PATH, match: "exact", handler: createManageHandler(host, call) });
  const mcp = accessEndpoint
    ? createMcpEndpoint({ registry: access, logger: host.logger, gatewayTokenHeader: host.tokenHeader })
    : null;
  if (mcp !== null) host.registerHttpRoute({ path: MCP_PATH, match: "exact", handler: mcp.handler });
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
    idle: async () => {
      while (steps.size > 0) await Promise.allSettled([...steps]);
    },
    close: () => {
      closing ??= Promise.resolve(mcp?.close())
        .then(() => pool.destroy())
        .finally(() => runtime.close());
      return closing;
    },
  };
}
