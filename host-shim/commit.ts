import { isDeepStrictEqual } from "node:util";
import { methodError } from "../plugin/errors.js";
import { type OperationRecord, type OperationSnapshot, snapshotOf } from "../plugin/setup/operation.js";
import type { PermissionsInput } from "../plugin/setup/params.js";
import type { CatalogEntry } from "./catalog.js";
import type { GatewayHost } from "./contract.js";
import type { LiveManager, LiveStatus } from "./live-contract.js";
import type { OperationTable } from "./operations.js";
import type { ConnectionSecrets, ProfileStore, PublishedConnection } from "./store.js";
import { draftLocation, liveTargetOf } from "./targets.js";

interface CommitDeps {
  host: GatewayHost;
  store: ProfileStore;
  catalog: ReadonlyMap<string, CatalogEntry>;
  live: LiveManager;
  operations: OperationTable;
  now: () => number;
}

type Action = "enable" | "disable" | "retry" | "remove";

/**
 * Publishing and applying: confirmation writes the configuration (saved) and then applies it to the
 * live runtime (runtime result), reported separately; connection actions; cancellation by phase.
 */
export class Committer {
  constructor(private readonly deps: CommitDeps) {}

  async confirm(
    id: string,
    decision: PermissionsInput,
    approved: Record<string, string>,
  ): Promise<OperationSnapshot> {
    const record = this.deps.operations.get(id);
    if (record.phase !== "review") {
      if (record.permissions !== null) {
        if (isDeepStrictEqual(record.permissions, decision)) return snapshotOf(record);
        throw methodError("CONFLICT", "A different permission decision was already confirmed.");
      }
      if (record.phase === "expired")
        throw methodError("EXPIRED", "The operation expired; start a fresh setup.");
      if (record.phase === "cancelled") throw methodError("CANCELLED", "The operation was cancelled.");
      throw methodError("NOT_READY", `The operation is ${record.phase}; confirm needs review.`);
    }
    const committing = await this.deps.operations.transition(id, ["review"], "committing", {
      permissions: decision,
    });
    if (committing === null) return this.deps.operations.snapshot(id);
    return this.settleCommit(id, () => this.publishAndApply(committing, { ...decision, approved }));
  }

  /** A commit that throws still ends its operation: nothing may stay committing (its name would stay busy). */
  private async settleCommit(
    id: string,
    commit: () => Promise<OperationSnapshot>,
  ): Promise<OperationSnapshot> {
    try {
      return await commit();
    } catch (error) {
      const saved = this.deps.operations.get(id).saved;
      const failed = await this.deps.operations.fail(id, ["committing"], {
        code: "APPLY_FAILED",
        message: saved
          ? "The configuration was saved but could not be applied."
          : "The configuration could not be saved; nothing changed.",
      });
      if (failed === null) throw error;
      return snapshotOf(failed);
    }
  }

  async commitReauthorization(id: string): Promise<OperationSnapshot> {
    const committing = await this.deps.operations.transition(id, ["checking"], "committing");
    if (committing === null) return this.deps.operations.snapshot(id);
    return this.settleCommit(id, () =>
      this.publishAndApply(committing, this.publishedOf(committing.name).permissions),
    );
  }

  async cancel(id: string): Promise<OperationSnapshot> {
    const record = this.deps.operations.get(id);
    if (record.phase === "cancelled") return snapshotOf(record);
    if (record.phase === "committing") {
      if (!record.saved)
        throw methodError("BUSY", "The operation is publishing its configuration; try again.");
      const failed = await this.deps.operations.fail(id, ["committing"], {
        code: "APPLY_INTERRUPTED",
        message: "Cancelled after the configuration was saved; it stays saved.",
      });
      return snapshotOf(failed ?? this.deps.operations.get(id));
    }
    const cancelled = await this.deps.operations.transition(
      id,
      ["checking", "awaiting_authorization", "review"],
      "cancelled",
      { error: { code: "CANCELLED", message: "Cancelled by the owner." } },
    );
    if (cancelled !== null) return snapshotOf(cancelled);
    throw methodError("NOT_READY", `The operation already ended (${record.phase}).`);
  }

  async cancelRequest(name: string, requestId: string) {
    const record = this.deps.operations.findByRequestId(requestId);
    if (record !== undefined && record.name !== name) {
      throw methodError("CONFLICT", "That requestId belongs to another connection name.");
    }
    // The tombstone comes first, so a begin that is still on its way is refused.
    await this.deps.operations.tombstone(name, requestId);
    if (record === undefined) return { cancelled: true as const, operation: null };
    if (record.phase === "cancelled" || record.phase === "expired") {
      return { cancelled: true as const, operation: snapshotOf(record) };
    }
    if (record.phase === "complete" || record.phase === "failed") {
      return { cancelled: true as const, operation: snapshotOf(record) };
    }
    return { cancelled: true as const, operation: await this.cancel(record.id) };
  }

  async action(input: { name: string; requestId: string; action: Action }): Promise<OperationSnapshot> {
    const { record, created } = await this.deps.operations.create({
      requestId: input.requestId,
      name: input.name,
      intent: "action",
      paramsForDigest: JSON.stringify(["action", input.name, input.requestId, input.action]),
      draft: { kind: "action", action: input.action },
      redirectUri: null,
      sessionKey: null,
      secrets: { env: {}, headers: {} },
      committing: true,
    });
    if (!created) return snapshotOf(record);
    try {
      const runtime = await this.runAction(input.name, input.action);
      const done = await this.deps.operations.transition(record.id, ["committing"], "complete", {
        saved: input.action !== "retry",
        runtime,
      });
      return snapshotOf(done ?? this.deps.operations.get(record.id));
    } catch {
      const failed = await this.deps.operations.fail(record.id, ["committing"], {
        code: "APPLY_FAILED",
        message: `The ${input.action} action could not be completed.`,
      });
      return snapshotOf(failed ?? this.deps.operations.get(record.id));
    }
  }

  /** Drops credentials a crash left behind for connections that were never published. */
  async dropOrphanSecrets(): Promise<void> {
    const { store } = this.deps;
    const published = store.connections.value.connections;
    const secrets = store.secrets.value.connections;
    const orphans = Object.keys(secrets).filter((name) => !Object.hasOwn(published, name));
    if (orphans.length === 0) return;
    const kept = Object.fromEntries(
      Object.entries(secrets).filter(([name]) => Object.hasOwn(published, name)),
    );
    await store.secrets.write({ ...store.secrets.value, connections: kept });
  }

  async applyAll(): Promise<void> {
    const names = Object.keys(this.deps.store.connections.value.connections);
    await Promise.all(names.map((name) => this.apply(name).catch(() => undefined)));
  }

  /**
   * Ends operations a crash or restart cut off while committing: one whose configuration was saved is
   * complete (the startup apply brings it up; mcp.connections.list shows how that goes); one that was not
   * saved changed nothing and failed. No operation may stay committing, or its name would stay busy.
   */
  async recoverInterrupted(): Promise<void> {
    const { operations, store } = this.deps;
    for (const record of operations.records()) {
      if (record.phase !== "committing") continue;
      // Published but killed before the operation was marked saved: the config on disk is this one's.
      const published = store.connections.value.connections[record.name]?.operationId === record.id;
      if (record.saved || published) {
        await operations.transition(record.id, ["committing"], "complete", {
          saved: true,
          runtime: {
            applied: false,
            status: "connecting",
            reason: "The gateway restarted; connecting again.",
          },
        });
      } else {
        await operations.fail(record.id, ["committing"], {
          code: "APPLY_INTERRUPTED",
          message: "The gateway stopped before the configuration was saved; nothing was published.",
        });
      }
    }
  }

  private async runAction(name: string, action: Action): Promise<OperationRecord["runtime"]> {
    const published = this.publishedOf(name);
    if (action === "remove") {
      await this.deps.live.remove(name);
      const { store } = this.deps;
      const { [name]: _gone, ...connections } = store.connections.value.connections;
      await store.connections.write({ ...store.connections.value, connections });
      // Tokens and the client registration go with the connection.
      const { [name]: _secrets, ...secretConnections } = store.secrets.value.connections;
      await store.secrets.write({ ...store.secrets.value, connections: secretConnections });
      return { applied: true, status: "removed", reason: null };
    }
    if (action === "enable" || action === "disable") {
      await this.publish(name, { ...published, enabled: action === "enable", updatedAt: this.stamp() });
    }
    return runtimeResult(await this.apply(name));
  }

  private async publishAndApply(
    record: OperationRecord,
    permissions: PublishedConnection["permissions"],
  ): Promise<OperationSnapshot> {
    const { operations, store } = this.deps;
    const opSecrets = operations.secretsOf(record.id);
    const existing = store.connections.value.connections[record.name];
    const existingSecrets = store.secrets.value.connections[record.name];
    let published: PublishedConnection;
    let secrets: ConnectionSecrets;
    if (record.intent === "connect") {
      const location = draftLocation(record.draft, this.deps.catalog);
      if (location === null || (record.draft.kind !== "catalog" && record.draft.kind !== "custom")) {
        throw methodError("CONFIG_INVALID", "The draft's server is no longer known.");
      }
      published = {
        source: record.draft.kind,
        catalogId: record.draft.kind === "catalog" ? record.draft.catalogId : null,
        server: location,
        envKeys: Object.keys(opSecrets.env).sort(),
        headerKeys: Object.keys(opSecrets.headers).sort(),
        enabled: true,
        oauth: opSecrets.oauth !== null,
        permissions,
        updatedAt: this.stamp(),
        operationId: record.id,
      };
      secrets = { env: opSecrets.env, headers: opSecrets.headers, oauth: opSecrets.oauth };
    } else {
      if (existing === undefined || existingSecrets === undefined) {
        throw methodError("NOT_FOUND", `${record.name} is no longer configured.`);
      }
      published = { ...existing, permissions, updatedAt: this.stamp(), operationId: record.id };
      secrets = { ...existingSecrets, oauth: opSecrets.oauth ?? existingSecrets.oauth };
    }
    // Secrets first: the published config never names a connection whose credentials are missing.
    await store.secrets.write({
      ...store.secrets.value,
      connections: { ...store.secrets.value.connections, [record.name]: secrets },
    });
    await this.publish(record.name, published);
    await operations.update(record.id, { saved: true });
    await operations.dropSecrets(record.id);
    let status: LiveStatus;
    try {
      status = await this.apply(record.name);
    } catch {
      const failed = await operations.fail(record.id, ["committing"], {
        code: "APPLY_FAILED",
        message: "The configuration was saved but could not be applied.",
      });
      return snapshotOf(failed ?? operations.get(record.id));
    }
    const runtime = runtimeResult(status);
    if (status.status === "failed" || status.status === "needs_auth") {
      const failed = await operations.fail(record.id, ["committing"], {
        code: "APPLY_FAILED",
        message: `Saved, but the connection is ${status.status.replace("_", " ")}${status.reason ? `: ${status.reason}` : "."}`,
      });
      if (failed !== null) return snapshotOf(await operations.update(record.id, { runtime }));
      return snapshotOf(await operations.update(record.id, { runtime }));
    }
    const done = await operations.transition(record.id, ["committing"], "complete", { runtime });
    return snapshotOf(done ?? (await operations.update(record.id, { runtime })));
  }

  private async publish(name: string, published: PublishedConnection): Promise<void> {
    const { connections } = this.deps.store;
    await connections.write({
      ...connections.value,
      connections: { ...connections.value.connections, [name]: published },
    });
  }

  private apply(name: string): Promise<LiveStatus> {
    const published = this.publishedOf(name);
    const secrets = this.deps.store.secrets.value.connections[name];
    return this.deps.live.apply({
      name,
      target: liveTargetOf(published, secrets, this.deps.catalog),
      enabled: published.enabled,
      permissions: published.permissions,
      oauth: secrets?.oauth ? { binding: secrets.oauth.binding, client: secrets.oauth.client } : null,
    });
  }

  private publishedOf(name: string): PublishedConnection {
    const published = this.deps.store.connections.value.connections[name];
    if (published === undefined) throw methodError("NOT_FOUND", `No connection named ${name} is configured.`);
    return published;
  }

  private stamp(): string {
    return new Date(this.deps.now()).toISOString();
  }
}

function runtimeResult(status: LiveStatus): NonNullable<OperationRecord["runtime"]> {
  return {
    applied: status.status === "connected" || status.status === "disabled",
    status: status.status,
    reason: status.reason,
  };
}
