import type { DiscoveredTool, Discovery } from "../../plugin/mcp-client/types.js";
import type { HostLogger, ToolRegistry } from "../contract.js";
import { backoffDelay } from "./backoff.js";
import { ToolBridge } from "./bridge.js";
import { exposableTools, isExposable, toolStatuses } from "./exposure.js";
import { listDiscovery } from "./mcp-client.js";
import { FAILURE_TEXT, REASON, callRefused, isServerAnswer, retrying } from "./reasons.js";
import { type Session, openSession } from "./session.js";
import { type TokenKeeper, isTokenError } from "./tokens.js";
import {
  type BackoffOptions,
  type LiveSpec,
  type LiveState,
  type LiveStatus,
  liveCallError,
} from "./types.js";

export interface ConnectionDeps {
  tools: ToolRegistry;
  logger: HostLogger;
  keeper: TokenKeeper;
  fetch: typeof fetch | undefined;
  timeoutMs: number;
  backoff: BackoffOptions;
  onChange: () => void;
}

function sameServer(a: LiveSpec, b: LiveSpec): boolean {
  return JSON.stringify([a.target, a.oauth]) === JSON.stringify([b.target, b.oauth]);
}

/**
 * One named live connection: connects, discovers, keeps the agent's registry equal to the exposed
 * tools, follows tools/list_changed, reconnects with backoff after a drop. Every async continuation
 * checks `epoch`, which changes whenever the connection is torn down, so stale work never registers.
 */
export class LiveConnection {
  private state: LiveState = "connecting";
  private reason: string | null = null;
  private discovered: DiscoveredTool[] = [];
  /** What the open session last listed, whole: an owner's permission review reads it. */
  private lastDiscovery: Discovery | null = null;
  private readonly bridge: ToolBridge;
  private session: Session | null = null;
  private epoch = 0;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private relisting: Promise<void> | null = null;
  private relistAgain = false;
  private checking = false;
  private removed = false;
  private lastEmitted = "";

  constructor(
    public spec: LiveSpec,
    private readonly deps: ConnectionDeps,
  ) {
    this.bridge = new ToolBridge(spec.name, deps.tools, deps.logger, (tool, args, signal) =>
      this.call(tool, args, signal),
    );
  }

  get name(): string {
    return this.spec.name;
  }

  /** The live session's current listing while connected; null otherwise. */
  discovery(): Discovery | null {
    return this.state === "connected" ? this.lastDiscovery : null;
  }

  /** Definitions of the tools exposed right now: what an external key may be shown of this connection. */
  exposedTools(): DiscoveredTool[] {
    const registered = this.bridge.hashes();
    return this.discovered.filter((tool) => registered.get(tool.name) === tool.hash);
  }

  status(): LiveStatus {
    return {
      status: this.state,
      reason: this.reason,
      tools: toolStatuses(this.spec.permissions, this.discovered, this.bridge.hashes()),
    };
  }

  /** Takes a new spec; resolves once the first connect attempt (if any) has settled. */
  async apply(spec: LiveSpec): Promise<void> {
    const keep = sameServer(this.spec, spec) && this.state === "connected" && this.session !== null;
    this.spec = spec;
    this.deps.keeper.oauth = spec.oauth;
    if (!spec.enabled) return this.stop("disabled", null);
    if (keep) {
      // Same server and session: apply the new permissions now, then re-list for fresh hashes.
      this.sync();
      this.changed();
      return this.relist();
    }
    await this.stop("connecting", null);
    this.attempt = 0;
    await this.connect(this.epoch);
  }

  async remove(): Promise<void> {
    this.removed = true;
    await this.stop("disabled", null);
  }

  /** The refresh chain died or the server wants a new authorization: no retries until a new apply. */
  needsAuth(): void {
    if (this.removed || this.state === "disabled" || this.state === "needs_auth") return;
    this.deps.logger.warn({ connection: this.name }, "MCP connection needs the owner to authorize again");
    void this.stop("needs_auth", REASON.needsAuth);
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const session = this.session;
    if (this.state !== "connected" || session === null) throw this.unavailable();
    const def = this.discovered.find((t) => t.name === tool);
    if (def === undefined || !isExposable(this.spec.permissions, def)) {
      throw liveCallError("NOT_PERMITTED", "That tool is not permitted on this connection.");
    }
    if (signal.aborted) throw liveCallError("CANCELLED", "The call was cancelled.");
    try {
      await this.deps.keeper.fresh();
    } catch (error) {
      if (isTokenError(error) && error.code === "NEEDS_AUTH") throw this.unavailable();
      throw liveCallError("UNAVAILABLE", REASON.refresh);
    }
    if (this.session !== session) throw this.unavailable();
    try {
      return await session.client.callTool({ name: tool, arguments: args }, undefined, { signal });
    } catch (error) {
      if (signal.aborted) throw liveCallError("CANCELLED", "The call was cancelled.");
      if (this.session !== session) throw this.unavailable();
      if (isServerAnswer(error)) throw callRefused(error);
      this.suspect(session);
      throw liveCallError("UNAVAILABLE", "The call could not reach the server.");
    }
  }

  private unavailable() {
    if (this.state === "needs_auth") return liveCallError("NEEDS_AUTH", REASON.needsAuth);
    return liveCallError("UNAVAILABLE", "The server is not connected.");
  }

  private async connect(epoch: number): Promise<void> {
    this.timer = null;
    if (epoch !== this.epoch) return;
    try {
      await this.connectOnce(epoch);
    } catch (error) {
      if (epoch !== this.epoch) return;
      this.deps.logger.error(
        { connection: this.name, error: (error as Error)?.name },
        "MCP connect failed unexpectedly",
      );
      this.dropSession();
      this.retryLater(FAILURE_TEXT.unreachable);
    }
  }

  private async connectOnce(epoch: number): Promise<void> {
    this.setState("connecting", this.reason);
    const current = () => epoch === this.epoch;
    const opened = await openSession(
      this.spec,
      { keeper: this.deps.keeper, fetch: this.deps.fetch, timeoutMs: this.deps.timeoutMs, current },
      {
        onClose: (session) => this.lost(session),
        onError: (session) => this.suspect(session),
        onListChanged: (session) => {
          if (this.session === session) void this.relist();
        },
      },
    );
    if (opened === null || !current()) return;
    switch (opened.kind) {
      case "needs_auth":
        return this.needsAuth();
      case "retry":
      case "fail":
        this.deps.logger.warn({ connection: this.name, reason: opened.reason }, "MCP connect failed");
        return opened.kind === "retry" ? this.retryLater(opened.text) : this.fail(opened.text);
      case "open":
        this.session = opened.session;
        this.discovered = opened.tools;
        this.lastDiscovery = opened.discovery;
        this.attempt = 0;
        this.setState("connected", null);
        this.deps.logger.info(
          { connection: this.name, transport: opened.session.transport },
          "MCP connection live",
        );
        if (opened.stale) void this.relist();
    }
  }

  /**
   * Re-reads the current session's tool list and re-syncs. Serialized: a request while one runs makes
   * it run once more. Listing fails closed: a reconnect re-lists from scratch (and settles as failed if
   * the listing stays broken) rather than keep exposing definitions that may have changed.
   */
  private relist(): Promise<void> {
    if (this.relisting) {
      this.relistAgain = true;
      return this.relisting;
    }
    const run = async () => {
      do {
        this.relistAgain = false;
        const { session, epoch } = this;
        if (session === null) return;
        let listed: Discovery;
        try {
          listed = await listDiscovery(session.client, session.transport, { timeoutMs: this.deps.timeoutMs });
        } catch {
          this.lost(session);
          return;
        }
        if (epoch !== this.epoch) return; // a new session lists for itself
        this.discovered = listed.tools;
        this.lastDiscovery = listed;
        this.sync();
        this.changed();
      } while (this.relistAgain);
    };
    const promise = run().finally(() => {
      if (this.relisting === promise) this.relisting = null;
    });
    this.relisting = promise;
    return promise;
  }

  /** Something went wrong on the session: a ping decides whether it is still alive. */
  private suspect(session: Session): void {
    if (this.session !== session || this.checking) return;
    this.checking = true;
    session.client
      .ping({ timeout: this.deps.timeoutMs })
      .then(
        () => undefined,
        () => this.lost(session),
      )
      .finally(() => {
        this.checking = false;
      });
  }

  /** The session is gone (transport closed, or it failed a liveness check): reconnect with backoff. */
  private lost(session: Session): void {
    if (this.session !== session) return;
    this.epoch++;
    this.dropSession();
    this.deps.logger.warn({ connection: this.name }, "MCP connection dropped; reconnecting");
    this.retryLater(REASON.dropped);
  }

  private retryLater(text: string): void {
    this.unregisterAll();
    this.setState("connecting", retrying(text));
    const delay = backoffDelay(this.attempt++, this.deps.backoff);
    const epoch = this.epoch;
    const timer = setTimeout(() => void this.connect(epoch), delay);
    timer.unref?.();
    this.timer = timer;
  }

  private fail(text: string): void {
    this.dropSession();
    this.unregisterAll();
    this.setState("failed", text);
  }

  /** Tears down whatever runs and settles in `state`; later continuations of the old epoch do nothing. */
  private async stop(state: LiveState, reason: string | null): Promise<void> {
    this.epoch++;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const session = this.session;
    this.session = null;
    this.unregisterAll();
    this.setState(state, reason);
    if (session) await session.close().catch(() => undefined);
  }

  private dropSession(): void {
    const session = this.session;
    this.session = null;
    if (session) void session.close().catch(() => undefined);
  }

  private setState(state: LiveState, reason: string | null): void {
    const before = this.state;
    this.state = state;
    this.reason = reason;
    this.sync();
    if (before !== state)
      this.deps.logger.info({ connection: this.name, status: state }, "MCP connection status");
    this.changed();
  }

  /** Makes the registry hold exactly this connection's exposed tools (none unless connected). */
  private sync(): void {
    const live = this.state === "connected" && this.session !== null;
    this.bridge.sync(live ? exposableTools(this.spec.permissions, this.discovered) : new Map());
  }

  private unregisterAll(): void {
    this.bridge.clear();
  }

  private changed(): void {
    if (this.removed) return;
    const snapshot = JSON.stringify(this.status());
    if (snapshot === this.lastEmitted) return;
    this.lastEmitted = snapshot;
    try {
      this.deps.onChange();
    } catch {
      this.deps.logger.warn({ connection: this.name }, "live connection change listener threw");
    }
  }
}
