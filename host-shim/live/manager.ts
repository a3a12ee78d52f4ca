import type { DiscoveredTool, Discovery } from "../../plugin/mcp-client/types.js";
import { DEFAULT_BACKOFF } from "./backoff.js";
import { LiveConnection } from "./connection.js";
import { TokenKeeper } from "./tokens.js";
import { type LiveDeps, type LiveSpec, type LiveStatus, liveCallError } from "./types.js";

export const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * The profile runtime's live MCP connections, by name. Each connected server's exposed tools are
 * registered with the agent's registry as `<connection>__<tool>`; the registry always holds exactly
 * the exposed set (see exposure.ts for the rule).
 */
export class LiveConnections {
  private readonly connections = new Map<string, LiveConnection>();
  /** Token keepers outlive a removed connection while a refresh runs, so no refresh token is spent twice. */
  private readonly keepers = new Map<string, TokenKeeper>();
  private closed = false;

  constructor(private readonly deps: LiveDeps) {}

  /** (Re)connects with the new spec; resolves when the first connect attempt settled. */
  async apply(spec: LiveSpec): Promise<LiveStatus> {
    if (this.closed) throw new Error("live connections are closed");
    let connection = this.connections.get(spec.name);
    if (connection === undefined) {
      connection = new LiveConnection(spec, {
        tools: this.deps.tools,
        logger: this.deps.logger,
        keeper: this.keeperFor(spec.name),
        fetch: this.deps.fetch,
        timeoutMs: this.deps.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        backoff: this.deps.backoff ?? DEFAULT_BACKOFF,
        onChange: () => this.deps.onChange?.(spec.name),
      });
      this.connections.set(spec.name, connection);
    }
    await connection.apply(spec);
    return connection.status();
  }

  /** Closes the connection and unregisters its tools. Unknown names are a no-op. */
  async remove(name: string): Promise<void> {
    const connection = this.connections.get(name);
    if (connection === undefined) return;
    this.connections.delete(name);
    await connection.remove();
    const keeper = this.keepers.get(name);
    if (keeper !== undefined && !keeper.busy) this.keepers.delete(name);
    this.notify(name);
  }

  status(name: string): LiveStatus | null {
    return this.connections.get(name)?.status() ?? null;
  }

  discovery(name: string): Discovery | null {
    return this.connections.get(name)?.discovery() ?? null;
  }

  exposedTools(name: string): DiscoveredTool[] {
    return this.connections.get(name)?.exposedTools() ?? [];
  }

  names(): string[] {
    return [...this.connections.keys()];
  }

  /**
   * Calls a tool of a connection under the same exposure rules as the agent's registry. Rejects with a
   * LiveCallError (`code`: NOT_FOUND, UNAVAILABLE, NOT_PERMITTED, NEEDS_AUTH, CALL_FAILED, CANCELLED).
   */
  async callTool(
    name: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<unknown> {
    const connection = this.connections.get(name);
    if (connection === undefined) throw liveCallError("NOT_FOUND", "No connection with that name.");
    return connection.call(tool, args, signal);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.connections.keys()].map((name) => this.remove(name)));
  }

  private keeperFor(name: string): TokenKeeper {
    let keeper = this.keepers.get(name);
    if (keeper === undefined) {
      keeper = new TokenKeeper(name, {
        vault: this.deps.vault,
        now: this.deps.now,
        ...(this.deps.fetch ? { fetch: this.deps.fetch } : {}),
        onDead: () => this.connections.get(name)?.needsAuth(),
      });
      this.keepers.set(name, keeper);
    }
    return keeper;
  }

  private notify(name: string): void {
    try {
      this.deps.onChange?.(name);
    } catch {
      this.deps.logger.warn({ connection: name }, "live connection change listener threw");
    }
  }
}
