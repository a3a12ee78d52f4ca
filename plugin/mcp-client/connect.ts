/**
 * Opening an MCP client connection to a ServerTarget: Streamable HTTP with the SDK's documented fallback
 * to legacy HTTP+SSE on a 4xx, or a stdio child. Every failure becomes a DiscoveryOutcome, never a throw.
 */
import { SSEClientTransport, SseError } from "@modelcontextprotocol/sdk/client/sse.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { authChallengeOutcome } from "./auth-challenge.js";
import {
  type ConnectOptions,
  type ConnectResult,
  type NotOk,
  attempt,
  established,
  notOk,
} from "./connect-session.js";
import { connectStdio } from "./connect-stdio.js";
import { type Failure, failed, networkFailure, notMcp, statusFailure, timeoutFailure } from "./failure.js";
import {
  type Deadline,
  type FetchFn,
  type Observation,
  type ObservedFetch,
  networkProblemOf,
  observeFetch,
  startDeadline,
} from "./observed-fetch.js";
import type { ServerTarget } from "./types.js";

export { type ConnectOptions, type ConnectResult, DEFAULT_CLIENT_NAME } from "./connect-session.js";

export async function connectClient(target: ServerTarget, options: ConnectOptions): Promise<ConnectResult> {
  const deadline = startDeadline(options.timeoutMs);
  try {
    return target.kind === "stdio"
      ? await connectStdio(target, options, deadline)
      : await connectHttp(target, options, deadline);
  } finally {
    deadline.clear();
  }
}

async function connectHttp(
  target: Extract<ServerTarget, { kind: "http" }>,
  options: ConnectOptions,
  deadline: Deadline,
): Promise<ConnectResult> {
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    return notOk(failed("not_found", "The server URL is not a valid URL."));
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return notOk(failed("not_found", "The server URL must start with http:// or https://."));
  }
  const observed = observeFetch(options.fetch ?? globalThis.fetch, deadline.signal);
  // The transport's requests may take another base fetch; what they see is observed in the same place.
  const forTransport =
    options.transportFetch === undefined
      ? observed
      : observeFetch(options.transportFetch, deadline.signal, observed.seen);
  try {
    return await connectHttpWith(url, target, options, deadline, observed, forTransport.fetch);
  } finally {
    // The deadline is cleared once connecting ends: later requests need not watch it.
    observed.release();
    forTransport.release();
  }
}

async function connectHttpWith(
  url: URL,
  target: Extract<ServerTarget, { kind: "http" }>,
  options: ConnectOptions,
  deadline: Deadline,
  observed: ObservedFetch,
  streamableFetch: FetchFn,
): Promise<ConnectResult> {
  const requestInit = { headers: requestHeaders(target.headers, options.accessToken ?? null) };

  const streamable = new StreamableHTTPClientTransport(url, { fetch: streamableFetch, requestInit });
  const first = await attempt(streamable, options, deadline);
  if (first.ok) return established(first.client, "streamable-http", streamable, options);
  if (deadline.expired()) return notOk(timeoutFailure(options.timeoutMs));
  const firstStatus = httpStatusOf(first.error, observed.seen);
  if (!fallsBackToSse(firstStatus)) {
    return notOk(await classifyHttp(first.error, firstStatus, observed, url, deadline, options.timeoutMs));
  }

  observed.seen.lastStatus = null;
  observed.seen.networkProblem = null;
  const sse = new SSEClientTransport(url, { fetch: observed.fetch, requestInit });
  const second = await attempt(sse, options, deadline);
  if (second.ok) return established(second.client, "sse", sse, options);
  if (deadline.expired()) return notOk(timeoutFailure(options.timeoutMs));
  const secondStatus = httpStatusOf(second.error, observed.seen);
  if (secondStatus !== null && fallsBackToSse(secondStatus)) {
    // Neither transport exists here: report what the Streamable HTTP endpoint said (404 → not_found).
    return notOk(statusFailure(firstStatus ?? secondStatus));
  }
  return notOk(await classifyHttp(second.error, secondStatus, observed, url, deadline, options.timeoutMs));
}

/** The SDK's backwards-compatibility rule: a 4xx to the Streamable HTTP POST means "try HTTP+SSE". */
function fallsBackToSse(status: number | null): status is number {
  return status !== null && status >= 400 && status <= 499 && ![401, 403, 408, 429].includes(status);
}

async function classifyHttp(
  error: unknown,
  status: number | null,
  observed: { fetch: FetchFn; seen: Observation },
  url: URL,
  deadline: Deadline,
  timeoutMs: number,
): Promise<NotOk["outcome"]> {
  if (status === 401) {
    return authChallengeOutcome(observed.seen.lastChallenge, url, observed.fetch, deadline, timeoutMs);
  }
  if (status !== null) return statusFailure(status);
  const problem = networkProblemOf(error) ?? observed.seen.networkProblem;
  if (problem) return networkFailure(problem);
  return protocolFailure(error, timeoutMs) ?? notMcp();
}

/** The HTTP status behind an SDK transport error, when there is one (200 = a response that is not MCP). */
function httpStatusOf(error: unknown, seen: Observation): number | null {
  if (error instanceof StreamableHTTPError || error instanceof SseError) {
    const code = error.code;
    if (typeof code === "number" && code >= 100) return code === 200 ? null : code;
    return null;
  }
  if (networkProblemOf(error)) return null;
  return seen.lastStatus !== null && seen.lastStatus >= 300 ? seen.lastStatus : null;
}

/** McpError kinds that say something about the server; undefined for anything else. */
function protocolFailure(error: unknown, timeoutMs: number): Failure | undefined {
  if (!(error instanceof McpError)) return undefined;
  if (error.code === ErrorCode.RequestTimeout) return timeoutFailure(timeoutMs);
  if (error.code === ErrorCode.ConnectionClosed) {
    return failed("unreachable", "The server closed the connection during the MCP handshake.");
  }
  return failed("not_mcp", "The server refused the MCP handshake.");
}

const RESERVED_HEADERS = new Set([
  "mcp-session-id",
  "mcp-protocol-version",
  "last-event-id",
  "content-type",
  "content-length",
  "accept",
  "host",
]);

function requestHeaders(headers: Record<string, string>, accessToken: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || (accessToken && lower === "authorization")) continue;
    out[name] = value;
  }
  if (accessToken) out.Authorization = `Bearer ${accessToken}`;
  return out;
}
