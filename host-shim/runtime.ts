import type { MessagePort } from "node:worker_threads";
import { Comlink, nodeEndpoint } from "../plugin/comlink.js";
import { toErrorData } from "../plugin/errors.js";
import type { ConnectionsView, Outcome, RuntimeApi, RuntimeDescription } from "../plugin/runtime-api.js";
import type { GatewayHost } from "./contract.js";
import type { PluginOptions } from "./options.js";
import { ProfileStore } from "./store.js";

export const SETUP_TIMEOUT_SECONDS = 600;

/**
 * A profile's runtime on the gateway's main thread: the single writer of its state, and the only thing
 * workers can reach, through the narrow RuntimeApi served over a MessagePort per task.
 */
export class ProfileRuntime {
  readonly api: RuntimeApi;

  private constructor(
    private readonly profile: string | null,
    private readonly store: ProfileStore,
    private readonly options: Readonly<PluginOptions>,
  ) {
    this.api = {
      describe: () => settle(() => this.describe()),
      listConnections: () => settle(() => this.listConnections()),
    };
  }

  static async open(host: GatewayHost, profile: string | null, options: Readonly<PluginOptions>) {
    const store = await ProfileStore.open(host.stateDir);
    return new ProfileRuntime(profile, store, options);
  }

  /** Serves the API to one task's worker; the caller closes the port when the task settles. */
  serve(port: MessagePort): void {
    Comlink.expose(this.api, nodeEndpoint(port));
  }

  async close(): Promise<void> {
    await this.store.close();
  }

  private describe(): RuntimeDescription {
    return {
      profile: this.profile,
      storeWritable: true,
      setupTimeoutSeconds: SETUP_TIMEOUT_SECONDS,
      oauthCallbackModes: [],
      oauthRedirectUris: [...this.options.oauthRedirectUris],
    };
  }

  private listConnections(): ConnectionsView {
    const configured = Object.keys(this.store.connectionsConfig().connections);
    if (configured.length > 0) {
      // Entries only come from setup, which this build does not have; refuse to show a guess.
      throw new Error("connections are configured but this build cannot read them");
    }
    return { connections: [], catalog: [] };
  }
}

/** Runs an API call and hands the worker data, never an Error instance. */
async function settle<T>(run: () => T | Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error: toErrorData(error).data };
  }
}
