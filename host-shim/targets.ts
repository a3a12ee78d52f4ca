import type { ServerTarget } from "../plugin/mcp-client/types.js";
import type { Draft, ServerLocation } from "../plugin/setup/operation.js";
import type { CatalogEntry } from "./catalog.js";
import type { ConnectionSecrets, PublishedConnection } from "./store.js";

export function locationOf(entry: CatalogEntry): ServerLocation {
  if (entry.url !== undefined) return { url: entry.url };
  return { command: entry.command ?? "", args: entry.args ?? [] };
}

/**
 * The server to reach, with its credential values placed where they go: a catalog field with a header
 * becomes that header (with its prefix), any other field an environment variable of a stdio server.
 */
export function targetOf(
  location: ServerLocation,
  secrets: { env: Record<string, string>; headers: Record<string, string> },
  entry: CatalogEntry | null,
): ServerTarget {
  const env: Record<string, string> = {};
  const headers: Record<string, string> = { ...secrets.headers };
  for (const [name, value] of Object.entries(secrets.env)) {
    const field = entry?.fields.find((candidate) => candidate.name === name);
    if (field?.header !== undefined) headers[field.header] = `${field.prefix ?? ""}${value}`;
    else env[name] = value;
  }
  if ("url" in location) return { kind: "http", url: location.url, headers };
  return { kind: "stdio", command: location.command, args: location.args, env };
}

export function draftLocation(
  draft: Draft,
  catalog: ReadonlyMap<string, CatalogEntry>,
): ServerLocation | null {
  if (draft.kind === "custom") return draft.server;
  if (draft.kind === "catalog") {
    const entry = catalog.get(draft.catalogId);
    return entry === undefined ? null : locationOf(entry);
  }
  return null;
}

export function liveTargetOf(
  published: PublishedConnection,
  secrets: ConnectionSecrets | undefined,
  catalog: ReadonlyMap<string, CatalogEntry>,
): ServerTarget {
  const entry = published.catalogId === null ? null : (catalog.get(published.catalogId) ?? null);
  return targetOf(published.server, { env: secrets?.env ?? {}, headers: secrets?.headers ?? {} }, entry);
}
