import type { BackoffOptions } from "./types.js";

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000 };

/**
 * Delay before reconnect attempt `attempt` (0-based): exponential from initialMs, capped at maxMs, with
 * "equal jitter" (half fixed, half random) so many connections to one server do not retry in lockstep
 * while the delay still grows.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const initial = Math.max(1, options.initialMs);
  const max = Math.max(initial, options.maxMs);
  const exponent = Math.min(Math.max(0, attempt), 30);
  const ceiling = Math.min(max, initial * 2 ** exponent);
  const half = ceiling / 2;
  return Math.round(half + random() * half);
}
