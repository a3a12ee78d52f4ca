import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import { UNAVAILABLE_MESSAGE } from "../plugin/errors.js";
import type { RuntimeDescription } from "../plugin/runtime-api.js";
import {
  type MethodTask,
  type MethodTaskOutcome,
  type MethodTaskResult,
  type SingleTask,
  isRuntimeConnect,
} from "../plugin/task.js";
import { type Frame, errorFrame, jsonResultFrame } from "./framing.js";
import type { PluginOptions } from "./options.js";
import type { ProfileRuntime } from "./runtime.js";

const DEFAULT_WORKER = fileURLToPath(new URL("../plugin/worker.js", import.meta.url));

/** Why a task failed outside the method's control; logged by the caller, never returned. */
export type DispatchFault = "timeout" | "crash" | "out_of_memory" | "queue_full" | "bad_result";

export interface MethodRun {
  frame: Frame;
  fault: DispatchFault | null;
}

/**
 * Read-only methods that answer from the runtime's memory: the ones apps poll. Calls of them that reach
 * the pool in the same event-loop turn go to one worker as one task, which answers each separately, so
 * the hand-off to a worker (the larger part of such a request's cost) is paid once per batch. Methods
 * that write, or may wait on the network, always run alone: a batch answers when its slowest item does.
 */
export const COALESCED_METHODS: ReadonlySet<string> = new Set([
  "mcp.capabilities",
  "mcp.connections.list",
  "mcp.access.catalog",
  "mcp.access.list",
  "mcp.setup.pending",
  "mcp.setup.status",
]);

/** A batch this large is sent at once rather than at the end of the turn. */
export const MAX_BATCH = 32;

interface Waiting {
  method: string;
  params: Record<string, unknown>;
  resolve(run: MethodRun): void;
}

type Submitted = { outcome: MethodTaskOutcome } | { fault: DispatchFault };

/**
 * The worker pool. A method runs in a worker; a crash, an out-of-memory death or a timeout costs that
 * worker only and becomes 503 UNAVAILABLE with a fixed message. Piscina replaces the worker.
 */
export class MethodPool {
  private readonly piscina: Piscina<MethodTask, MethodTaskOutcome>;
  private readonly taskTimeoutMs: number;

  constructor(options: Readonly<PluginOptions["pool"]>) {
    this.taskTimeoutMs = options.taskTimeoutMs;
    this.tickMs = Math.max(10, Math.min(250, Math.floor(options.taskTimeoutMs / 10)));
    this.piscina = new Piscina({
      filename: options.workerFilename ?? DEFAULT_WORKER,
      minThreads: options.minThreads,
      maxThreads: options.maxThreads,
      maxQueue: options.maxQueue,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: options.maxOldGenerationSizeMb },
      recordTiming: false,
      // Workers wait on their message port rather than in Atomics.wait: a task is then one wake-up instead
      // of a postMessage plus a futex notify. Capabilities went from 0.416-0.443 to 0.467-0.492 x hello
      // world in two paired runs.
      atomics: "disabled",
    });
    // A worker that dies is reported per task; the pool-level event must not crash the gateway.
    this.piscina.on("error", () => undefined);
    // Each worker asks once for its channel to the runtime (see plugin/worker.ts).
    this.piscina.on("message", (message: unknown) => {
      if (isRuntimeConnect(message)) this.runtime?.serve(message.port);
    });
  }

  private runtime: ProfileRuntime | undefined;
  /**
   * Tasks' deadlines, by the sweeper tick they fall in: the tasks of one tick share an AbortController,
   * aborted once that tick has passed. One timer checks them all. A controller per task cost a busy route
   * 3-5% of its throughput (measured on capabilities); this way a task is still never aborted before its
   * deadline, and at most one tick after it, as with a controller each.
   */
  private readonly deadlines = new Map<number, AbortController>();
  private readonly tickMs: number;
  private sweeper: ReturnType<typeof setInterval> | undefined;

  /** The signal that aborts a task submitted now once its time is up. */
  private deadlineSignal(): AbortSignal {
    const at = Math.ceil((performance.now() + this.taskTimeoutMs) / this.tickMs) * this.tickMs;
    let controller = this.deadlines.get(at);
    if (controller === undefined) {
      controller = new AbortController();
      this.deadlines.set(at, controller);
    }
    this.watchDeadlines();
    return controller.signal;
  }

  private watchDeadlines(): void {
    if (this.sweeper !== undefined) return;
    // A monotonic clock: a wall clock faked or set back must not time tasks out.
    this.sweeper = setInterval(() => {
      const now = performance.now();
      for (const [at, controller] of this.deadlines) {
        if (now >= at) {
          this.deadlines.delete(at);
          controller.abort(new DOMException("The task timed out.", "TimeoutError"));
        }
      }
      if (this.deadlines.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
    }, this.tickMs);
    this.sweeper.unref();
  }

  /** The runtime this pool's workers reach; set once, before the first task. */
  attach(runtime: ProfileRuntime): void {
    this.runtime = runtime;
  }

  /** Runs a method or step in a worker; never rejects: what went wrong is in the frame and the fault. */
  run(
    method: string,
    params: Record<string, unknown>,
    runtime: ProfileRuntime,
    kind: SingleTask["kind"] = "method",
  ): Promise<MethodRun> {
    if (kind === "method" && COALESCED_METHODS.has(method)) {
      return new Promise((resolve) => this.enqueue(method, params, runtime, resolve));
    }
    const described = describe(runtime);
    if (described === null) return Promise.resolve(unavailable("crash"));
    return this.runAlone({ kind, method, params, described });
  }

  /**
   * run() for the owner route, answering through a callback called exactly once (it must not throw): on
   * a busy route, the promise of each call is an allocation and a turn of the microtask queue.
   */
  call(
    method: string,
    params: Record<string, unknown>,
    runtime: ProfileRuntime,
    done: (run: MethodRun) => void,
  ): void {
    if (COALESCED_METHODS.has(method)) this.enqueue(method, params, runtime, done);
    else void this.run(method, params, runtime).then(done);
  }

  private readonly waiting = new Map<ProfileRuntime, Waiting[]>();
  private flushScheduled = false;

  private enqueue(
    method: string,
    params: Record<string, unknown>,
    runtime: ProfileRuntime,
    resolve: (run: MethodRun) => void,
  ): void {
    let batch = this.waiting.get(runtime);
    if (batch === undefined) {
      batch = [];
      this.waiting.set(runtime, batch);
    }
    batch.push({ method, params, resolve });
    if (batch.length >= MAX_BATCH) {
      this.send(runtime);
    } else if (!this.flushScheduled) {
      this.flushScheduled = true;
      // After this turn's I/O callbacks: every request read in it joins the batch.
      setImmediate(() => {
        this.flushScheduled = false;
        for (const waitingRuntime of [...this.waiting.keys()]) this.send(waitingRuntime);
      });
    }
  }

  private send(runtime: ProfileRuntime): void {
    const batch = this.waiting.get(runtime);
    this.waiting.delete(runtime);
    if (batch === undefined || batch.length === 0) return;
    const described = describe(runtime);
    if (described === null) {
      for (const waiting of batch) waiting.resolve(unavailable("crash"));
      return;
    }
    const [only] = batch;
    if (batch.length === 1 && only !== undefined) {
      const task: SingleTask = { kind: "method", method: only.method, params: only.params, described };
      void this.runAlone(task).then(only.resolve);
      return;
    }
    const items = batch.map(({ method, params }) => ({ method, params }));
    void this.submit({ kind: "batch", items, described }).then((submitted) => {
      const outcomes = "outcome" in submitted && Array.isArray(submitted.outcome) ? submitted.outcome : null;
      batch.forEach((waiting, index) => {
        if ("fault" in submitted) return waiting.resolve(unavailable(submitted.fault));
        const entry = outcomes?.length === batch.length ? outcomes[index] : undefined;
        waiting.resolve(
          typeof entry === "string" ? { frame: jsonResultFrame(entry), fault: null } : runOf(entry),
        );
      });
    });
  }

  private async runAlone(task: SingleTask): Promise<MethodRun> {
    const submitted = await this.submit(task);
    if ("fault" in submitted) return unavailable(submitted.fault);
    return runOf(Array.isArray(submitted.outcome) ? undefined : submitted.outcome);
  }

  private async submit(task: MethodTask): Promise<Submitted> {
    try {
      // Aborting a running task makes piscina terminate its worker: a hung method cannot hold a thread.
      return { outcome: await this.piscina.run(task, { signal: this.deadlineSignal() }) };
    } catch (error) {
      return { fault: classify(error) };
    }
  }

  async destroy(): Promise<void> {
    clearInterval(this.sweeper);
    await this.piscina.destroy();
  }
}

/** The runtime's description, or null when taking it failed (which a request must survive). */
function describe(runtime: ProfileRuntime): RuntimeDescription | null {
  try {
    return runtime.describe();
  } catch {
    return null;
  }
}

function unavailable(fault: DispatchFault): MethodRun {
  return { frame: errorFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE), fault };
}

function isWellFormed(outcome: unknown): outcome is MethodTaskResult {
  return (
    typeof outcome === "object" && outcome !== null && typeof (outcome as { ok?: unknown }).ok === "boolean"
  );
}

/** A worker's answer, believed only when well formed: anything else is 503 with the fault `bad_result`. */
function runOf(outcome: unknown): MethodRun {
  if (!isWellFormed(outcome)) return unavailable("bad_result");
  if (outcome.ok) {
    return typeof outcome.json === "string"
      ? { frame: jsonResultFrame(outcome.json), fault: null }
      : unavailable("bad_result");
  }
  if (!outcome.expected) return { frame: errorFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE), fault: null };
  return { frame: errorFrame(400, outcome.error.code, outcome.error.message), fault: null };
}

function classify(error: unknown): DispatchFault {
  const { name, code, message } = (error ?? {}) as { name?: unknown; code?: unknown; message?: unknown };
  if (name === "AbortError" || name === "TimeoutError") return "timeout";
  if (code === "ERR_WORKER_OUT_OF_MEMORY") return "out_of_memory";
  if (typeof message === "string" && /queue is full/i.test(message)) return "queue_full";
  return "crash";
}
