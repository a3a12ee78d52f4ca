import type { FailureReason } from "../../plugin/mcp-client/types.js";
import { type LiveCallError, liveCallError } from "./types.js";

/** Owner-readable text for every way a live connection can be unusable. Fixed strings only: no raw error text. */
export const FAILURE_TEXT: Record<FailureReason, string> = {
  unreachable: "The server could not be reached.",
  tls: "The server's TLS certificate could not be verified.",
  not_found: "The server answered that the URL does not exist.",
  not_mcp: "The server did not answer as an MCP server.",
  auth_refused: "The server refused the credentials.",
  timeout: "The server did not answer in time.",
  server_error: "The server reported an internal error.",
  spawn_failed: "The server's command could not be started.",
};

/** Reasons that may heal on their own: retried with backoff while the connection is enabled. */
const TRANSIENT: ReadonlySet<FailureReason> = new Set<FailureReason>([
  "unreachable",
  "timeout",
  "server_error",
]);

export function isTransient(reason: FailureReason): boolean {
  return TRANSIENT.has(reason);
}

export const REASON = {
  dropped: "The connection to the server dropped.",
  discovery: "The server's tool list could not be read.",
  refresh: "The authorization server could not refresh the access token.",
  needsAuth: "The server needs the owner to authorize this connection again.",
  retrying: "Retrying.",
} as const;

export function retrying(text: string): string {
  return `${text} ${REASON.retrying}`;
}

/**
 * The client layer's failure message (fixed text plus numbers by its contract) or, when it has none,
 * this module's text for the reason. Capped, single-line: a status line, not a log.
 */
export function ownerText(reason: FailureReason, message: string | null | undefined): string {
  const text = typeof message === "string" ? message.replace(/\s+/g, " ").trim() : "";
  if (text === "" || text.length > 300) return FAILURE_TEXT[reason];
  return text;
}

/** JSON-RPC errors the server itself answered with (not a transport failure, not a local timeout). */
export function isServerAnswer(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "number" && code < 0 && code !== -32000 && code !== -32001;
}

/** The FailureReason and owner-readable message of a listDiscovery rejection (by code, never instanceof). */
export function listingFailure(error: unknown): { reason: FailureReason; message: string } {
  const { code, reason, message } = (error ?? {}) as { code?: unknown; reason?: unknown; message?: unknown };
  if (code === "CONNECTION_FAILED" && typeof reason === "string" && Object.hasOwn(FAILURE_TEXT, reason)) {
    return { reason: reason as FailureReason, message: typeof message === "string" ? message : "" };
  }
  return { reason: "server_error", message: REASON.discovery };
}

/** A JSON-RPC error the server answered a call with: its code only, never its text. */
export function callRefused(error: unknown): LiveCallError {
  const code = (error as { code?: unknown } | null)?.code;
  return liveCallError("CALL_FAILED", `The server refused the call (MCP error ${String(code)}).`);
}
