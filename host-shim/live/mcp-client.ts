/**
 * The MCP client layer as the live manager uses it (one seam, so the manager's modules name one path).
 */
export { type ConnectResult, connectClient } from "../../plugin/mcp-client/connect.js";
export { listDiscovery } from "../../plugin/mcp-client/discover.js";
export { refreshTokens } from "../../plugin/mcp-client/oauth.js";
