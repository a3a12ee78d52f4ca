import type { DiscoveredTool } from "../../plugin/mcp-client/types.js";
import type { AgentTool, HostLogger, ToolRegistry } from "../contract.js";
import { agentToolName } from "./exposure.js";

export type ToolCaller = (
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<unknown>;

/**
 * One connection's share of the agent's tool registry: holds exactly the tools it was last told to
 * expose, each registered as `<connection>__<tool>` and pinned to the definition hash it was registered with.
 */
export class ToolBridge {
  /** Remote tool name → hash of the definition registered with the agent. */
  private readonly registered = new Map<string, string>();

  constructor(
    private readonly connection: string,
    private readonly tools: ToolRegistry,
    private readonly logger: HostLogger,
    private readonly call: ToolCaller,
  ) {}

  hashes(): ReadonlyMap<string, string> {
    return this.registered;
  }

  /** Unregisters what is no longer wanted (or changed), then registers what is new. */
  sync(want: ReadonlyMap<string, DiscoveredTool>): void {
    for (const [tool, hash] of this.registered) {
      if (want.get(tool)?.hash === hash) continue;
      this.tools.unregisterTool(agentToolName(this.connection, tool));
      this.registered.delete(tool);
    }
    for (const [tool, def] of want) {
      if (this.registered.has(tool)) continue;
      try {
        this.tools.registerTool(this.agentTool(def));
        this.registered.set(tool, def.hash);
      } catch {
        this.logger.warn(
          { connection: this.connection, tool },
          "tool name already taken in the agent registry",
        );
      }
    }
  }

  clear(): void {
    for (const tool of this.registered.keys())
      this.tools.unregisterTool(agentToolName(this.connection, tool));
    this.registered.clear();
  }

  private agentTool(def: DiscoveredTool): AgentTool {
    return {
      name: agentToolName(this.connection, def.name),
      description: def.description,
      inputSchema: def.inputSchema,
      call: (args, context) => this.call(def.name, args, context.signal),
    };
  }
}
