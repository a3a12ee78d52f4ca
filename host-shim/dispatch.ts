import { ERROR_TABLE, UNAVAILABLE_MESSAGE, isErrorCode } from "../plugin/errors.js";
import type { GatewayHost, GatewayMethodFailure } from "./contract.js";
import type { Envelope } from "./envelope.js";
import { type Frame, errorFrame, resultFrame } from "./framing.js";
import type { MethodRun } from "./pool.js";

export type LocalInvoke = (method: string, params: Record<string, unknown>) => Promise<MethodRun>;

export interface Dispatched extends MethodRun {
  /** The profile the request reached, for the log line; null for the root or when none was reached. */
  reachedProfile: string | null;
}

/**
 * No profile: this gateway's own runtime. A profile: the host's profile host, as `profiles.rpc`, and
 * never a fallback to the root when there is none. The root case, the common one, is chained rather than
 * awaited: an async function would add microtask turns to every request.
 */
export function dispatch(envelope: Envelope, host: GatewayHost, local: LocalInvoke): Promise<Dispatched> {
  if (envelope.profile === null) {
    return local(envelope.method, envelope.params).then((run) => ({
      frame: run.frame,
      fault: run.fault,
      reachedProfile: null,
    }));
  }
  return dispatchToProfile(envelope, envelope.profile, host);
}

async function dispatchToProfile(
  envelope: Envelope,
  profile: string,
  host: GatewayHost,
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
