/** The `/mcp` endpoint for external MCP clients holding a scoped, expiring access key. */
export { createMcpEndpoint, type McpEndpoint, type McpEndpointDeps } from "./endpoint.js";
export { secretDigest } from "./gate.js";
export { DEFAULT_LIMITS, type McpEndpointLimits } from "./limits.js";
export { MCP_PATH } from "./request-log.js";
