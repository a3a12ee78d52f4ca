/** Why a tool call was stopped before its tool answered. */
export type CallEnd = "revoked" | "timeout" | "disconnected" | "shutdown";

/**
 * The abort reason a call's signal carries. Named AbortError so code that only knows the DOM
 * convention treats it as a cancellation; `end` says which one.
 */
export class CallAbort extends Error {
  override readonly name = "AbortError";
  constructor(readonly end: CallEnd) {
    super(`The tool call was stopped (${end}).`);
  }
}

/**
 * Counts what is running: authenticated requests overall, tool calls per key, and the abort controller
 * of every running call grouped by key, so a key's invalidation can stop exactly that key's calls.
 */
export class InFlight {
  private requests = 0;
  private readonly callsPerKey = new Map<string, number>();
  private readonly controllers = new Map<string, Set<AbortController>>();

  constructor(
    private readonly maxRequests: number,
    private readonly maxCallsPerKey: number,
  ) {}

  /** A request slot, or null when the endpoint is full. The release is idempotent. */
  tryRequest(): (() => void) | null {
    if (this.requests >= this.maxRequests) return null;
    this.requests += 1;
    return once(() => {
      this.requests -= 1;
    });
  }

  /** A tool-call slot for one key, or null when that key already has its maximum running. */
  tryCall(keyId: string): (() => void) | null {
    const running = this.callsPerKey.get(keyId) ?? 0;
    if (running >= this.maxCallsPerKey) return null;
    this.callsPerKey.set(keyId, running + 1);
    return once(() => {
      const left = (this.callsPerKey.get(keyId) ?? 1) - 1;
      if (left <= 0) this.callsPerKey.delete(keyId);
      else this.callsPerKey.set(keyId, left);
    });
  }

  /** Registers a running call's controller under its key until the returned function is called. */
  track(keyId: string, controller: AbortController): () => void {
    let set = this.controllers.get(keyId);
    if (set === undefined) {
      set = new Set();
      this.controllers.set(keyId, set);
    }
    set.add(controller);
    return once(() => {
      set.delete(controller);
      if (set.size === 0 && this.controllers.get(keyId) === set) this.controllers.delete(keyId);
    });
  }

  /** Stops every running call of one key (revoked, expired, conversation deleted). */
  abortKey(keyId: string, end: CallEnd): void {
    for (const controller of [...(this.controllers.get(keyId) ?? [])]) controller.abort(new CallAbort(end));
  }

  abortAll(end: CallEnd): void {
    for (const keyId of [...this.controllers.keys()]) this.abortKey(keyId, end);
  }
}

function once(action: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    action();
  };
}
