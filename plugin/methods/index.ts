import { BUILT_FEATURES, METHOD_FEATURE } from "../features.js";
import type { MethodHandler } from "../method-context.js";
import { METHOD_NAMES, type MethodName } from "../method-names.js";
import { capabilities } from "./mcp.capabilities.js";
import { listConnections } from "./mcp.connections.list.js";
import { unavailable } from "./unavailable.js";

const IMPLEMENTED: Partial<Record<MethodName, MethodHandler>> = {
  "mcp.capabilities": capabilities,
  "mcp.connections.list": listConnections,
};

function handlerFor(name: MethodName): MethodHandler {
  const feature = METHOD_FEATURE[name];
  const implemented = IMPLEMENTED[name];
  if (feature !== undefined && !BUILT_FEATURES[feature]) return unavailable(feature);
  if (implemented === undefined) return unavailable(feature ?? "connectionSetup");
  return implemented;
}

/** Method name → handler. A Map, so a name like `constructor` finds nothing. */
export const METHOD_HANDLERS: ReadonlyMap<string, MethodHandler> = new Map(
  METHOD_NAMES.map((name) => [name, handlerFor(name)]),
);
