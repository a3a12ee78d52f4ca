export type {
  AgentTool,
  ConversationInfo,
  ConversationMessage,
  Conversations,
  GatewayHost,
  GatewayMethodFailure,
  GatewayMethodHandler,
  HostLogger,
  HttpRoute,
  ProfileHost,
  ToolCallContext,
  ToolRegistry,
} from "./contract.js";
export { MANAGE_PATH } from "./manage-route.js";
export type { PluginOptions, PluginOptionsInput } from "./options.js";
export { type PluginHandle, register } from "./register.js";
