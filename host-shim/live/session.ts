import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import type { DiscoveredTool, Discovery, TransportKind } from "../../plugin/mcp-client/types.js";
import { connectClient, listDiscovery } from "./mcp-client.js";
import { REASON, isTransient, listingFailure, ownerText } from "./reasons.js";
import { type TokenKeeper, connectFetch, isTokenError } from "./tokens.js";
import type { LiveSpec } from "./types.js";

export interface Session {
  client: Client;
  transport: TransportKind;
  close(): Promise<void>;
}

export interface SessionHooks {
  /** The transport closed on its own (a stdio child exited, ...). */
  onClose(session: Session): void;
  /** The client reported an error (e.g. its notification stream broke). */
  onError(session: Session): void;
  onListChanged(session: Session): void;
}

export type Opened =
  /** `stale`: tools/list_changed arrived during the first listing, so list again once installed. */
  | { kind: "open"; session: Session; tools: DiscoveredTool[]; discovery: Discovery; stale: boolean }
  | { kind: "needs_auth" }
  /** `retry`: worth trying again later; `fail`: needs the owner. `text` is owner-readable. */
  | { kind: "retry" | "fail"; text: string; reason: string };

export interface OpenDeps {
  keeper: TokenKeeper;
  fetch: typeof fetch | undefined;
  timeoutMs: number;
  /** Checked after each await: false means the caller moved on; a session opened anyway is closed. */
  current(): boolean;
}

/** One connect attempt: a fresh token (OAuth), connectClient, handlers, the first tool listing. */
export async function openSession(
  spec: LiveSpec,
  deps: OpenDeps,
  hooks: SessionHooks,
): Promise<Opened | null> {
  let accessToken: string | null;
  try {
    accessToken = await deps.keeper.fresh();
  } catch (error) {
    if (isTokenError(error) && error.code === "NEEDS_AUTH") return { kind: "needs_auth" };
    return { kind: "retry", text: REASON.refresh, reason: "refresh" };
  }
  if (!deps.current()) return null;
  const holder: { session: Session | null } = { session: null };
  const result = await connectClient(spec.target, {
    accessToken,
    ...connectFetch(spec, deps.keeper, deps.fetch),
    timeoutMs: deps.timeoutMs,
    clientName: "mcp-manage",
    onClose: () => {
      if (holder.session) hooks.onClose(holder.session);
    },
  });
  if (!result.ok) {
    if (!deps.current()) return null;
    if (result.outcome.kind === "auth_required") return { kind: "needs_auth" };
    const { reason, message } = result.outcome;
    return { kind: isTransient(reason) ? "retry" : "fail", text: ownerText(reason, message), reason };
  }
  const session: Session = { client: result.client, transport: result.transport, close: result.close };
  holder.session = session;
  let listing = true;
  let stale = false;
  result.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    if (listing) stale = true;
    else hooks.onListChanged(session);
  });
  const previous = result.client.onerror;
  result.client.onerror = (error) => {
    previous?.(error);
    hooks.onError(session);
  };
  try {
    const discovery = await listDiscovery(result.client, result.transport, { timeoutMs: deps.timeoutMs });
    const { tools } = discovery;
    listing = false;
    if (deps.current()) return { kind: "open", session, tools, discovery, stale };
    await session.close().catch(() => undefined);
    return null;
  } catch (error) {
    await session.close().catch(() => undefined);
    if (!deps.current()) return null;
    const { reason, message } = listingFailure(error);
    return { kind: isTransient(reason) ? "retry" : "fail", text: ownerText(reason, message), reason };
  }
}
