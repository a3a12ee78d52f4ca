import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import writeFileAtomic from "write-file-atomic";
import type {
  AuthorizationTransaction,
  OAuthServerBinding,
  StoredClient,
  StoredTokens,
} from "../plugin/mcp-client/types.js";
import type { OperationRecord, ServerLocation } from "../plugin/setup/operation.js";
import type { PermissionsInput } from "../plugin/setup/params.js";

/** A published connection: what an owner would read in connections.json. No secret value, only names. */
export interface PublishedConnection {
  source: "catalog" | "custom";
  catalogId: string | null;
  server: ServerLocation;
  envKeys: string[];
  headerKeys: string[];
  enabled: boolean;
  oauth: boolean;
  permissions: PermissionsInput & { approved: Record<string, string> };
  updatedAt: string;
  /** The operation that published this version: how a restart tells a finished publish from one cut off. */
  operationId?: string;
}

export interface ConnectionsFile {
  version: 1;
  connections: Record<string, PublishedConnection>;
}

export interface OAuthSecrets {
  binding: OAuthServerBinding;
  client: StoredClient;
  tokens: StoredTokens | null;
}

export interface ConnectionSecrets {
  env: Record<string, string>;
  headers: Record<string, string>;
  oauth: OAuthSecrets | null;
}

export interface OperationSecrets {
  env: Record<string, string>;
  headers: Record<string, string>;
  transaction: AuthorizationTransaction | null;
  oauth: OAuthSecrets | null;
}

export interface SecretsFile {
  version: 1;
  /** Keys the params digests of operations, so a digest in state.json cannot confirm a guessed secret. */
  digestKey: string;
  connections: Record<string, ConnectionSecrets>;
  operations: Record<string, OperationSecrets>;
}

export interface Tombstone {
  name: string;
  requestId: string;
  at: number;
}

/** An external access key: only the sha256 digest of its secret is ever stored. */
export interface AccessRecord {
  id: string;
  label: string;
  sessionKey: string;
  tools: string[];
  tokenDigest: string;
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  /** When its conversation was found gone: the key stays unusable even if a conversation of that name returns. */
  orphanedAt?: number | null;
  /** Digest of the create params, for idempotency per id. */
  paramsDigest: string;
}

export interface StateFile {
  version: 1;
  operations: Record<string, OperationRecord>;
  tombstones: Tombstone[];
  access: Record<string, AccessRecord>;
}

const LOCK_FILE = "gateway.lock";

/**
 * A JSON file written atomically (temp file, fsync, rename): a crash leaves it old or new, never torn.
 * Writes are serialized and each writes the newest value when its turn comes, so the file always ends
 * at the latest state even when changes overlap.
 */
class JsonFile<T> {
  private queue: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly mode: number,
    public value: T,
  ) {}

  /** Takes the new value at once (readers see it) and resolves when the file holds it or a later one. */
  write(next: T): Promise<void> {
    this.value = next;
    return this.flush();
  }

  /** Makes the current value durable. */
  flush(): Promise<void> {
    const run = this.queue.then(() =>
      writeFileAtomic(this.path, `${JSON.stringify(this.value, null, 2)}\n`, {
        mode: this.mode,
        fsync: true,
      }),
    );
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/**
 * One profile's state directory. The runtime is its only writer; a lock file keeps a second gateway
 * from sharing it. connections.json is the published config; secrets.json (0600) holds tokens, client
 * registrations and credential values; state.json holds operations and cancelled request ids.
 */
export class ProfileStore {
  private constructor(
    readonly dir: string,
    readonly connections: JsonFile<ConnectionsFile>,
    readonly secrets: JsonFile<SecretsFile>,
    readonly state: JsonFile<StateFile>,
  ) {}

  static async open(dir: string): Promise<ProfileStore> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await acquireLock(join(dir, LOCK_FILE));
    await removeTempFiles(dir);
    try {
      const connections = await load<ConnectionsFile>(join(dir, "connections.json"), 0o600, () => ({
        version: 1,
        connections: {},
      }));
      const secrets = await load<SecretsFile>(join(dir, "secrets.json"), 0o600, () => ({
        version: 1,
        digestKey: randomBytes(32).toString("base64url"),
        connections: {},
        operations: {},
      }));
      const state = await load<StateFile>(join(dir, "state.json"), 0o600, () => ({
        version: 1,
        operations: {},
        tombstones: [],
        access: {},
      }));
      return new ProfileStore(dir, connections, secrets, state);
    } catch (error) {
      await releaseLock(join(dir, LOCK_FILE));
      throw error;
    }
  }

  async close(): Promise<void> {
    await releaseLock(join(this.dir, LOCK_FILE));
  }
}

async function load<T extends { version: number }>(
  path: string,
  mode: number,
  fresh: () => T,
): Promise<JsonFile<T>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ENOENT") throw error;
    const file = new JsonFile(path, mode, fresh());
    await file.write(file.value);
    return file;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`mcp-manage: ${path} is not valid JSON; fix or move it aside`);
  }
  if (typeof parsed !== "object" || parsed === null || (parsed as { version?: unknown }).version !== 1) {
    throw new Error(`mcp-manage: ${path} is not a version 1 state file; fix or move it aside`);
  }
  return new JsonFile(path, mode, { ...fresh(), ...(parsed as T) });
}

/**
 * A write cut off by a crash leaves its temp file (`<name>.json.<number>`) beside the real one; it may
 * hold secrets, and nothing will ever read it.
 */
async function removeTempFiles(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (/^(connections|secrets|state)\.json\.\d+$/.test(name))
      await unlink(join(dir, name)).catch(() => undefined);
  }
}

async function acquireLock(path: string): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const handle = await open(path, "wx", 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== "EEXIST") throw error;
      const holder = Number.parseInt(await readFile(path, "utf8").catch(() => ""), 10);
      if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) {
        throw new Error(`mcp-manage: state directory is in use by process ${holder} (${path})`);
      }
      // The holder died without cleaning up (a crash or SIGKILL): its lock is stale.
      await unlink(path).catch(() => undefined);
    }
  }
  throw new Error(`mcp-manage: could not lock the state directory (${path})`);
}

async function releaseLock(path: string): Promise<void> {
  const holder = Number.parseInt(await readFile(path, "utf8").catch(() => ""), 10);
  if (holder === process.pid) await unlink(path).catch(() => undefined);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: unknown }).code === "EPERM";
  }
}
