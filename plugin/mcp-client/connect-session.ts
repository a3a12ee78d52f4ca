/**
 * The transport-independent half of connecting: one initialize attempt bounded by a deadline, and the
 * handle an established connection is returned as.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type Deadline, type FetchFn, withinDeadline } from "./observed-fetch.js";
import type { DiscoveryOutcome, TransportKind } from "./types.js";

export const DEFAULT_CLIENT_NAME = "mcp-manage";
const CLIENT_VERSION = "0.1.0";
/** How long close() waits for the server to acknowledge ending a Streamable HTTP session. */
const TERMINATE_WAIT_MS = 2000;

export interface ConnectOptions {
  accessToken?: string | null;
  fetch?: FetchFn;
  /** The base fetch of the Streamable HTTP transport's own requests; default `fetch`. */
  transportFetch?: FetchFn;
  timeoutMs: number;
  clientName?: string;
  /** Called when an established connection is lost; not after close(). */
  onClose?: () => void;
}

export type ConnectResult =
  | { ok: true; client: Client; transport: TransportKind; close(): Promise<void> }
  | { ok: false; outcome: Exclude<DiscoveryOutcome, { kind: "ok" }> };

export type NotOk = Extract<ConnectResult, { ok: false }>;
export type Attempt = { ok: true; client: Client } | { ok: false; error: unknown };

export const notOk = (outcome: NotOk["outcome"]): NotOk => ({ ok: false, outcome });

/** Connects and initializes; on any failure runs `cleanUp` and closes client and transport before returning. */
export async function attempt(
  transport: Transport,
  options: ConnectOptions,
  deadline: Deadline,
  cleanUp?: () => Promise<void>,
): Promise<Attempt> {
  const client = new Client({ name: options.clientName ?? DEFAULT_CLIENT_NAME, version: CLIENT_VERSION });
  try {
    const connecting = client.connect(transport, {
      signal: deadline.signal,
      timeout: Math.max(1, options.timeoutMs),
    });
    await withinDeadline(connecting, deadline);
    return { ok: true, client };
  } catch (error) {
    // Client.close() closes the transport: aborts fetches, closes an EventSource, ends a stdio child.
    await client.close().catch(() => {});
    await cleanUp?.();
    return { ok: false, error };
  }
}

export function established(
  client: Client,
  kind: TransportKind,
  transport: Transport,
  options: ConnectOptions,
): ConnectResult {
  let closing = false;
  client.onclose = () => {
    if (!closing) options.onClose?.();
  };
  return {
    ok: true,
    client,
    transport: kind,
    async close() {
      if (closing) return;
      closing = true;
      if (transport instanceof StreamableHTTPClientTransport) {
        await settleWithin(transport.terminateSession(), Math.min(options.timeoutMs, TERMINATE_WAIT_MS));
      }
      await client.close().catch(() => {});
    },
  };
}

/** Waits for `work` at most `ms`; never rejects. */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    work.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}
