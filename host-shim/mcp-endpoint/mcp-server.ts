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
 * The MCP server of one request. Stateless mode gives every HTTP request a fresh low-level Server, so the
 * handlers close over that request's authenticated key and nothing outlives the request.
 */
export function buildServer(scope: CallScope): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: INSTRUCTIONS,
    jsonSchemaValidator: sharedValidator(),
  });

  server.setRequestHandler(ListToolsRequestSchema, async () => {
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
    const result = await runToolCall(scope, request.params.name, request.params.arguments, extra.signal);
    return result as CallToolResult;
  });

  return server;
}
