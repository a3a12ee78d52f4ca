import { createHash } from "node:crypto";
import { methodError } from "../plugin/errors.js";
import type { AccessCreateInput, AccessView } from "../plugin/runtime-api.js";
import { canonicalJson } from "../plugin/setup/canonical.js";
import type {
  AccessCallErrorCode,
  AccessKey,
  AccessRegistry,
  ExternalTool,
  ExternalToolResult,
} from "./access-contract.js";
import type { AgentTool, GatewayHost } from "./contract.js";
import type { LiveManager } from "./live-contract.js";
import type { AccessRecord, ProfileStore } from "./store.js";

export const MCP_ENDPOINT_PATH = "/mcp";
const MAX_KEYS = 256;
/** Revoked and expired keys stay listed this long, then make room. */
const KEEP_ENDED_MS = 7 * 86_400_000;
const SWEEP_MS = 1_000;

type AccessStatus = AccessView["status"];

interface EligibleTool extends ExternalTool {
  source: "conversation" | "connection";
  connection: string | null;
  run(args: Record<string, unknown>, sessionKey: string, signal: AbortSignal): Promise<unknown>;
}

/**
 * External access keys of one profile: created by the owner with a digest of a secret the client made,
 * bound to one conversation and an exact set of tools, expiring, revocable. It is also the registry the
 * /mcp endpoint authenticates against and calls through.
 */
export class AccessBook implements AccessRegistry {
  private readonly conversations = new Set<string>();
  private readonly listeners = new Set<(keyId: string) => void>();
  private readonly announcedEnded = new Set<string>();
  /** Digest → record for authenticate, built for one access map (see recordByDigest). */
  private digestIndex: { access: Record<string, AccessRecord>; byDigest: Map<string, AccessRecord> } | null =
    null;
  /** The AccessKey of a record, made once: a record is replaced, never edited, when its key changes. */
  private readonly keys = new WeakMap<AccessRecord, AccessKey>();
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly deps: { host: GatewayHost; store: ProfileStore; live: LiveManager; now: () => number },
  ) {}

  async start(): Promise<void> {
    for (const { sessionKey } of await this.deps.host.conversations.list())
      this.conversations.add(sessionKey);
    this.unsubscribe = this.deps.host.conversations.onDeleted((sessionKey) => {
      this.conversations.delete(sessionKey);
      void this.orphanKeysOf(sessionKey);
    });
    // Keys whose conversation vanished while the gateway was down end the same way.
    for (const record of this.records()) {
      if (!this.conversations.has(record.sessionKey)) await this.orphanKeysOf(record.sessionKey);
    }
    // Expiry must also stop calls already in flight, not only the next request.
    this.sweeper = setInterval(() => this.announceEnded(), SWEEP_MS);
    this.sweeper.unref();
  }

  close(): void {
    clearInterval(this.sweeper);
    this.unsubscribe?.();
  }

  async catalog(sessionKey: string | undefined) {
    const all = await this.deps.host.conversations.list();
    for (const { sessionKey: key } of all) this.conversations.add(key);
    if (sessionKey !== undefined && !all.some((conversation) => conversation.sessionKey === sessionKey)) {
      throw methodError("NOT_FOUND", "No conversation with that sessionKey.");
    }
    const conversations = sessionKey === undefined ? all : all.filter((c) => c.sessionKey === sessionKey);
    const tools = [...this.eligible().values()].map(({ name, description, source, connection }) => ({
      name,
      description,
      source,
      connection,
    }));
    return {
      conversations: conversations.map(({ sessionKey: key, title }) => ({ sessionKey: key, title })),
      tools,
    };
  }

  async create(input: AccessCreateInput): Promise<AccessView> {
    const { store, now, host } = this.deps;
    // The one await comes first: every check below and the write then run without a gap, so two
    // concurrent creates can never both pass the id and digest checks.
    const conversationExists = await host.conversations.exists(input.sessionKey);
    const paramsDigest = createHash("sha256").update(canonicalJson(input)).digest("hex");
    const existing = store.state.value.access[input.id];
    if (existing !== undefined && Object.hasOwn(store.state.value.access, input.id)) {
      if (existing.paramsDigest === paramsDigest) return this.view(existing);
      throw methodError("CONFLICT", "This key id was already used with different params.");
    }
    if (new Set(input.tools).size !== input.tools.length) {
      throw methodError("INVALID_PARAMS", "params.tools lists a tool twice.");
    }
    const gatewayDigest = createHash("sha256").update(host.getGatewayToken(), "utf8").digest("hex");
    if (input.tokenDigest === gatewayDigest) {
      throw methodError(
        "ACCESS_INVALID",
        "That secret is the gateway token; an external agent must never hold it.",
      );
    }
    if (this.records().some((record) => record.tokenDigest === input.tokenDigest)) {
      throw methodError("ACCESS_INVALID", "That secret is already in use by another key; make a fresh one.");
    }
    if (!conversationExists) throw methodError("NOT_FOUND", "No conversation with that sessionKey.");
    this.conversations.add(input.sessionKey);
    const eligible = this.eligible();
    const outside = input.tools.filter((name) => !eligible.has(name));
    if (outside.length > 0) {
      throw methodError(
        "ACCESS_INVALID",
        `Tools not in the access catalog: ${outside.slice(0, 5).join(", ")}.`,
      );
    }
    const at = now();
    const kept = this.records().filter(
      (record) => this.statusOf(record, at) === "active" || at - endOf(record) < KEEP_ENDED_MS,
    );
    if (kept.length >= MAX_KEYS)
      throw methodError(
        "LIMIT_REACHED",
        `At most ${MAX_KEYS} keys are kept (revoked and expired ones for 7 days); try again when old ones age out.`,
      );
    const record: AccessRecord = {
      id: input.id,
      label: input.label,
      sessionKey: input.sessionKey,
      tools: [...input.tools],
      tokenDigest: input.tokenDigest,
      createdAt: at,
      expiresAt: at + input.ttlSeconds * 1000,
      revokedAt: null,
      paramsDigest,
    };
    const state = store.state.value;
    const access = Object.fromEntries(kept.map((kept) => [kept.id, kept]));
    await store.state.write({ ...state, access: { ...access, [record.id]: record } });
    return this.view(record);
  }

  list(): { credentials: AccessView[]; endpointPath: string; localEndpoint: string | null } {
    const base = this.deps.host.localBaseUrl?.() ?? null;
    return {
      credentials: this.records()
        .sort((a, b) => a.createdAt - b.createdAt)
        .map((record) => this.view(record)),
      endpointPath: MCP_ENDPOINT_PATH,
      localEndpoint: base === null ? null : `${base}${MCP_ENDPOINT_PATH}`,
    };
  }

  async revoke(id: string): Promise<AccessView> {
    const { store, now } = this.deps;
    const record = store.state.value.access[id];
    if (record === undefined || !Object.hasOwn(store.state.value.access, id)) {
      throw methodError("NOT_FOUND", "No access key with that id.");
    }
    if (record.revokedAt !== null) return this.view(record);
    const revoked = { ...record, revokedAt: now() };
    const state = store.state.value;
    // Invalid at once, in memory, before the write: no request may pass in between.
    store.state.value = { ...state, access: { ...state.access, [id]: revoked } };
    this.invalidate(id);
    await store.state.write(store.state.value);
    return this.view(revoked);
  }

  authenticate(secretDigest: string): AccessKey | null {
    const record = this.recordByDigest(secretDigest);
    if (record === undefined || this.statusOf(record, this.deps.now()) !== "active") return null;
    let key = this.keys.get(record);
    if (key === undefined) {
      key = {
        id: record.id,
        label: record.label,
        sessionKey: record.sessionKey,
        tools: record.tools,
        expiresAt: record.expiresAt,
      };
      this.keys.set(record, key);
    }
    return key;
  }

  async toolsFor(key: AccessKey): Promise<ExternalTool[]> {
    const eligible = this.eligible();
    return key.tools.flatMap((name) => {
      const tool = eligible.get(name);
      return tool === undefined
        ? []
        : [{ name, description: tool.description, inputSchema: tool.inputSchema }];
    });
  }

  async callTool(
    key: AccessKey,
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ExternalToolResult> {
    const tool = key.tools.includes(name) ? this.eligibleTool(name) : undefined;
    if (tool === undefined) throw callError("UNKNOWN_TOOL", `Unknown tool: ${name.slice(0, 128)}`);
    try {
      return asResult(await tool.run(args, key.sessionKey, signal));
    } catch (error) {
      if (signal.aborted) throw callError("CANCELLED", "The call was cancelled.");
      const code = (error as { code?: unknown }).code;
      if (code === "NOT_FOUND" || code === "NOT_PERMITTED")
        throw callError("UNKNOWN_TOOL", `Unknown tool: ${name}`);
      if (code === "NEEDS_AUTH" || code === "UNAVAILABLE") {
        throw callError("UNAVAILABLE", "The tool's server is not available right now.");
      }
      throw callError("CALL_FAILED", "The tool call failed.");
    }
  }

  onInvalidated(listener: (keyId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A deleted conversation ends its keys for good, in memory at once and then on disk. */
  private async orphanKeysOf(sessionKey: string): Promise<void> {
    const { store, now } = this.deps;
    const state = store.state.value;
    const orphaned = Object.values(state.access).filter(
      (record) => record.sessionKey === sessionKey && (record.orphanedAt ?? null) === null,
    );
    if (orphaned.length === 0) return;
    const at = now();
    const access = { ...state.access };
    for (const record of orphaned) access[record.id] = { ...record, orphanedAt: at };
    store.state.value = { ...state, access };
    for (const record of orphaned) this.invalidate(record.id);
    await store.state.flush();
  }

  private records(): AccessRecord[] {
    return Object.values(this.deps.store.state.value.access);
  }

  /**
   * The record with this digest (the first, as a scan would find it). The index follows the access map's
   * identity: every change of a key (create, revoke, orphan, a load) replaces the map, never edits it.
   */
  private recordByDigest(digest: string): AccessRecord | undefined {
    const access = this.deps.store.state.value.access;
    if (this.digestIndex?.access !== access) {
      const byDigest = new Map<string, AccessRecord>();
      for (const record of Object.values(access)) {
        if (!byDigest.has(record.tokenDigest)) byDigest.set(record.tokenDigest, record);
      }
      this.digestIndex = { access, byDigest };
    }
    return this.digestIndex.byDigest.get(digest);
  }

  private statusOf(record: AccessRecord, at: number): AccessStatus {
    if (record.revokedAt !== null) return "revoked";
    if (at >= record.expiresAt) return "expired";
    if ((record.orphanedAt ?? null) !== null || !this.conversations.has(record.sessionKey))
      return "unavailable";
    return "active";
  }

  private view(record: AccessRecord): AccessView {
    return {
      id: record.id,
      label: record.label,
      sessionKey: record.sessionKey,
      tools: [...record.tools],
      createdAt: new Date(record.createdAt).toISOString(),
      expiresAt: new Date(record.expiresAt).toISOString(),
      status: this.statusOf(record, this.deps.now()),
    };
  }

  private invalidate(id: string): void {
    this.announcedEnded.add(id);
    for (const listener of this.listeners) listener(id);
  }

  private announceEnded(): void {
    const at = this.deps.now();
    for (const record of this.records()) {
      if (!this.announcedEnded.has(record.id) && this.statusOf(record, at) !== "active")
        this.invalidate(record.id);
    }
  }

  /**
   * The one tool `eligible()` would give under this name, found without building the whole map: the last
   * conversation tool of that name, else the first enabled connection (in published order) that exposes
   * `<connection>__<tool>` now.
   */
  private eligibleTool(name: string): EligibleTool | undefined {
    let conversation: AgentTool | undefined;
    for (const tool of this.deps.host.conversationTools ?? []) if (tool.name === name) conversation = tool;
    if (conversation !== undefined) return conversationTool(conversation);
    const published = this.deps.store.connections.value.connections;
    for (const connection in published) {
      if (!Object.hasOwn(published, connection) || !name.startsWith(`${connection}__`)) continue;
      if (!published[connection]?.enabled) continue;
      const toolName = name.slice(connection.length + 2);
      const tool = this.deps.live.exposedTools(connection).find((candidate) => candidate.name === toolName);
      if (tool !== undefined) return connectionTool(this.deps.live, connection, tool);
    }
    return undefined;
  }

  /** Every tool a key may be given now: the host's conversation tools and live connections' exposed tools. */
  private eligible(): Map<string, EligibleTool> {
    const tools = new Map<string, EligibleTool>();
    for (const tool of this.deps.host.conversationTools ?? []) tools.set(tool.name, conversationTool(tool));
    const published = this.deps.store.connections.value.connections;
    for (const [connection, config] of Object.entries(published)) {
      if (!config.enabled) continue;
      for (const tool of this.deps.live.exposedTools(connection)) {
        const name = `${connection}__${tool.name}`;
        if (tools.has(name)) continue;
        tools.set(name, connectionTool(this.deps.live, connection, tool));
      }
    }
    return tools;
  }
}

function conversationTool(tool: AgentTool): EligibleTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    source: "conversation",
    connection: null,
    run: (args, sessionKey, signal) => tool.call(args, { sessionKey, signal }),
  };
}

function connectionTool(
  live: LiveManager,
  connection: string,
  tool: { name: string; description: string; inputSchema: Record<string, unknown> },
): EligibleTool {
  return {
    name: `${connection}__${tool.name}`,
    description: tool.description,
    inputSchema: tool.inputSchema,
    source: "connection",
    connection,
    run: (args, _sessionKey, signal) => live.callTool(connection, tool.name, args, signal),
  };
}

function endOf(record: AccessRecord): number {
  return record.revokedAt ?? record.expiresAt;
}

function asResult(value: unknown): ExternalToolResult {
  if (
    typeof value === "object" &&
    value !== null &&
    Array.isArray((value as { content?: unknown }).content)
  ) {
    return value as ExternalToolResult;
  }
  return {
    content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value ?? null) }],
  };
}

function callError(
  code: AccessCallErrorCode,
  message: string,
): { code: AccessCallErrorCode; message: string } {
  return { code, message };
}
