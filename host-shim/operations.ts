import { createHmac, randomBytes } from "node:crypto";
import { type ErrorData, methodError } from "../plugin/errors.js";
import {
  type Draft,
  type Intent,
  type OperationRecord,
  type OperationSnapshot,
  type Phase,
  isTerminal,
  snapshotOf,
} from "../plugin/setup/operation.js";
import type { OperationSecrets, ProfileStore } from "./store.js";

export const OPERATION_LIFETIME_MS = 600_000;
/** How long a finished operation stays visible to mcp.setup.pending and status. */
export const RETAIN_TERMINAL_MS = 3_600_000;
/** How long a cancelled requestId keeps blocking a late begin. */
export const TOMBSTONE_MS = 86_400_000;
const MAX_OPERATIONS = 256;
const MAX_TOMBSTONES = 4096;

export interface NewOperation {
  requestId: string;
  name: string;
  intent: Intent;
  /** Canonical JSON of the params; only its keyed digest is kept. */
  paramsForDigest: string;
  draft: Draft;
  redirectUri: string | null;
  sessionKey: string | null;
  secrets: { env: Record<string, string>; headers: Record<string, string> };
  /** Starts in committing (connection actions) instead of checking. */
  committing?: boolean;
}

/**
 * The setup operations of one profile: creation with retry safety, phase transitions, expiry, retention
 * and cancelled request ids. Every check-and-change runs synchronously before its first await, so two
 * requests (e.g. 50 identical begins) can never both pass a check; writes then become durable in order.
 */
export class OperationTable {
  constructor(
    private readonly store: ProfileStore,
    private readonly now: () => number,
    private readonly isConfigured: (name: string) => boolean,
  ) {}

  digest(text: string): string {
    return createHmac("sha256", this.store.secrets.value.digestKey).update(text).digest("hex");
  }

  /** Creates an operation, or returns the one this requestId already made with the same params. */
  async create(input: NewOperation): Promise<{ record: OperationRecord; created: boolean }> {
    this.sweep();
    const state = this.store.state.value;
    if (state.tombstones.some((stone) => stone.requestId === input.requestId)) {
      throw methodError(
        "CANCELLED",
        "This requestId was cancelled; start a fresh setup with a fresh requestId.",
      );
    }
    const digest = this.digest(input.paramsForDigest);
    const existing = Object.values(state.operations).find((record) => record.requestId === input.requestId);
    if (existing !== undefined) {
      if (existing.digest !== digest) {
        throw methodError("CONFLICT", "This requestId was already used with different params.");
      }
      return { record: existing, created: false };
    }
    const live = Object.values(state.operations).find(
      (record) => record.name === input.name && !isTerminal(record.phase),
    );
    if (live !== undefined)
      throw methodError("BUSY", `Another operation (${live.id}) is in progress for ${input.name}.`);
    if (Object.keys(state.operations).length >= MAX_OPERATIONS) {
      throw methodError("BUSY", "Too many retained operations; wait for old ones to expire.");
    }
    const configured = this.isConfigured(input.name);
    if (input.intent === "connect" && configured) {
      throw methodError(
        "CONFIG_INVALID",
        `${input.name} is already configured; use intent reauthorize or permissions.`,
      );
    }
    if (input.intent !== "connect" && !configured) {
      throw methodError("NOT_FOUND", `No connection named ${input.name} is configured.`);
    }
    const now = this.now();
    const record: OperationRecord = {
      id: `op_${randomBytes(16).toString("hex")}`,
      requestId: input.requestId,
      name: input.name,
      intent: input.intent,
      digest,
      draft: input.draft,
      redirectUri: input.redirectUri,
      sessionKey: input.sessionKey,
      phase: input.committing === true ? "committing" : "checking",
      createdAt: now,
      expiresAt: now + OPERATION_LIFETIME_MS,
      updatedAt: now,
      endedAt: null,
      authorizationUrl: null,
      discovery: null,
      error: null,
      saved: false,
      runtime: null,
      permissions: null,
      callbackDigest: null,
    };
    const secrets = this.store.secrets.value;
    const opSecrets: OperationSecrets = { ...input.secrets, transaction: null, oauth: null };
    const nextSecrets = { ...secrets, operations: { ...secrets.operations, [record.id]: opSecrets } };
    const nextState = { ...state, operations: { ...state.operations, [record.id]: record } };
    // Both change in memory now, before any await; on disk secrets go first: a crash between the writes
    // leaves an orphan secret, never an operation without its credentials.
    this.store.secrets.value = nextSecrets;
    this.store.state.value = nextState;
    await this.store.secrets.flush();
    await this.store.state.flush();
    return { record, created: true };
  }

  get(id: string): OperationRecord {
    this.sweep();
    const record = this.store.state.value.operations[id];
    if (record === undefined || !Object.hasOwn(this.store.state.value.operations, id)) {
      throw methodError(
        "NOT_FOUND",
        "No operation with that id (finished operations are kept for one hour).",
      );
    }
    return record;
  }

  snapshot(id: string): OperationSnapshot {
    return snapshotOf(this.get(id));
  }

  list(filter: { sessionKey?: string | undefined }): OperationSnapshot[] {
    this.sweep();
    return Object.values(this.store.state.value.operations)
      .filter((record) => filter.sessionKey === undefined || record.sessionKey === filter.sessionKey)
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(snapshotOf);
  }

  /** Every retained operation, as stored. */
  records(): OperationRecord[] {
    this.sweep();
    return Object.values(this.store.state.value.operations);
  }

  secretsOf(id: string): OperationSecrets {
    const secrets = this.store.secrets.value.operations[id];
    if (secrets === undefined)
      throw methodError("NOT_FOUND", "That operation holds no credentials any more.");
    return secrets;
  }

  /**
   * Moves an operation from one of `from` to `to` with the given changes. Returns null (and changes
   * nothing) when it is no longer in `from`, e.g. a step finishing after a cancel.
   */
  async transition(
    id: string,
    from: readonly Phase[],
    to: Phase,
    changes: Partial<OperationRecord> = {},
  ): Promise<OperationRecord | null> {
    const record = this.get(id);
    if (!from.includes(record.phase)) return null;
    const now = this.now();
    const next: OperationRecord = {
      ...record,
      ...changes,
      phase: to,
      updatedAt: now,
      endedAt: isTerminal(to) ? now : null,
    };
    await this.put(next, isTerminal(to) && to !== "complete" ? "drop" : "keep");
    return next;
  }

  async setSecrets(id: string, change: Partial<OperationSecrets>): Promise<void> {
    const secrets = this.store.secrets.value;
    const current = this.secretsOf(id);
    await this.store.secrets.write({
      ...secrets,
      operations: { ...secrets.operations, [id]: { ...current, ...change } },
    });
  }

  async update(id: string, changes: Partial<OperationRecord>): Promise<OperationRecord> {
    const next = { ...this.get(id), ...changes, updatedAt: this.now() };
    await this.put(next, "keep");
    return next;
  }

  async fail(id: string, from: readonly Phase[], error: ErrorData): Promise<OperationRecord | null> {
    return this.transition(id, from, "failed", { error });
  }

  async tombstone(name: string, requestId: string): Promise<void> {
    const state = this.store.state.value;
    if (state.tombstones.some((stone) => stone.requestId === requestId)) return;
    const tombstones = [...state.tombstones, { name, requestId, at: this.now() }].slice(-MAX_TOMBSTONES);
    await this.store.state.write({ ...state, tombstones });
  }

  findByRequestId(requestId: string): OperationRecord | undefined {
    this.sweep();
    return Object.values(this.store.state.value.operations).find((record) => record.requestId === requestId);
  }

  /** Drops an operation's credentials (an OAuth transaction among them) once it no longer needs them. */
  async dropSecrets(id: string): Promise<void> {
    const secrets = this.store.secrets.value;
    if (!Object.hasOwn(secrets.operations, id)) return;
    const { [id]: _dropped, ...operations } = secrets.operations;
    await this.store.secrets.write({ ...secrets, operations });
  }

  private async put(record: OperationRecord, secrets: "keep" | "drop"): Promise<void> {
    const state = this.store.state.value;
    const nextState = { ...state, operations: { ...state.operations, [record.id]: record } };
    this.store.state.value = nextState;
    if (secrets === "drop") await this.dropSecrets(record.id);
    await this.store.state.flush();
  }

  /** Expires overdue operations and forgets old finished ones and old tombstones. Synchronous in memory. */
  private sweep(): void {
    const now = this.now();
    const state = this.store.state.value;
    let changed = false;
    const operations: Record<string, OperationRecord> = {};
    const dropSecretsOf: string[] = [];
    for (const [id, record] of Object.entries(state.operations)) {
      if (record.endedAt !== null && now - record.endedAt > RETAIN_TERMINAL_MS) {
        changed = true;
        dropSecretsOf.push(id);
        continue;
      }
      if (!isTerminal(record.phase) && record.phase !== "committing" && now >= record.expiresAt) {
        changed = true;
        dropSecretsOf.push(id);
        operations[id] = {
          ...record,
          phase: "expired",
          updatedAt: now,
          endedAt: now,
          error: { code: "EXPIRED", message: "The operation expired after 600 s; start a fresh setup." },
        };
        continue;
      }
      operations[id] = record;
    }
    const tombstones = state.tombstones.filter((stone) => now - stone.at <= TOMBSTONE_MS);
    if (tombstones.length !== state.tombstones.length) changed = true;
    if (!changed) return;
    const next = { ...state, operations, tombstones };
    void this.store.state.write(next).catch(() => undefined);
    for (const id of dropSecretsOf) void this.dropSecrets(id).catch(() => undefined);
  }
}
