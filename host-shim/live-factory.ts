import type { GatewayHost } from "./contract.js";
import type { LiveManager } from "./live-contract.js";
import type { PluginOptions } from "./options.js";
import type { ProfileStore } from "./store.js";

/** Builds the live connection manager over the store's token vault. */
export function createLiveManager(
  _host: GatewayHost,
  _store: ProfileStore,
  _options: Readonly<PluginOptions>,
  _now: () => number,
): LiveManager {
  const unavailable = () => Promise.reject(new Error("live connections are not built yet"));
  return {
    available: false,
    apply: unavailable,
    remove: unavailable,
    status: () => null,
    close: async () => undefined,
  };
}
