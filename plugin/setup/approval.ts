import { methodError } from "../errors.js";
import type { Discovery } from "../mcp-client/types.js";
import type { PermissionsInput } from "./params.js";

/**
 * Checks a permission decision against what discovery found and pins it: each tool the decision exposes
 * is approved at the hash of the definition the owner saw.
 */
export function approve(decision: PermissionsInput, discovery: Discovery): Record<string, string> {
  const found = new Map(discovery.tools.map((tool) => [tool.name, tool.hash]));
  const unknown = [...decision.include, ...decision.exclude].filter((name) => !found.has(name));
  if (unknown.length > 0) {
    throw methodError("INVALID_PARAMS", `Tools not found by discovery: ${unknown.slice(0, 5).join(", ")}.`);
  }
  if (decision.mode !== "selected" && decision.include.length > 0) {
    throw methodError("INVALID_PARAMS", "params.permissions.include goes with mode selected.");
  }
  if (decision.mode !== "all" && decision.exclude.length > 0) {
    throw methodError("INVALID_PARAMS", "params.permissions.exclude goes with mode all.");
  }
  if (decision.resources && !discovery.resources) {
    throw methodError("INVALID_PARAMS", "The server offers no resources to permit.");
  }
  if (decision.prompts && !discovery.prompts)
    throw methodError("INVALID_PARAMS", "The server offers no prompts to permit.");
  const exposed =
    decision.mode === "all"
      ? [...found.keys()].filter((name) => !decision.exclude.includes(name))
      : decision.mode === "selected"
        ? decision.include
        : [];
  return Object.fromEntries(exposed.map((name) => [name, found.get(name) ?? ""]));
}
