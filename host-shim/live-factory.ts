import type { StoredTokens } from "../plugin/mcp-client/types.js";
import type { GatewayHost } from "./contract.js";
import type { LiveManager } from "./live-contract.js";
import { LiveConnections, type TokenVault } from "./live/index.js";
import type { PluginOptions } from "./options.js";
import type { ProfileStore } from "./store.js";

/**
 * The token vault over the secrets file: a refreshed token is durable before the live connection uses
 * it, so a rotated refresh token is never lost to a crash.
 */
export function storeVault(store: ProfileStore): TokenVault {
  return {
    get: (name) => store.secrets.value.connections[name]?.oauth?.tokens ?? null,
    save: async (name: string, tokens: StoredTokens) => {
      const secrets = store.secrets.value;
      const connection = secrets.connections[name];
      // A connection removed while its refresh was in flight stays removed.
      if (connection?.oauth == null) return;
      await store.secrets.write({
        ...secrets,
        connections: {
          ...secrets.connections,
          [name]: { ...connection, oauth: { ...connection.oauth, tokens } },
        },
      });
    },
  };
}

/** Builds the live connection manager of one profile. */
export function createLiveManager(
  host: GatewayHost,
  store: ProfileStore,
  options: Readonly<PluginOptions>,
  now: () => number,
): LiveManager {
  const live = new LiveConnections({
    tools: host.tools,
    logger: host.logger,
    vault: storeVault(store),
    now,
    timeoutMs: options.live.connectTimeoutMs,
    backoff: { initialMs: options.live.backoffInitialMs, maxMs: options.live.backoffMaxMs },
  });
  return {
    available: true,
    apply: (spec) => live.apply(spec),
    remove: (name) => live.remove(name),
    status: (name) => live.status(name),
    exposedTools: (name) => live.exposedTools(name),
    discovery: (name) => live.discovery(name),
    callTool: (name, tool, args, signal) => live.callTool(name, tool, args, signal),
    close: () => live.close(),
  };
}
