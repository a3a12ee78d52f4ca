/** The spec's allowlist: the only values `method` may take. A Set, so no prototype key can match. */
export const METHOD_NAMES = [
  "mcp.capabilities",
  "mcp.connections.list",
  "mcp.connections.action",
  "mcp.setup.begin",
  "mcp.setup.status",
  "mcp.setup.pending",
  "mcp.setup.confirm",
  "mcp.setup.callback",
  "mcp.setup.cancel",
  "mcp.setup.cancel_request",
  "mcp.access.catalog",
  "mcp.access.list",
  "mcp.access.create",
  "mcp.access.revoke",
  "mcp.chat.pending",
  "mcp.chat.cancel",
] as const;

export type MethodName = (typeof METHOD_NAMES)[number];

const ALLOWED: ReadonlySet<string> = new Set(METHOD_NAMES);

export function isMethodName(value: string): value is MethodName {
  return ALLOWED.has(value);
}
