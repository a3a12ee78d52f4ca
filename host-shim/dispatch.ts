import { ERROR_TABLE, UNAVAILABLE_MESSAGE, isErrorCode } from "../plugin/errors.js";
import type { GatewayHost, GatewayMethodFailure } from "./contract.js";
import type { Envelope } from "./envelope.js";
import { type Frame, errorFrame, resultFrame } from "./framing.js";
import type { MethodRun } from "./pool.js";

/** Runs a method on this gateway's own runtime; calls `done` exactly once, and `done` must not throw. */
export type LocalCall = (
  method: string,
  params: Record<string, unknown>,
  done: (run: MethodRun) => void,
) => void;

export interface Dispatched extends MethodRun {
  /** The profile the request reached, for the log line; null for the root or when none was reached. */
  reachedProfile: string | null;
}

/**
 * No profile: this gateway's own runtime. A profile: the host's profile host, as `profiles.rpc`, and
 * never a fallback to the root when there is none. `done` is called exactly once and must not throw. The
 * root case, the common one, takes no promise at all: on a busy route each is an allocation and another
 * turn of the microtask queue.
 */
export function dispatch(
  envelope: Envelope,
  host: Pick<GatewayHost, "profiles">,
  local: LocalCall,
  done: (run: MethodRun, reachedProfile: string | null) => void,
): void {
  if (envelope.profile === null) {
    local(envelope.method, envelope.params, (run) => done(run, null));
    return;
  }
  void dispatchToProfile(envelope, envelope.profile, host).then(
    (dispatched) => done(dispatched, dispatched.reachedProfile),
    () => done({ frame: errorFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE), fault: "crash" }, null),
  );
}

async function dispatchToProfile(
  envelope: Envelope,
  profile: string,
  host: Pick<GatewayHost, "profiles">,
): Promise<Dispatched> {
  if (host.profiles === undefined) {
    const frame = errorFrame(503, "PROFILE_HOST_UNAVAILABLE", "This gateway has no profile host.");
    return { frame, fault: null, reachedProfile: null };
  }
  try {
    const result = await host.profiles.rpc("profiles.rpc", {
      name: profile,
      method: envelope.method,
      params: envelope.params,
    });
    return { frame: resultFrame(result), fault: null, reachedProfile: profile };
  } catch (failure) {
    const frame = frameOfFailure(failure);
    const notFound = "error" in frame.body && frame.body.error.code === "PROFILE_NOT_FOUND";
    const reached = notFound ? null : profile;
    return { frame, fault: frame.status === 503 ? "crash" : null, reachedProfile: reached };
  }
}

/**
 * What a profile host rejected with, as a frame. Only well-formed failure data with a code from our table
 * and a status that code may have is believed; anything else is an unexpected dispatch failure.
 */
function frameOfFailure(failure: unknown): Frame {
  const data = (failure ?? {}) as Partial<GatewayMethodFailure>;
  const { code, message, status } = data;
  if (isErrorCode(code) && typeof message === "string" && typeof status === "number") {
    const ownStatus = ERROR_TABLE[code].status;
    if (status === ownStatus || status === 400) return errorFrame(status, code, message);
  }
  return errorFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE);
}
