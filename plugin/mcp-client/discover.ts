/**
 * Discovery: what a server offers (every tool, with its hash; whether resources and prompts work).
 * `discover` connects, lists and closes; `listDiscovery` lists on a client someone else holds open.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { type ConnectOptions, connectClient } from "./connect.js";
import {
  type ConnectionFailedError,
  connectionFailed,
  failed,
  isConnectionFailed,
  networkFailure,
  notMcp,
  timeoutFailure,
} from "./failure.js";
import { networkProblemOf, startDeadline, withinDeadline } from "./observed-fetch.js";
import { toolDefinitionHash } from "./tool-hash.js";
import type { DiscoveredTool, Discovery, DiscoveryOutcome, ServerTarget, TransportKind } from "./types.js";

/** Pages of tools/list followed before the server is considered broken. */
export const MAX_TOOL_PAGES = 100;
/** Default per-request timeout of listDiscovery when none is given. */
const DEFAULT_LIST_TIMEOUT_MS = 30_000;

export interface ListOptions {
  /** Per-request timeout; also the bound on the whole listing when no signal is given. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type DiscoverOptions = Omit<ConnectOptions, "onClose">;

/** Connects, lists everything and closes; the whole run is bounded by options.timeoutMs. */
export async function discover(target: ServerTarget, options: DiscoverOptions): Promise<DiscoveryOutcome> {
  const deadline = startDeadline(options.timeoutMs);
  const connected = await connectClient(target, options);
  try {
    if (!connected.ok) return connected.outcome;
    try {
      const listing = listDiscovery(connected.client, connected.transport, {
        timeoutMs: options.timeoutMs,
        signal: deadline.signal,
      });
      return { kind: "ok", discovery: await withinDeadline(listing, deadline) };
    } catch (error) {
      if (deadline.expired()) return timeoutFailure(options.timeoutMs, "The server");
      if (isConnectionFailed(error)) return failed(error.reason, error.message);
      return notMcp();
    }
  } finally {
    deadline.clear();
    // Closing (a Streamable HTTP session DELETE, a stdio child's exit) can take seconds; the result
    // does not depend on it, so the owner is not kept waiting for it.
    if (connected.ok) void connected.close().catch(() => undefined);
  }
}

/**
 * Lists all tools (following pagination), and checks resources and prompts: each is true only when the
 * server declares the capability AND its list call succeeds. Throws a CONNECTION_FAILED MethodError with
 * a `reason` (FailureReason) when tools cannot be listed.
 */
export async function listDiscovery(
  client: Client,
  transport: TransportKind,
  options: ListOptions = {},
): Promise<Discovery> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LIST_TIMEOUT_MS;
  const request: RequestOptions = {
    timeout: timeoutMs,
    ...(options.signal ? { signal: options.signal } : {}),
  };
  const capabilities = client.getServerCapabilities() ?? {};
  const tools = capabilities.tools ? await listAllTools(client, request, timeoutMs) : [];
  const resources = capabilities.resources
    ? await succeeds(() => client.listResources(undefined, request))
    : false;
  const prompts = capabilities.prompts ? await succeeds(() => client.listPrompts(undefined, request)) : false;
  return { transport, tools, resources, prompts };
}

async function listAllTools(
  client: Client,
  request: RequestOptions,
  timeoutMs: number,
): Promise<DiscoveredTool[]> {
  const tools: DiscoveredTool[] = [];
  const names = new Set<string>();
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    let result: Awaited<ReturnType<Client["listTools"]>>;
    try {
      result = await client.listTools(cursor === undefined ? undefined : { cursor }, request);
    } catch (error) {
      throw listFailure(error, timeoutMs);
    }
    for (const tool of result.tools) {
      if (names.has(tool.name)) {
        throw connectionFailed(failed("not_mcp", "The server lists the same tool name more than once."));
      }
      names.add(tool.name);
      tools.push(toDiscoveredTool(tool));
    }
    cursor = result.nextCursor;
    if (cursor === undefined) return tools;
    if (cursors.has(cursor)) {
      throw connectionFailed(failed("not_mcp", "The server's tool list pages loop back on themselves."));
    }
    cursors.add(cursor);
  }
  throw connectionFailed(failed("not_mcp", `The server's tool list runs past ${MAX_TOOL_PAGES} pages.`));
}

type ListedTool = Awaited<ReturnType<Client["listTools"]>>["tools"][number];

export function toDiscoveredTool(tool: ListedTool): DiscoveredTool {
  const description = tool.description ?? "";
  const inputSchema = tool.inputSchema as Record<string, unknown>;
  return {
    name: tool.name,
    description,
    inputSchema,
    annotations: tool.annotations ? { ...tool.annotations } : null,
    hash: toolDefinitionHash({ name: tool.name, description, inputSchema }),
  };
}

async function succeeds(call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return true;
  } catch {
    return false;
  }
}

function listFailure(error: unknown, timeoutMs: number): ConnectionFailedError {
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout)
      return connectionFailed(timeoutFailure(timeoutMs, "The server"));
    if (error.code === ErrorCode.ConnectionClosed) {
      return connectionFailed(failed("unreachable", "The connection closed while listing tools."));
    }
    return connectionFailed(failed("not_mcp", "The server refused to list its tools."));
  }
  const status = (error as { code?: unknown } | null)?.code;
  if (typeof status === "number" && status >= 500) {
    return connectionFailed(
      failed("server_error", `The server failed while listing tools (HTTP ${status}).`),
    );
  }
  const problem = networkProblemOf(error);
  if (problem) return connectionFailed(networkFailure(problem));
  return connectionFailed(failed("not_mcp", "The server's tool list is not valid MCP."));
}
