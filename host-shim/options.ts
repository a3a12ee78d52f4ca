import { availableParallelism } from "node:os";
import { type Infer, array, defaulted, integer, max, min, object, optional, size, string } from "superstruct";

const PoolOptions = object({
  minThreads: defaulted(min(integer(), 0), 1),
  maxThreads: defaulted(min(integer(), 1), Math.max(2, Math.min(4, availableParallelism()))),
  /** A method that runs longer is stopped (its worker is terminated) and answered 503 UNAVAILABLE. */
  taskTimeoutMs: defaulted(max(min(integer(), 50), 600_000), 30_000),
  /** Old-generation heap per worker; a worker that exceeds it dies alone and the pool replaces it. */
  maxOldGenerationSizeMb: defaulted(max(min(integer(), 16), 4096), 256),
  /** Waiting tasks beyond this are answered 503 at once instead of queueing without bound. */
  maxQueue: defaulted(max(min(integer(), 1), 100_000), 1024),
  /** Test seam: a worker entry that wraps the real one to inject faults. */
  workerFilename: optional(size(string(), 1, 4096)),
});

export const PluginOptionsStruct = object({
  pool: defaulted(PoolOptions, {}),
  /** Redirect URIs (e.g. a mobile app's) that this gateway accepts for OAuth callbacks. */
  oauthRedirectUris: defaulted(size(array(size(string(), 1, 2048)), 0, 16), []),
  /** The catalog of known servers; default: the catalog shipped with the package. */
  catalogFile: optional(size(string(), 1, 4096)),
  live: defaulted(
    object({
      /** How long one connect or discovery attempt may take. */
      connectTimeoutMs: defaulted(max(min(integer(), 100), 120_000), 15_000),
      /** Reconnect backoff of a dropped server: first delay and ceiling. */
      backoffInitialMs: defaulted(max(min(integer(), 10), 60_000), 500),
      backoffMaxMs: defaulted(max(min(integer(), 10), 600_000), 30_000),
    }),
    {},
  ),
});

export type PluginOptions = Infer<typeof PluginOptionsStruct>;
export type PluginOptionsInput = Partial<Omit<PluginOptions, "pool">> & {
  pool?: Partial<PluginOptions["pool"]>;
};

/** Validated once at registration, then frozen: nothing downstream re-checks or mutates options. */
export function resolveOptions(input: unknown): Readonly<PluginOptions> {
  const [error, options] = PluginOptionsStruct.validate(input ?? {}, { coerce: true });
  if (error !== undefined) {
    const where = error.path.join(".") || "options";
    throw new TypeError(`mcp-manage: invalid option ${where} (expected ${error.type})`);
  }
  if (options.pool.minThreads > options.pool.maxThreads) {
    throw new TypeError("mcp-manage: invalid option pool.minThreads (greater than pool.maxThreads)");
  }
  Object.freeze(options.pool);
  Object.freeze(options.oauthRedirectUris);
  Object.freeze(options.live);
  return Object.freeze(options);
}
