/**
 * Helpers of the crash (SIGKILL) loop: a request whose sending and answer are observed apart, a kill at a
 * precise delay, a seeded random source, and a strict reader of a profile's state directory that reports
 * a torn file or an unexpected one instead of papering over it.
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import type { ConnectionsFile, SecretsFile, StateFile } from "../../host-shim/store.js";
import { type Reply, readReply } from "./http.js";

export const STATE_FILES = ["connections.json", "secrets.json", "state.json"] as const;
export type StateFileName = (typeof STATE_FILES)[number];

/** write-file-atomic's temp names: `<file>.<murmur hex>`, left behind only when the writer was killed. */
const TEMP_FILE = /^(connections|secrets|state)\.json\.[0-9a-f]+$/;
const KNOWN_FILES = new Set<string>([...STATE_FILES, "gateway.lock"]);

export interface StateDirSnapshot {
  connections: ConnectionsFile;
  secrets: SecretsFile;
  state: StateFile;
  /** Permission bits of each state file. */
  modes: Record<StateFileName, number>;
  /** Temp files of writes that a kill interrupted (never read by the gateway), with their modes. */
  leftovers: Array<{ name: string; mode: number; size: number }>;
  /** Files that are neither state files, the lock, nor such temp files. */
  unexpected: string[];
}

/** Reads a profile's state directory; throws, naming the file, when a state file is torn or not version 1. */
export async function readStateDir(dir: string): Promise<StateDirSnapshot> {
  const parsed: Partial<Record<StateFileName, unknown>> = {};
  const modes = {} as Record<StateFileName, number>;
  for (const name of STATE_FILES) {
    const path = join(dir, name);
    const text = await readFile(path, "utf8");
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new Error(`${name} is torn (${text.length} bytes): ${(error as Error).message}`);
    }
    if (typeof value !== "object" || value === null || (value as { version?: unknown }).version !== 1) {
      throw new Error(`${name} is not a version 1 state file: ${text.slice(0, 200)}`);
    }
    parsed[name] = value;
    modes[name] = (await stat(path)).mode & 0o777;
  }
  const leftovers: StateDirSnapshot["leftovers"] = [];
  const unexpected: string[] = [];
  for (const entry of await readdir(dir)) {
    if (KNOWN_FILES.has(entry)) continue;
    if (TEMP_FILE.test(entry)) {
      const info = await stat(join(dir, entry)).catch(() => null);
      if (info !== null) leftovers.push({ name: entry, mode: info.mode & 0o777, size: info.size });
      continue;
    }
    unexpected.push(entry);
  }
  return {
    connections: parsed["connections.json"] as ConnectionsFile,
    secrets: parsed["secrets.json"] as SecretsFile,
    state: parsed["state.json"] as StateFile,
    modes,
    leftovers,
    unexpected,
  };
}

export interface ObservedRequest {
  /** Resolves (with performance.now()) once the whole request has been handed to the kernel. */
  sent: Promise<number>;
  /** Resolves with performance.now() at the first byte of the answer (its status line). */
  answering: Promise<number>;
  /** The answer, or the error of a connection the server's death cut. Never rejects. */
  reply: Promise<Reply | Error>;
}

/** POSTs an owner-route envelope on a fresh connection, observing when it left and when it was answered. */
export function postObserved(url: string, token: string, envelope: unknown): ObservedRequest {
  const body = Buffer.from(JSON.stringify(envelope));
  let markSent: (at: number) => void = () => undefined;
  let markAnswering: (at: number) => void = () => undefined;
  const sent = new Promise<number>((resolve) => {
    markSent = resolve;
  });
  const answering = new Promise<number>((resolve) => {
    markAnswering = resolve;
  });
  const reply = new Promise<Reply | Error>((resolve) => {
    const req = request(
      new URL("/api/mcp/manage", url),
      {
        method: "POST",
        agent: false,
        headers: {
          "content-type": "application/json",
          "content-length": body.length,
          authorization: `Bearer ${token}`,
        },
      },
      (res) => {
        markAnswering(performance.now());
        readReply(res).then(resolve, (error: Error) => resolve(error));
      },
    );
    req.on("finish", () => markSent(performance.now()));
    req.on("error", (error) => resolve(error));
    req.end(body);
  });
  return { sent, answering, reply };
}

/**
 * Waits until `performance.now() >= at`: a timer for the bulk, then turns of the event loop (which keep
 * serving I/O) for sub-millisecond precision.
 */
export async function waitUntil(at: number): Promise<void> {
  const coarse = at - performance.now() - 1.5;
  if (coarse > 0) await new Promise((resolve) => setTimeout(resolve, coarse));
  while (performance.now() < at) await new Promise((resolve) => setImmediate(resolve));
}

/** mulberry32: a small seeded generator, so a failing run can be replayed with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `count` delays spread over [0, windowMs): one per equal stratum, at a random point inside it, in a
 * shuffled order. Every part of the window is hit however few the runs are.
 */
export function stratifiedDelays(count: number, windowMs: number, random: () => number): number[] {
  const delays = Array.from({ length: count }, (_, i) => ((i + random()) * windowMs) / count);
  for (let i = delays.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    const a = delays[i] ?? 0;
    delays[i] = delays[j] ?? 0;
    delays[j] = a;
  }
  return delays;
}

/** Nearest-rank percentile of unsorted values. */
export function percentileOf(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? 0;
}
