import type { DiscoveredTool } from "../../plugin/mcp-client/types.js";
import type { LiveToolStatus, PermissionRecord } from "./types.js";

/** Separator between a connection's name and its tool's name in the agent's registry. */
export const TOOL_NAME_SEPARATOR = "__";

export function agentToolName(connection: string, tool: string): string {
  return `${connection}${TOOL_NAME_SEPARATOR}${tool}`;
}

/** Whether the permission mode lets a tool through at all (before the approval check). */
export function modeAllows(permissions: PermissionRecord, tool: string): boolean {
  switch (permissions.mode) {
    case "all":
      return !permissions.exclude.includes(tool);
    case "selected":
      return permissions.include.includes(tool);
    case "none":
      return false;
  }
}

/** The definition hash the owner approved for a tool, if any (own keys only: "constructor" is a name too). */
export function approvedHash(permissions: PermissionRecord, tool: string): string | null {
  if (!Object.hasOwn(permissions.approved, tool)) return null;
  const hash = permissions.approved[tool];
  return typeof hash === "string" ? hash : null;
}

/** Exposed iff the mode allows it AND the owner approved exactly this definition. */
export function isExposable(
  permissions: PermissionRecord,
  tool: Pick<DiscoveredTool, "name" | "hash">,
): boolean {
  return modeAllows(permissions, tool.name) && approvedHash(permissions, tool.name) === tool.hash;
}

/** Allowed by the mode, but new or changed since the owner's approval: the owner must review it again. */
export function isAwaitingReview(
  permissions: PermissionRecord,
  tool: Pick<DiscoveredTool, "name" | "hash">,
): boolean {
  return modeAllows(permissions, tool.name) && approvedHash(permissions, tool.name) !== tool.hash;
}

/** The tools that should be registered, by remote tool name. */
export function exposableTools(
  permissions: PermissionRecord,
  tools: readonly DiscoveredTool[],
): Map<string, DiscoveredTool> {
  const out = new Map<string, DiscoveredTool>();
  for (const tool of tools) if (isExposable(permissions, tool)) out.set(tool.name, tool);
  return out;
}

export function toolStatuses(
  permissions: PermissionRecord,
  tools: readonly DiscoveredTool[],
  registered: ReadonlyMap<string, string>,
): LiveToolStatus[] {
  return tools.map((tool) => ({
    name: tool.name,
    exposed: registered.get(tool.name) === tool.hash,
    awaitingReview: isAwaitingReview(permissions, tool),
  }));
}
