import { mkdir, open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { create, type Infer, literal, object, record, string, unknown } from "superstruct";
import writeFileAtomic from "write-file-atomic";

const ConnectionsFile = object({
  version: literal(1),
  connections: record(string(), unknown()),
});
export type ConnectionsConfig = Infer<typeof ConnectionsFile>;

const LOCK_FILE = "gateway.lock";
const CONNECTIONS_FILE = "connections.json";

/**
 * One profile's state directory. The runtime is its only writer; a lock file keeps a second gateway
 * from sharing it; every write is atomic (temp file, fsync, rename), so a crash leaves each file whole.
 */
export class ProfileStore {
  private constructor(
    readonly dir: string,
    private connections: ConnectionsConfig,
  ) {}

  static async open(dir: string): Promise<ProfileStore> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await acquireLock(join(dir, LOCK_FILE));
    try {
      const connections = await readJson(join(dir, CONNECTIONS_FILE), ConnectionsFile, {
        version: 1,
        connections: {},
      });
      return new ProfileStore(dir, connections);
    } catch (error) {
      await releaseLock(join(dir, LOCK_FILE));
      throw error;
    }
  }

  connectionsConfig(): Readonly<ConnectionsConfig> {
    return this.connections;
  }

  async publishConnections(next: ConnectionsConfig): Promise<void> {
    await writeJsonAtomic(join(this.dir, CONNECTIONS_FILE), next, 0o600);
    this.connections = next;
  }

  async close(): Promise<void> {
    await releaseLock(join(this.dir, LOCK_FILE));
  }
}

export async function writeJsonAtomic(path: string, value: unknown, mode: number): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`, { mode, fsync: true });
}

async function readJson<T>(
  path: string,
  struct: Parameters<typeof create<T, unknown>>[1],
  fallback: T,
): Promise<T> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return fallback;
    throw error;
  }
  try {
    return create(JSON.parse(text), struct);
  } catch {
    throw new Error(`mcp-manage: ${path} is not a valid state file; fix or move it aside`);
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
