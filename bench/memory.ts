/**
 * Peak RSS growth of the gateway under many concurrent large uploads. Each upload is a real HTTP request
 * on its own TCP connection, with `Content-Length` announced up front and the body streamed from a
 * generator that hands out one shared chunk, so the bench never holds an upload in memory. The client keeps
 * sending after the 413 (as a naive client would, and as the gateway's lingering close expects), so the
 * gateway has to discard the whole body as it arrives.
 */
import { type Socket, connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { type ProcMemory, readProcMemory, resetPeak } from "./children.js";
import { probe, round } from "./load.js";
import { CAPABILITIES_BODY, MANAGE_PATH } from "./scenarios.js";

export interface UploadOutcome {
  status: number | null;
  connectionClose: boolean;
  bytesSent: number;
  /** The whole body was written and the connection then closed in order. */
  completed: boolean;
  error: string | null;
  /** Time from connect to the status line of the response. */
  responseMs: number | null;
}

export interface MemoryOptions {
  url: string;
  token: string;
  pid: number;
  uploads: number;
  uploadBytes: number;
  chunkBytes: number;
  warmupUploads: number;
}

export interface MemoryResult {
  uploads: number;
  uploadBytes: number;
  before: ProcMemory;
  after: ProcMemory;
  /** VmRSS a second after the uploads finished. */
  settledRssKiB: number;
  peakResetWorked: boolean;
  /** Highest VmRSS seen by sampling every 10 ms during the uploads. */
  sampledPeakRssKiB: number;
  /** (peak VmHWM after − VmRSS before), the figure the target is about. */
  peakGrowthMiB: number;
  sampledPeakGrowthMiB: number;
  retainedGrowthMiB: number;
  statusCodes: Record<string, number>;
  all413: boolean;
  completedUploads: number;
  errors: Record<string, number>;
  totalMiBSent: number;
  wallSeconds: number;
  responseMs: { p50: number; max: number };
}

const UPLOAD_TIMEOUT_MS = 60_000;

function* bodyChunks(total: number, chunk: Buffer): Generator<Buffer> {
  let left = total;
  while (left > 0) {
    const size = Math.min(left, chunk.length);
    yield size === chunk.length ? chunk : chunk.subarray(0, size);
    left -= size;
  }
}

/** Waits until the socket can take more, or is gone (then resolves false). */
function writable(socket: Socket): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      socket.off("drain", onDrain);
      socket.off("close", onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    socket.on("drain", onDrain);
    socket.on("close", onClose);
  });
}

export function upload(url: string, token: string, bytes: number, chunk: Buffer): Promise<UploadOutcome> {
  const target = new URL(url);
  const head =
    `POST ${MANAGE_PATH} HTTP/1.1\r\nHost: ${target.host}\r\nContent-Type: application/json\r\n` +
    `Authorization: Bearer ${token}\r\nContent-Length: ${bytes}\r\n\r\n`;
  const started = performance.now();
  const outcome: UploadOutcome = {
    status: null,
    connectionClose: false,
    bytesSent: 0,
    completed: false,
    error: null,
    responseMs: null,
  };
  // allowHalfOpen: the gateway ends its side right after the 413 and keeps reading; so do we, writing.
  const socket = connect({ host: target.hostname, port: Number(target.port), allowHalfOpen: true });
  let response = "";
  socket.setEncoding("latin1");
  socket.on("data", (text: string) => {
    if (outcome.status !== null) return;
    response += text;
    const end = response.indexOf("\r\n\r\n");
    if (end < 0) return;
    const headers = response.slice(0, end);
    outcome.status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(headers)?.[1] ?? 0);
    outcome.connectionClose = /\r\nconnection:\s*close/i.test(headers);
    outcome.responseMs = performance.now() - started;
  });
  socket.on("error", (error: NodeJS.ErrnoException) => {
    outcome.error ??= error.code ?? error.message;
  });
  const timer = setTimeout(() => socket.destroy(new Error("upload timed out")), UPLOAD_TIMEOUT_MS);
  const closed = new Promise<void>((resolve) =>
    socket.once("close", () => {
      clearTimeout(timer);
      resolve();
    }),
  );
  const send = async () => {
    if (
      !(await new Promise<boolean>((resolve) => {
        socket.once("connect", () => resolve(true));
        socket.once("close", () => resolve(false));
      }))
    )
      return;
    socket.write(head);
    for (const piece of bodyChunks(bytes, chunk)) {
      if (socket.destroyed) return;
      outcome.bytesSent += piece.length;
      if (!socket.write(piece) && !(await writable(socket))) return;
    }
    socket.end();
    outcome.completed = true;
  };
  return Promise.all([send(), closed]).then(() => {
    if (outcome.error !== null) outcome.completed = false;
    return outcome;
  });
}

function runUploads(options: MemoryOptions, count: number, chunk: Buffer): Promise<UploadOutcome[]> {
  return Promise.all(
    Array.from({ length: count }, () => upload(options.url, options.token, options.uploadBytes, chunk)),
  );
}

const mib = (kib: number) => round(kib / 1024, 1);

export async function runMemoryTest(options: MemoryOptions): Promise<MemoryResult> {
  const chunk = Buffer.alloc(options.chunkBytes, "x");
  // Warm-up: the worker pool and the 413 path, then let the lingering sockets close.
  for (let i = 0; i < 4; i++) {
    await probe({
      url: `${options.url}${MANAGE_PATH}`,
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${options.token}` },
      body: CAPABILITIES_BODY,
    });
  }
  await runUploads(options, options.warmupUploads, chunk);
  await sleep(1_000);

  const peakResetWorked = resetPeak(options.pid);
  const before = readProcMemory(options.pid);
  let sampledPeakRssKiB = before.vmRssKiB;
  const sampler = setInterval(() => {
    sampledPeakRssKiB = Math.max(sampledPeakRssKiB, readProcMemory(options.pid).vmRssKiB);
  }, 10);
  const started = performance.now();
  const outcomes = await runUploads(options, options.uploads, chunk);
  const wallSeconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const after = readProcMemory(options.pid);
  sampledPeakRssKiB = Math.max(sampledPeakRssKiB, after.vmRssKiB);
  await sleep(1_000);
  const settledRssKiB = readProcMemory(options.pid).vmRssKiB;

  const statusCodes: Record<string, number> = {};
  const errors: Record<string, number> = {};
  for (const outcome of outcomes) {
    const key = String(outcome.status ?? "none");
    statusCodes[key] = (statusCodes[key] ?? 0) + 1;
    if (outcome.error !== null) errors[outcome.error] = (errors[outcome.error] ?? 0) + 1;
  }
  const responseTimes = outcomes
    .map((outcome) => outcome.responseMs ?? Number.POSITIVE_INFINITY)
    .sort((a, b) => a - b);
  const peak = peakResetWorked ? after.vmHwmKiB : sampledPeakRssKiB;
  return {
    uploads: options.uploads,
    uploadBytes: options.uploadBytes,
    before,
    after,
    settledRssKiB,
    peakResetWorked,
    sampledPeakRssKiB,
    peakGrowthMiB: mib(peak - before.vmRssKiB),
    sampledPeakGrowthMiB: mib(sampledPeakRssKiB - before.vmRssKiB),
    retainedGrowthMiB: mib(settledRssKiB - before.vmRssKiB),
    statusCodes,
    all413: outcomes.every((outcome) => outcome.status === 413),
    completedUploads: outcomes.filter((outcome) => outcome.completed).length,
    errors,
    totalMiBSent: round(outcomes.reduce((sum, outcome) => sum + outcome.bytesSent, 0) / (1024 * 1024), 1),
    wallSeconds: round(wallSeconds, 2),
    responseMs: {
      p50: round(responseTimes[Math.floor(responseTimes.length / 2)] ?? 0, 1),
      max: round(responseTimes[responseTimes.length - 1] ?? 0, 1),
    },
  };
}
