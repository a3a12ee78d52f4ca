/** The bounds of the /mcp endpoint. Every one is a positive integer; a wrong value fails at startup. */
export interface McpEndpointLimits {
  /** Authenticated requests being served at once, across all keys; beyond → 429. */
  maxConcurrentRequests: number;
  /** tools/call requests in flight for one key; beyond → 429 with a JSON-RPC error. */
  maxInFlightPerKey: number;
  /** Request body bytes; beyond → 413. */
  maxBodyBytes: number;
  /** Bytes of one call's `arguments` as JSON; beyond → a tool error result. */
  maxArgumentBytes: number;
  /** Bytes of one call's result as JSON; beyond → a tool error result ("result too large"). */
  maxResultBytes: number;
  /** How long one tool call may run before its signal aborts and it is answered with an error. */
  callTimeoutMs: number;
}

export const DEFAULT_LIMITS: Readonly<McpEndpointLimits> = Object.freeze({
  maxConcurrentRequests: 64,
  maxInFlightPerKey: 8,
  maxBodyBytes: 1024 * 1024,
  maxArgumentBytes: 256 * 1024,
  maxResultBytes: 1024 * 1024,
  callTimeoutMs: 60_000,
});

export function resolveLimits(input: Partial<McpEndpointLimits> = {}): McpEndpointLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const name of Object.keys(DEFAULT_LIMITS) as Array<keyof McpEndpointLimits>) {
    const value = input[name];
    if (value === undefined) continue;
    // A zero or fractional bound would silently refuse everything or round unpredictably.
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`mcp endpoint limit ${name} must be a positive integer`);
    }
    limits[name] = value;
  }
  return limits;
}
