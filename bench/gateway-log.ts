/**
 * The gateway writes one pino line per owner-route request, with `durationMs` measured inside the handler
 * (from the request event to the response's finish). Reading the lines of one run tells how much of the
 * client-side latency is spent in the route, and how much in HTTP, TCP and queueing.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { percentile, round } from "./load.js";

export function logSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

export interface HandlerTimes {
  lines: number;
  byStatus: Record<string, number>;
  durationMs: { p50: number; p90: number; p99: number; mean: number };
}

/** Reads the log between two offsets (taken before and after a run) and sums up its request lines. */
export function handlerTimes(file: string, from: number, to: number): HandlerTimes | null {
  return handlerTimesOver(file, [{ from, to }]);
}

/** The log's byte range written during one run. */
export interface LogRange {
  from: number;
  to: number;
}

/** Like handlerTimes, over the request lines of several runs pooled (e.g. every round of a scenario). */
export function handlerTimesOver(file: string, ranges: readonly LogRange[]): HandlerTimes | null {
  if (ranges.every(({ from, to }) => to <= from)) return null;
  const texts: string[] = [];
  const fd = openSync(file, "r");
  try {
    for (const { from, to } of ranges) {
      if (to <= from) continue;
      const buffer = Buffer.alloc(to - from);
      readSync(fd, buffer, 0, buffer.length, from);
      texts.push(buffer.toString("utf8"));
    }
  } finally {
    closeSync(fd);
  }
  const durations: number[] = [];
  const byStatus: Record<string, number> = {};
  for (const line of texts.join("\n").split("\n")) {
    if (!line.includes('"durationMs"')) continue;
    let entry: { durationMs?: unknown; status?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue; // a line cut at the offset
    }
    if (typeof entry.durationMs !== "number") continue;
    durations.push(entry.durationMs);
    const status = String(entry.status);
    byStatus[status] = (byStatus[status] ?? 0) + 1;
  }
  if (durations.length === 0) return null;
  durations.sort((a, b) => a - b);
  return {
    lines: durations.length,
    byStatus,
    durationMs: {
      p50: round(percentile(durations, 50), 3),
      p90: round(percentile(durations, 90), 3),
      p99: round(percentile(durations, 99), 3),
      mean: round(durations.reduce((sum, value) => sum + value, 0) / durations.length, 3),
    },
  };
}
