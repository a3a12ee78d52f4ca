import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  assert,
  type Infer,
  array,
  literal,
  nullable,
  object,
  optional,
  pattern,
  size,
  string,
} from "superstruct";

export const DEFAULT_CATALOG = fileURLToPath(new URL("../../catalog/catalog.json", import.meta.url));

const CatalogField = object({
  name: pattern(string(), /^[A-Za-z_][A-Za-z0-9_]{0,127}$/),
  label: size(string(), 1, 256),
  /** For an HTTP server: the header that carries the value (with an optional prefix such as "Bearer "). */
  header: optional(pattern(string(), /^[A-Za-z0-9-]{1,128}$/)),
  prefix: optional(size(string(), 0, 64)),
});

const CatalogEntry = object({
  id: pattern(string(), /^[A-Za-z0-9_-]{1,64}$/),
  title: size(string(), 1, 256),
  description: optional(size(string(), 0, 2048)),
  url: optional(size(string(), 1, 2048)),
  command: optional(size(string(), 1, 1024)),
  args: optional(array(string())),
  fields: array(CatalogField),
  oauthClient: optional(
    nullable(object({ clientId: size(string(), 1, 512), clientSecret: optional(string()) })),
  ),
});
export type CatalogEntry = Infer<typeof CatalogEntry>;

const CatalogFile = object({ version: literal(1), entries: array(CatalogEntry) });

/** Reads and checks the catalog once, at registration; a bad catalog stops the plugin from loading. */
export function loadCatalog(path: string): ReadonlyMap<string, CatalogEntry> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
    assert(parsed, CatalogFile);
  } catch (error) {
    // A superstruct failure names the field as a path array; a file-system error's `path` is the file.
    const fieldPath = (error as { path?: unknown }).path;
    const where = Array.isArray(fieldPath) ? fieldPath.join(".") : "";
    const reason = (error as { code?: unknown }).code === "ENOENT" ? " (no such file)" : "";
    throw new Error(`mcp-manage: the catalog ${path} is invalid${where ? ` at ${where}` : ""}${reason}`);
  }
  const entries = new Map<string, CatalogEntry>();
  for (const entry of parsed.entries) {
    if ((entry.url === undefined) === (entry.command === undefined)) {
      throw new Error(`mcp-manage: catalog entry ${entry.id} needs exactly one of url or command`);
    }
    if (entries.has(entry.id)) throw new Error(`mcp-manage: catalog entry ${entry.id} appears twice`);
    entries.set(entry.id, Object.freeze(entry));
  }
  return entries;
}
