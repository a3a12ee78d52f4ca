import type { MethodName } from "./method-names.js";

/**
 * What this build implements. A capability is advertised only when its feature is built here AND the
 * runtime can support it; a method whose feature is not built answers UNAVAILABLE.
 */
export const BUILT_FEATURES = {
  connectionSetup: true,
  nativeOAuth: true,
  explicitPermissions: true,
  chatSetup: false,
  externalAgentAccess: true,
} as const;

export type Feature = keyof typeof BUILT_FEATURES;

/** The feature each method needs; methods absent here need none. */
export const METHOD_FEATURE: Partial<Record<MethodName, Feature>> = {
  "mcp.connections.action": "connectionSetup",
  "mcp.setup.begin": "connectionSetup",
  "mcp.setup.status": "connectionSetup",
  "mcp.setup.pending": "connectionSetup",
  "mcp.setup.confirm": "explicitPermissions",
  "mcp.setup.callback": "nativeOAuth",
  "mcp.setup.cancel": "connectionSetup",
  "mcp.setup.cancel_request": "connectionSetup",
  "mcp.access.catalog": "externalAgentAccess",
  "mcp.access.list": "externalAgentAccess",
  "mcp.access.create": "externalAgentAccess",
  "mcp.access.revoke": "externalAgentAccess",
  "mcp.chat.pending": "chatSetup",
  "mcp.chat.cancel": "chatSetup",
};
