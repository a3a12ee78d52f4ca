/**
 * A fetch wrapper that remembers what the network said (status, WWW-Authenticate, low-level error code),
 * because the SDK's errors flatten that into text, and that aborts every request when a deadline passes.
 */

export type FetchFn = typeof globalThis.fetch;

export type NetworkProblem =
  | { kind: "refused" }
  | { kind: "dns" }
  | { kind: "tls"; code: string }
  | { kind: "network" };

export interface Observation {
  /** Status of the last HTTP response. */
  lastStatus: number | null;
  /** WWW-Authenticate of the last 401/403 response. */
  lastChallenge: string | null;
  /** The last request that failed below HTTP. */
  networkProblem: NetworkProblem | null;
}

export interface ObservedFetch {
  fetch: FetchFn;
  seen: Observation;
  /**
   * Stops combining each request's signal with `signal`: call it once `signal` can no longer fire (its
   * deadline was cleared). A long-lived transport then pays nothing per request for it.
   */
  release(): void;
}

export function observeFetch(
  base: FetchFn,
  signal?: AbortSignal,
  seen: Observation = { lastStatus: null, lastChallenge: null, networkProblem: null },
): ObservedFetch {
  let watched = signal;
  const wrapped: FetchFn = async (input, init) => {
    let effective = init;
    const signal = watched;
    if (signal) {
      const own = init?.signal;
      effective = { ...init, signal: own ? AbortSignal.any([own, signal]) : signal };
    }
    try {
      const response = await base(input, effective);
      seen.lastStatus = response.status;
      if (response.status === 401 || response.status === 403) {
        seen.lastChallenge = response.headers.get("www-authenticate");
      }
      return response;
    } catch (error) {
      const problem = networkProblemOf(error);
      if (problem) seen.networkProblem = problem;
      throw error;
    }
  };
  return {
    fetch: wrapped,
    seen,
    release: () => {
      watched = undefined;
    },
  };
}

const TLS_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
]);

/** Error codes found on an error, its `cause` chain and AggregateError members. */
export function errorCodes(error: unknown, depth = 0): string[] {
  if (depth > 5 || typeof error !== "object" || error === null) return [];
  const codes: string[] = [];
  const { code, cause, errors } = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === "string") codes.push(code);
  if (cause !== undefined) codes.push(...errorCodes(cause, depth + 1));
  if (Array.isArray(errors)) for (const item of errors) codes.push(...errorCodes(item, depth + 1));
  return codes;
}

/** A failure below HTTP (connection, DNS, TLS), or null when the error is something else. */
export function networkProblemOf(error: unknown): NetworkProblem | null {
  const codes = errorCodes(error);
  const tls = codes.find((c) => TLS_CODES.has(c) || c.startsWith("ERR_SSL_") || c.startsWith("ERR_TLS_"));
  if (tls) return { kind: "tls", code: tls };
  if (codes.includes("ECONNREFUSED")) return { kind: "refused" };
  if (codes.includes("ENOTFOUND") || codes.includes("EAI_AGAIN")) return { kind: "dns" };
  if (codes.length > 0 && !codes.every((c) => c === "ABORT_ERR")) return { kind: "network" };
  // undici's plain "fetch failed" TypeError.
  if (error instanceof TypeError && (error as { cause?: unknown }).cause !== undefined)
    return { kind: "network" };
  return null;
}

/** One timer for a whole operation: a signal to abort with and a promise to race against. */
export interface Deadline {
  readonly signal: AbortSignal;
  readonly expired: () => boolean;
  /** Rejects when the deadline passes; never resolves. Safe to leave unawaited. */
  readonly reached: Promise<never>;
  clear(): void;
}

export class DeadlineReached extends Error {
  constructor() {
    super("deadline reached");
    this.name = "DeadlineReached";
  }
}

export function startDeadline(timeoutMs: number): Deadline {
  const controller = new AbortController();
  let expired = false;
  let fail: (error: Error) => void = () => {};
  const reached = new Promise<never>((_resolve, reject) => {
    fail = reject;
  });
  reached.catch(() => {});
  const timer = setTimeout(
    () => {
      expired = true;
      const error = new DeadlineReached();
      controller.abort(error);
      fail(error);
    },
    Math.max(0, timeoutMs),
  );
  timer.unref?.();
  return {
    signal: controller.signal,
    expired: () => expired,
    reached,
    clear: () => clearTimeout(timer),
  };
}

/** Settles like `work`, or rejects with DeadlineReached first; `work` rejecting later is swallowed. */
export function withinDeadline<T>(work: Promise<T>, deadline: Deadline): Promise<T> {
  work.catch(() => {});
  return Promise.race([work, deadline.reached]);
}
