import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import type { ExternalTool } from "../access-contract.js";
import { type CallScope, runToolCall } from "./tool-call.js";

/**
 * The SDK gives every Server its own Ajv instance, built in about a millisecond; a stateless endpoint
 * builds a Server per request. This server never validates a schema (it sends no elicitation), so one
 * validator, made on first use, serves every request.
 */
let validator: AjvJsonSchemaValidator | undefined;
function sharedValidator(): AjvJsonSchemaValidator {
  validator ??= new AjvJsonSchemaValidator();
  return validator;
}

export const SERVER_INFO = { name: "mcp-manage", version: "0.1.0" } as const;

const INSTRUCTIONS =
  "Tools of one gateway conversation, granted to this access key by the gateway's owner. The key is scoped and expires.";

/**
 * What a request hands its server with each message (the SDK's `authInfo` channel): the key's id and the
 * request's scope. Never the secret: `token` stays empty.
 */
export function authInfoOf(scope: CallScope): AuthInfo {
  return { token: "", clientId: scope.key.id, scopes: [], extra: { scope } };
}

function scopeOf(extra: { authInfo?: AuthInfo | undefined }): CallScope {
  const scope = extra.authInfo?.extra?.scope as CallScope | undefined;
  // Every message comes through runMcp with its scope; a message without one is a bug, never a default key.
  if (scope === undefined) throw new McpError(ErrorCode.InternalError, "The request has no access key.");
  return scope;
}

/**
 * An MCP server that serves one request at a time. Its handlers keep no key: each message carries its
 * request's scope in `authInfo`, so a server can serve request after request (see ServerPool).
 */
export function buildServer(): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: sharedValidator(),
  });

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const scope = scopeOf(extra);
    let tools: ExternalTool[];
    try {
      tools = await scope.registry.toolsFor(scope.key);
    } catch {
      // The registry's error text is not the client's business; the request log has the key id.
      throw new McpError(ErrorCode.InternalError, "The tool list is unavailable right now.");
    }
    // The key's own list bounds what is shown, whatever the registry returns.
    const allowed = new Set(scope.key.tools);
    const listed: Tool[] = tools
      .filter((tool) => allowed.has(tool.name))
      .map((tool) => ({
        name: tool.name,
        description: tool.description,
        // MCP tool input is always an object; a schema claiming otherwise would break the whole list.
        inputSchema: { ...tool.inputSchema, type: "object" },
      }));
    return { tools: listed };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const scope = scopeOf(extra);
    const result = await runToolCall(scope, request.params.name, request.params.arguments, extra.signal);
    return result as CallToolResult;
  });

  return server;
}

/**
 * Servers between requests. Stateless Streamable HTTP needs a fresh transport per request, and a Server
 * attaches to one transport at a time; a server is taken for one request, connected to that request's
 * transport, and comes back once closed (the SDK supports close() then connect() on one Protocol).
 */
export class ServerPool {
  private readonly idle: Server[] = [];

  constructor(private readonly maxIdle: number) {}

  take(): Server {
    return this.idle.pop() ?? buildServer();
  }

  /** Keeps a server that is closed (attached to no transport); any other is dropped. */
  give(server: Server): void {
    if (server.transport === undefined && this.idle.length < this.maxIdle) this.idle.push(server);
  }
}
