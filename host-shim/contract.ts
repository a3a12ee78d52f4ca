import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * The host contract: everything the plugin may use of the gateway that loads it. The plugin reaches
 * nothing else of the gateway; the reference host in fixtures/gateway implements exactly this.
 */
export interface GatewayHost {
  /** This gateway's (or profile's) own directory for plugin state. */
  readonly stateDir: string;
  /** The gateway administration token; a getter because the owner may rotate it. */
  getGatewayToken(): string;
  /** The gateway's shared extractor header for the token, lower case. Default `x-service-token`. */
  readonly tokenHeader?: string;
  /** Host names besides loopback names that the gateway answers to (its shared host/origin check). */
  readonly allowedHosts?: readonly string[];
  registerHttpRoute(route: HttpRoute): void;
  /**
   * False when routes this instance registers are not served (e.g. a profile reached only through the
   * profile host): then the /mcp endpoint, and external access, are not offered here. Default true.
   */
  readonly servesHttpRoutes?: boolean;
  /** Gateway methods are how a profile host reaches this profile's instance of the plugin. */
  registerGatewayMethod(method: string, handler: GatewayMethodHandler): void;
  /** Present on a multi-profile gateway. */
  readonly profiles?: ProfileHost;
  readonly conversations: Conversations;
  /**
   * The host's own tools that act on one conversation (e.g. read its recent messages, post to it). They
   * may be granted to external access keys; `call` receives the key's conversation as `sessionKey`.
   */
  readonly conversationTools?: readonly AgentTool[];
  /** This gateway's own base URL (e.g. http://127.0.0.1:18789), when it knows it; shown to owners. */
  localBaseUrl?(): string | null;
  readonly tools: ToolRegistry;
  readonly logger: HostLogger;
}

export interface HttpRoute {
  path: string;
  match: "exact" | "prefix";
  handler(req: IncomingMessage, res: ServerResponse): void | Promise<void>;
}

/** Resolves with the method's result; rejects with `GatewayMethodFailure` data, never a class instance. */
export type GatewayMethodHandler = (params: Record<string, unknown>) => Promise<unknown>;

export interface GatewayMethodFailure {
  code: string;
  message: string;
  /** The HTTP status the owner route should answer with. */
  status: number;
}

export interface ProfileHost {
  /**
   * Runs `method` on the named profile's gateway. Rejects with `GatewayMethodFailure` data: the method's
   * own, or `{ code: "PROFILE_NOT_FOUND", status: 404 }` for a name the host does not know.
   */
  rpc(
    method: "profiles.rpc",
    params: { name: string; method: string; params: Record<string, unknown> },
  ): Promise<unknown>;
}

export interface ConversationInfo {
  sessionKey: string;
  title: string;
}

export interface ConversationMessage {
  role: "user" | "assistant" | "system" | "tool";
  text: string;
  at: number;
}

export interface Conversations {
  list(): Promise<ConversationInfo[]>;
  exists(sessionKey: string): Promise<boolean>;
  title(sessionKey: string): Promise<string | null>;
  /** Recent messages, newest last. */
  recent(sessionKey: string, limit: number): Promise<ConversationMessage[]>;
  post(sessionKey: string, message: { role: "assistant" | "tool"; text: string }): Promise<void>;
  /** Called when a conversation is deleted; returns an unsubscribe function. */
  onDeleted(listener: (sessionKey: string) => void): () => void;
}

export interface ToolCallContext {
  sessionKey: string | null;
  signal: AbortSignal;
}

export interface AgentTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  call(args: Record<string, unknown>, context: ToolCallContext): Promise<unknown>;
}

export interface ToolRegistry {
  registerTool(tool: AgentTool): void;
  unregisterTool(name: string): void;
}

/** A pino-compatible subset: structured fields first, then a message. */
export interface HostLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}
