import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { MemoryToolRegistry } from "../../fixtures/gateway/tools.js";
import { closeServer, pathOf, sendText } from "../../fixtures/servers/http-util.js";
import { createSessionHost } from "../../fixtures/servers/mcp-host.js";
import {
  type ToolCall,
  newServer,
  registerStandardExtras,
  registerStandardTools,
} from "../../fixtures/servers/tools.js";
import type { HostLogger } from "../../host-shim/contract.js";
import { LiveConnections } from "../../host-shim/live/manager.js";
import type { BackoffOptions, LiveSpec, PermissionRecord, TokenVault } from "../../host-shim/live/types.js";
import { discover } from "../../plugin/mcp-client/discover.js";
import type { ServerTarget, StoredTokens } from "../../plugin/mcp-client/types.js";

export { rejection, sleep, textOf, waitFor } from "../fixtures/helpers.js";

export interface LogEntry {
  level: "info" | "warn" | "error";
  fields: Record<string, unknown>;
  message: string;
}

export class RecordingLogger implements HostLogger {
  readonly entries: LogEntry[] = [];
  info(fields: Record<string, unknown>, message: string): void {
    this.entries.push({ level: "info", fields, message });
  }
  warn(fields: Record<string, unknown>, message: string): void {
    this.entries.push({ level: "warn", fields, message });
  }
  error(fields: Record<string, unknown>, message: string): void {
    this.entries.push({ level: "error", fields, message });
  }
}

export class MemoryVault implements TokenVault {
  readonly tokens = new Map<string, StoredTokens>();
  readonly saves: Array<{ name: string; tokens: StoredTokens }> = [];
  get(name: string): StoredTokens | null {
    return this.tokens.get(name) ?? null;
  }
  async save(name: string, tokens: StoredTokens): Promise<void> {
    this.saves.push({ name, tokens });
    this.tokens.set(name, tokens);
  }
}

export interface Harness {
  live: LiveConnections;
  registry: MemoryToolRegistry;
  logger: RecordingLogger;
  vault: MemoryVault;
  changes: string[];
}

export function harness(
  options: { backoff?: BackoffOptions; timeoutMs?: number; fetch?: typeof fetch } = {},
): Harness {
  const registry = new MemoryToolRegistry();
  const logger = new RecordingLogger();
  const vault = new MemoryVault();
  const changes: string[] = [];
  const live = new LiveConnections({
    tools: registry,
    logger,
    vault,
    now: () => Date.now(),
    timeoutMs: options.timeoutMs ?? 3000,
    backoff: options.backoff ?? { initialMs: 50, maxMs: 400 },
    onChange: (name) => changes.push(name),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  return { live, registry, logger, vault, changes };
}

export function httpTarget(url: string): ServerTarget {
  return { kind: "http", url, headers: {} };
}

/** The hashes a setup would have shown the owner now: discovered through the real client layer. */
export async function currentHashes(
  target: ServerTarget,
  accessToken?: string,
): Promise<Record<string, string>> {
  const outcome = await discover(target, { timeoutMs: 5000, ...(accessToken ? { accessToken } : {}) });
  if (outcome.kind !== "ok") throw new Error(`discovery failed: ${outcome.kind}`);
  return Object.fromEntries(outcome.discovery.tools.map((t) => [t.name, t.hash]));
}

export function permissions(partial: Partial<PermissionRecord> = {}): PermissionRecord {
  return {
    mode: "all",
    include: [],
    exclude: [],
    resources: false,
    prompts: false,
    approved: {},
    ...partial,
  };
}

export function spec(
  name: string,
  target: ServerTarget,
  perms: PermissionRecord,
  extra: Partial<LiveSpec> = {},
): LiveSpec {
  return { name, target, enabled: true, permissions: perms, oauth: null, ...extra };
}

export interface PortServer {
  url: string;
  port: number;
  calls: ToolCall[];
  close(): Promise<void>;
}

/**
 * The plain fixture server (same tools, resource and prompt, built from the fixture's own parts) bound
 * to a chosen port, so a test can stop it and start it again at the same URL.
 */
export async function startPlainOnPort(port = 0): Promise<PortServer> {
  const calls: ToolCall[] = [];
  const host = createSessionHost(() => {
    const server = newServer("fixture-plain");
    registerStandardTools(server, (call) => calls.push(call));
    registerStandardExtras(server);
    return server;
  });
  const http: Server = createServer((req, res) => {
    if (pathOf(req) !== "/mcp") return sendText(res, 404, "not found");
    host.handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, "127.0.0.1", () => resolve());
  });
  const bound = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/mcp`,
    port: bound,
    calls,
    async close() {
      await host.close();
      await closeServer(http);
    },
  };
}
