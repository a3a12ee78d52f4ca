/**
 * On a shared machine other work (test suites, builds) skews a 2-core loopback benchmark badly. Before a
 * measured run the bench can wait for the machine to be quiet for a moment.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { readSystemBusyMs } from "./children.js";

const SAMPLE_MS = 500;

/**
 * Resolves true once the whole machine used less than `thresholdPercent` of one core for `quietMs` in a row,
 * or false after `maxMs` (0: do not wait). Call it when none of the bench's own servers is under load.
 */
export async function waitForQuiet(maxMs: number, quietMs = 2_000, thresholdPercent = 10): Promise<boolean> {
  if (maxMs <= 0) return false;
  const deadline = Date.now() + maxMs;
  let quietFor = 0;
  let last = readSystemBusyMs();
  while (Date.now() < deadline) {
    await sleep(SAMPLE_MS);
    const now = readSystemBusyMs();
    const percent = ((now - last) / SAMPLE_MS) * 100;
    last = now;
    quietFor = percent < thresholdPercent ? quietFor + SAMPLE_MS : 0;
    if (quietFor >= quietMs) return true;
  }
  return false;
}
