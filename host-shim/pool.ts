import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import { UNAVAILABLE_MESSAGE } from "../plugin/errors.js";
import { type MethodTask, type MethodTaskResult, isRuntimeConnect } from "../plugin/task.js";
import { type Frame, errorFrame, resultFrame } from "./framing.js";
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
 * The worker pool. A method runs in a worker; a crash, an out-of-memory death or a timeout costs that
 * worker only and becomes 503 UNAVAILABLE with a fixed message. Piscina replaces the worker.
 */
export class MethodPool {
  private readonly piscina: Piscina<MethodTask, MethodTaskResult>;
  private readonly taskTimeoutMs: number;

  constructor(options: Readonly<PluginOptions["pool"]>) {
    this.taskTimeoutMs = options.taskTimeoutMs;
    this.piscina = new Piscina({
      filename: options.workerFilename ?? DEFAULT_WORKER,
      minThreads: options.minThreads,
      maxThreads: options.maxThreads,
      maxQueue: options.maxQueue,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: options.maxOldGenerationSizeMb },
      recordTiming: false,
    });
    // A worker that dies is reported per task; the pool-level event must not crash the gateway.
    this.piscina.on("error", () => undefined);
    // Each worker asks once for its channel to the runtime (see plugin/worker.ts).
    this.piscina.on("message", (message: unknown) => {
      if (isRuntimeConnect(message)) this.runtime?.serve(message.port);
    });
  }

  private runtime: ProfileRuntime | undefined;
  /** Tasks' deadlines, checked by one timer: a timer per task costs more than a short method does. */
  private readonly deadlines = new Set<{ controller: AbortController; at: number }>();
  private sweeper: ReturnType<typeof setInterval> | undefined;

  private watchDeadlines(): void {
    if (this.sweeper !== undefined) return;
    const tick = Math.max(10, Math.min(250, Math.floor(this.taskTimeoutMs / 10)));
    // A monotonic clock: a wall clock faked or set back must not time tasks out.
    this.sweeper = setInterval(() => {
      const now = performance.now();
      for (const deadline of this.deadlines) {
        if (now >= deadline.at) {
          this.deadlines.delete(deadline);
          deadline.controller.abort(new DOMException("The task timed out.", "TimeoutError"));
        }
      }
      if (this.deadlines.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
      }
    }, tick);
    this.sweeper.unref();
  }

  /** The runtime this pool's workers reach; set once, before the first task. */
  attach(runtime: ProfileRuntime): void {
    this.runtime = runtime;
  }

  async run(
    method: string,
    params: Record<string, unknown>,
    runtime: ProfileRuntime,
    kind: MethodTask["kind"] = "method",
  ): Promise<MethodRun> {
    try {
      const task: MethodTask = { kind, method, params, described: runtime.describe() };
      const controller = new AbortController();
      const deadline = { controller, at: performance.now() + this.taskTimeoutMs };
      this.deadlines.add(deadline);
      this.watchDeadlines();
      try {
        // Aborting a running task makes piscina terminate its worker: a hung method cannot hold a thread.
        const outcome = await this.piscina.run(task, { signal: controller.signal });
        return { frame: frameOf(outcome), fault: isWellFormed(outcome) ? null : "bad_result" };
      } finally {
        this.deadlines.delete(deadline);
      }
    } catch (error) {
      return { frame: errorFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE), fault: classify(error) };
    }
  }

  async destroy(): Promise<void> {
    clearInterval(this.sweeper);
    await this.piscina.destroy();
  }
}

function isWellFormed(outcome: MethodTaskResult): boolean {
  return typeof outcome === "object" && outcome !== null && typeof outcome.ok === "boolean";
}

function frameOf(outcome: MethodTaskResult): Frame {
  if (!isWellFormed(outcome)) return errorFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE);
  if (outcome.ok) return resultFrame(outcome.result);
  if (!outcome.expected) return errorFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE);
  return errorFrame(400, outcome.error.code, outcome.error.message);
}

function classify(error: unknown): DispatchFault {
  const { name, code, message } = (error ?? {}) as { name?: unknown; code?: unknown; message?: unknown };
  if (name === "AbortError" || name === "TimeoutError") return "timeout";
  if (code === "ERR_WORKER_OUT_OF_MEMORY") return "out_of_memory";
  if (typeof message === "string" && /queue is full/i.test(message)) return "queue_full";
  return "crash";
}
