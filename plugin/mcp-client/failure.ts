/**
 * Turning what went wrong into a FailureReason and a sentence an owner can act on. Messages are fixed
 * text plus numbers: never exception text, URLs, header or env values.
 */
import { type MethodError, methodError } from "../errors.js";
import type { NetworkProblem } from "./observed-fetch.js";
import type { DiscoveryOutcome, FailureReason } from "./types.js";

export type Failure = Extract<DiscoveryOutcome, { kind: "failed" }>;

export function failed(reason: FailureReason, message: string): Failure {
  return { kind: "failed", reason, message };
}

export function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

export function timeoutFailure(timeoutMs: number, what = "The server"): Failure {
  return failed("timeout", `${what} did not answer within ${seconds(timeoutMs)}.`);
}

export function networkFailure(problem: NetworkProblem): Failure {
  switch (problem.kind) {
    case "refused":
      return failed("unreachable", "The server could not be reached: the connection was refused.");
    case "dns":
      return failed("unreachable", "The server could not be reached: its host name could not be resolved.");
    case "tls":
      return failed("tls", tlsMessage(problem.code));
    case "network":
      return failed("unreachable", "The server could not be reached: the network connection failed.");
  }
}

function tlsMessage(code: string): string {
  if (code === "CERT_HAS_EXPIRED") return "The server's TLS certificate has expired.";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID" || code === "HOSTNAME_MISMATCH") {
    return "The server's TLS certificate does not name this host.";
  }
  if (code === "DEPTH_ZERO_SELF_SIGNED_CERT" || code === "SELF_SIGNED_CERT_IN_CHAIN") {
    return "The server's TLS certificate is self-signed and not trusted.";
  }
  return "The server's TLS certificate could not be verified.";
}

/** A failure from an HTTP status the server answered with. */
export function statusFailure(status: number): Failure {
  if (status === 404) {
    return failed("not_found", "Nothing answers at this URL (HTTP 404); check the path of the MCP endpoint.");
  }
  if (status === 401) {
    return failed(
      "auth_refused",
      "The server refused access and offers no OAuth sign-in this gateway can use.",
    );
  }
  if (status === 403) return failed("auth_refused", "The server refused access (HTTP 403).");
  if (status === 408) return failed("timeout", "The server timed out the request (HTTP 408).");
  if (status === 429)
    return failed("server_error", "The server is rate limiting requests (HTTP 429); try later.");
  if (status >= 500 && status <= 599) return failed("server_error", `The server failed (HTTP ${status}).`);
  if (status >= 300 && status <= 399) {
    return failed(
      "not_mcp",
      `The server redirected elsewhere (HTTP ${status}); use the final URL of the MCP endpoint.`,
    );
  }
  if (status >= 400 && status <= 499) {
    return failed("not_mcp", `The URL answered HTTP ${status}; it does not look like an MCP endpoint.`);
  }
  return notMcp();
}

export function notMcp(): Failure {
  return failed("not_mcp", "The URL answered, but not as an MCP server.");
}

/** A MethodError that carries a FailureReason, for callers that hold a live client (the manager). */
export type ConnectionFailedError = MethodError & { reason: FailureReason };

export function connectionFailed(failure: Failure): ConnectionFailedError {
  return Object.assign(methodError("CONNECTION_FAILED", failure.message), { reason: failure.reason });
}

export function isConnectionFailed(error: unknown): error is ConnectionFailedError {
  if (typeof error !== "object" || error === null) return false;
  const { name, code, reason, message } = error as Record<string, unknown>;
  return (
    name === "MethodError" &&
    code === "CONNECTION_FAILED" &&
    typeof reason === "string" &&
    typeof message === "string"
  );
}
