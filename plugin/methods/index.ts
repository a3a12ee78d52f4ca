import { featureWorks } from "../capability.js";
import { BUILT_FEATURES, METHOD_FEATURE } from "../features.js";
import type { MethodHandler } from "../method-context.js";
import { METHOD_NAMES, type MethodName } from "../method-names.js";
import { accessCatalog } from "./mcp.access.catalog.js";
import { accessCreate } from "./mcp.access.create.js";
import { accessList } from "./mcp.access.list.js";
import { accessRevoke } from "./mcp.access.revoke.js";
import { capabilities } from "./mcp.capabilities.js";
import { connectionAction } from "./mcp.connections.action.js";
import { listConnections } from "./mcp.connections.list.js";
import { beginSetup } from "./mcp.setup.begin.js";
import { setupCallback } from "./mcp.setup.callback.js";
import { setupCancel } from "./mcp.setup.cancel.js";
import { setupCancelRequest } from "./mcp.setup.cancel_request.js";
import { setupConfirm } from "./mcp.setup.confirm.js";
import { setupPending } from "./mcp.setup.pending.js";
import { setupStatus } from "./mcp.setup.status.js";
import { unavailable } from "./unavailable.js";

const IMPLEMENTED: Partial<Record<MethodName, MethodHandler>> = {
  "mcp.capabilities": capabilities,
  "mcp.connections.list": listConnections,
  "mcp.connections.action": connectionAction,
  "mcp.setup.begin": beginSetup,
  "mcp.setup.status": setupStatus,
  "mcp.setup.pending": setupPending,
  "mcp.setup.confirm": setupConfirm,
  "mcp.setup.callback": setupCallback,
  "mcp.setup.cancel": setupCancel,
  "mcp.setup.cancel_request": setupCancelRequest,
  "mcp.access.catalog": accessCatalog,
  "mcp.access.list": accessList,
  "mcp.access.create": accessCreate,
  "mcp.access.revoke": accessRevoke,
};

function handlerFor(name: MethodName): MethodHandler {
  const feature = METHOD_FEATURE[name];
  const implemented = IMPLEMENTED[name];
  if (feature !== undefined && !BUILT_FEATURES[feature]) return unavailable(feature);
  if (implemented === undefined) return unavailable(feature ?? "connectionSetup");
  if (feature === undefined) return implemented;
  const refuse = unavailable(feature);
  // Built is not enough: this runtime must support the feature too, exactly as capabilities says.
  return async (params, context) =>
    featureWorks(feature, context.described) ? implemented(params, context) : refuse(params, context);
}

/** Method name → handler. A Map, so a name like `constructor` finds nothing. */
export const METHOD_HANDLERS: ReadonlyMap<string, MethodHandler> = new Map(
  METHOD_NAMES.map((name) => [name, handlerFor(name)]),
);
