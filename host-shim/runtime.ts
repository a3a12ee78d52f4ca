import type { MessagePort } from "node:worker_threads";
import { Comlink, nodeEndpoint } from "../plugin/comlink.js";
import { type ErrorData, methodError, toErrorData } from "../plugin/errors.js";
import type { AuthorizationTransaction, Discovery, StoredTokens } from "../plugin/mcp-client/types.js";
import type {
  BeginInput,
  CallbackClaim,
  CatalogEntryView,
  ConnectionsView,
  Outcome,
  RuntimeApi,
  RuntimeDescription,
  StepInput,
} from "../plugin/runtime-api.js";
import type { OperationSnapshot } from "../plugin/setup/operation.js";
import { snapshotOf } from "../plugin/setup/operation.js";
import type { AccessBook } from "./access.js";
import type { CatalogEntry } from "./catalog.js";
import { Committer } from "./commit.js";
import type { GatewayHost } from "./contract.js";
import type { LiveManager } from "./live-contract.js";
import { OperationTable } from "./operations.js";
import type { PluginOptions } from "./options.js";
import type { ProfileStore } from "./store.js";
import { draftLocation, liveTargetOf, locationOf, targetOf } from "./targets.js";

export const SETUP_TIMEOUT_SECONDS = 600;

export interface RuntimeDeps {
  host: GatewayHost;
  store: ProfileStore;
  catalog: ReadonlyMap<string, CatalogEntry>;
  live: LiveManager;
  access: AccessBook;
  /** The /mcp endpoint serves this runtime's keys. */
  accessEndpoint: boolean;
  options: Readonly<PluginOptions>;
  /** Runs a setup step (discovery, authorization) in the worker pool, detached from any request. */
  runStep: (step: "discover", id: string) => void;
  now: () => number;
}

/**
 * A profile's runtime on the gateway's main thread: the single writer of its state, and the only thing
 * workers can reach, through the narrow RuntimeApi served over a MessagePort per task.
 */
export class ProfileRuntime {
  readonly api: RuntimeApi;
  readonly operations: OperationTable;
  private readonly committer: Committer;

  constructor(private readonly deps: RuntimeDeps) {
    const { store, now } = deps;
    this.operations = new OperationTable(store, now, (name) =>
      Object.hasOwn(store.connections.value.connections, name),
    );
    this.committer = new Committer({ ...deps, operations: this.operations });
    this.api = {
      accessCatalog: (sessionKey) => settle(() => deps.access.catalog(sessionKey)),
      accessList: () => settle(() => deps.access.list()),
      accessCreate: (input) => settle(() => deps.access.create(input)),
      accessRevoke: (id) => settle(() => deps.access.revoke(id)),
      describe: () => settle(() => this.describe()),
      listConnections: () => settle(() => this.listConnections()),
      catalogEntry: (id) => settle(() => this.catalogEntry(id)),
      begin: (input) => settle(() => this.begin(input)),
      operation: (id) => settle(() => this.operations.snapshot(id)),
      operations: (filter) => settle(() => this.operations.list(filter)),
      stepInput: (id) => settle(() => this.stepInput(id)),
      toReview: (id, discovery) => settle(() => this.toReview(id, discovery)),
      toAwaiting: (id, transaction) => settle(() => this.toAwaiting(id, transaction)),
      fail: (id, error) => settle(() => this.fail(id, error)),
      claimCallback: (id, callback) => settle(() => this.claimCallback(id, callback)),
      afterExchange: (id, oauth) => settle(() => this.afterExchange(id, oauth)),
      confirm: (id, decision, approved) => settle(() => this.committer.confirm(id, decision, approved)),
      cancel: (id) => settle(() => this.committer.cancel(id)),
      cancelRequest: (name, requestId) => settle(() => this.committer.cancelRequest(name, requestId)),
      action: (input) => settle(() => this.committer.action(input)),
    };
  }

  /** Serves the API to one worker for its life; the port closes when the worker ends. */
  serve(port: MessagePort): void {
    Comlink.expose(this.api, nodeEndpoint(port));
    port.once("close", () => port.removeAllListeners());
  }

  /** Recovers interrupted operations and brings every enabled connection up; failures show in their status. */
  async start(): Promise<void> {
    await this.deps.access.start();
    await this.committer.recoverInterrupted();
    await this.committer.dropOrphanSecrets();
    // Remote servers may be slow or down: the gateway starts serving without waiting for them.
    void this.committer.applyAll();
    // A step that was running when the gateway stopped is started again, so no operation stays checking.
    for (const record of this.operations.records()) {
      if (record.phase === "checking" && record.intent !== "action") this.deps.runStep("discover", record.id);
    }
  }

  async close(): Promise<void> {
    this.deps.access.close();
    await this.deps.live.close();
    await this.deps.store.close();
  }

  describe(): RuntimeDescription {
    const redirectUris = [...this.deps.options.oauthRedirectUris];
    return {
      profile: null,
      storeWritable: true,
      liveConnections: this.deps.live.available,
      accessEndpoint: this.deps.accessEndpoint,
      setupTimeoutSeconds: SETUP_TIMEOUT_SECONDS,
      oauthCallbackModes: redirectUris.length > 0 ? ["loopback", "redirect"] : ["loopback"],
      oauthRedirectUris: redirectUris,
      now: this.deps.now(),
    };
  }

  private catalogView(entry: CatalogEntry): CatalogEntryView {
    return {
      id: entry.id,
      title: entry.title,
      description: entry.description ?? null,
      transport: entry.url !== undefined ? "http" : "stdio",
      fields: entry.fields.map(({ name, label, header, prefix }) => ({ name, label, header, prefix })),
      oauthClient: entry.oauthClient != null,
      configured: Object.hasOwn(this.deps.store.connections.value.connections, entry.id),
    };
  }

  private catalogEntry(id: string) {
    const entry = this.deps.catalog.get(id);
    if (entry === undefined) throw methodError("CONFIG_INVALID", "No catalog entry has that name.");
    return { ...this.catalogView(entry), server: locationOf(entry) };
  }

  private listConnections(): ConnectionsView {
    const published = this.deps.store.connections.value.connections;
    const connections = Object.entries(published)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, connection]) => {
        const live = this.deps.live.status(name);
        const { approved: _approved, ...permissions } = connection.permissions;
        return {
          name,
          source: connection.source,
          catalogId: connection.catalogId,
          server: connection.server,
          enabled: connection.enabled,
          oauth: connection.oauth,
          permissions,
          status: connection.enabled ? (live?.status ?? "connecting") : "disabled",
          statusReason: live?.reason ?? null,
          tools: live?.tools ?? [],
          updatedAt: connection.updatedAt,
        };
      });
    return { connections, catalog: [...this.deps.catalog.values()].map((entry) => this.catalogView(entry)) };
  }

  private async begin(input: BeginInput): Promise<OperationSnapshot> {
    if (input.draft.kind === "catalog" && !this.deps.catalog.has(input.draft.catalogId)) {
      throw methodError("CONFIG_INVALID", "No catalog entry has that name.");
    }
    const { record, created } = await this.operations.create(input);
    if (created) this.deps.runStep("discover", record.id);
    return snapshotOf(record);
  }

  private stepInput(id: string): StepInput {
    const operation = this.operations.get(id);
    const opSecrets = this.deps.store.secrets.value.operations[id] ?? null;
    const published = this.deps.store.connections.value.connections[operation.name];
    const connectionSecrets = this.deps.store.secrets.value.connections[operation.name];
    let target: StepInput["target"];
    let entry: CatalogEntry | null = null;
    if (operation.draft.kind === "existing" && published !== undefined) {
      target = liveTargetOf(published, connectionSecrets, this.deps.catalog);
      entry = published.catalogId === null ? null : (this.deps.catalog.get(published.catalogId) ?? null);
    } else {
      const location = draftLocation(operation.draft, this.deps.catalog);
      if (location === null) throw methodError("CONFIG_INVALID", "The draft's server is no longer known.");
      entry =
        operation.draft.kind === "catalog"
          ? (this.deps.catalog.get(operation.draft.catalogId) ?? null)
          : null;
      target = targetOf(location, { env: opSecrets?.env ?? {}, headers: opSecrets?.headers ?? {} }, entry);
    }
    const preRegistered = entry?.oauthClient ?? null;
    const reuse = operation.intent === "connect" ? null : (connectionSecrets?.oauth ?? null);
    const tokens =
      opSecrets?.oauth?.tokens ?? (operation.intent === "permissions" ? reuse?.tokens : null) ?? null;
    return {
      operation,
      target,
      preRegisteredClient:
        preRegistered === null
          ? null
          : { clientId: preRegistered.clientId, clientSecret: preRegistered.clientSecret ?? null, raw: {} },
      accessToken: tokens?.accessToken ?? null,
      knownClient:
        reuse === null
          ? null
          : { client: reuse.client, authorizationServerUrl: reuse.binding.authorizationServerUrl },
      transaction: opSecrets?.transaction ?? null,
      liveDiscovery:
        operation.intent === "permissions" && opSecrets?.oauth == null
          ? this.deps.live.discovery(operation.name)
          : null,
    };
  }

  private async toReview(id: string, discovery: Discovery): Promise<OperationSnapshot> {
    const next = await this.operations.transition(id, ["checking"], "review", { discovery });
    return snapshotOf(next ?? this.operations.get(id));
  }

  private async toAwaiting(id: string, transaction: AuthorizationTransaction): Promise<OperationSnapshot> {
    if (this.operations.get(id).phase !== "checking") return this.operations.snapshot(id);
    await this.operations.setSecrets(id, { transaction });
    const next = await this.operations.transition(id, ["checking"], "awaiting_authorization", {
      authorizationUrl: transaction.authorizationUrl,
    });
    return snapshotOf(next ?? this.operations.get(id));
  }

  private async fail(id: string, error: ErrorData): Promise<OperationSnapshot> {
    const next = await this.operations.fail(id, ["checking", "awaiting_authorization", "review"], error);
    return snapshotOf(next ?? this.operations.get(id));
  }

  /**
   * Claims the OAuth transaction for one callback: single use. The same callback again is a duplicate
   * (safe to answer with the operation); a different one after it is refused.
   */
  private async claimCallback(id: string, callbackForDigest: string): Promise<CallbackClaim> {
    const record = this.operations.get(id);
    const digest = this.operations.digest(callbackForDigest);
    if (record.callbackDigest !== null) {
      if (record.callbackDigest === digest) return { kind: "duplicate" };
      throw methodError("CONFLICT", "A different callback was already delivered to this operation.");
    }
    if (record.phase !== "awaiting_authorization") throw phaseError(record.phase, "awaiting_authorization");
    const transaction = this.operations.secretsOf(id).transaction;
    if (transaction === null)
      throw methodError("OAUTH_INVALID", "This operation has no authorization in flight.");
    // Claimed in memory before any await: a concurrent second callback sees it taken.
    const claimed = await this.operations.transition(id, ["awaiting_authorization"], "checking", {
      callbackDigest: digest,
      authorizationUrl: null,
    });
    if (claimed === null) throw methodError("CONFLICT", "The callback was already claimed.");
    await this.operations.setSecrets(id, { transaction: null });
    return { kind: "proceed", transaction };
  }

  private async afterExchange(
    id: string,
    oauth: { transaction: AuthorizationTransaction; tokens: StoredTokens },
  ): Promise<OperationSnapshot> {
    const record = this.operations.get(id);
    if (record.phase !== "checking") return snapshotOf(record);
    await this.operations.setSecrets(id, {
      oauth: { binding: oauth.transaction.binding, client: oauth.transaction.client, tokens: oauth.tokens },
    });
    if (record.intent === "reauthorize") return this.committer.commitReauthorization(id);
    this.deps.runStep("discover", id);
    return snapshotOf(record);
  }
}

export function phaseError(phase: string, wanted: string): Error {
  if (phase === "expired") return methodError("EXPIRED", "The operation expired; start a fresh setup.");
  if (phase === "cancelled") return methodError("CANCELLED", "The operation was cancelled.");
  return methodError("NOT_READY", `The operation is ${phase}, not ${wanted}.`);
}

/** Runs an API call and hands the worker data, never an Error instance. */
async function settle<T>(run: () => T | Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    const { data, expected } = toErrorData(error);
    return { ok: false, error: data, expected };
  }
}
