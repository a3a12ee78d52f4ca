import { createHash } from "node:crypto";

export interface ToolDefinition {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

/**
 * JSON with object keys sorted at every depth, so two documents that differ only in key order are
 * the same text. Follows JSON.stringify otherwise: undefined (and function) members are dropped,
 * undefined in an array and non-finite numbers become null.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number") return Number.isFinite(value) ? JSON.stringify(value) : "null";
    if (typeof value === "string" || typeof value === "boolean") return JSON.stringify(value);
    if (typeof value === "bigint") throw new TypeError("a bigint has no JSON form");
    return "null";
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => (isAbsent(item) ? "null" : canonicalJson(item))).join(",")}]`;
  }
  const members: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (isAbsent(item)) continue;
    members.push(`${JSON.stringify(key)}:${canonicalJson(item)}`);
  }
  return `{${members.join(",")}}`;
}

function isAbsent(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

/** sha256 (hex) of the canonical JSON of {name, description, inputSchema}: what a tool approval is pinned to. */
export function toolDefinitionHash(tool: ToolDefinition): string {
  const text = canonicalJson({
    name: tool.name,
    description: tool.description ?? "",
    inputSchema: tool.inputSchema,
  });
  return createHash("sha256").update(text, "utf8").digest("hex");
}
