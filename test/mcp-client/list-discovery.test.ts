import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  ErrorCode,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { expect } from "chai";
import { listDiscovery } from "../../plugin/mcp-client/discover.js";
import { toolDefinitionHash } from "../../plugin/mcp-client/tool-hash.js";

type Page = { names: string[]; next?: string };

/** A low-level server whose tools/list returns the given pages (keyed by cursor; "" = first page). */
async function serverWith(
  pages: Record<string, Page>,
  extras: { resources?: "ok" | "fail"; prompts?: "ok" | "fail" },
) {
  const server = new Server(
    { name: "paged", version: "1.0.0" },
    {
      capabilities: {
        tools: {},
        ...(extras.resources ? { resources: {} } : {}),
        ...(extras.prompts ? { prompts: {} } : {}),
      },
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const page = pages[request.params?.cursor ?? ""];
    if (!page) throw new McpError(ErrorCode.InvalidParams, "bad cursor");
    return {
      tools: page.names.map((name) => ({ name, inputSchema: { type: "object" as const, properties: {} } })),
      ...(page.next ? { nextCursor: page.next } : {}),
    };
  });
  const answer = (mode: "ok" | "fail" | undefined, result: Record<string, unknown[]>) => async () => {
    if (mode === "fail") throw new McpError(ErrorCode.InternalError, "nope");
    return result;
  };
  // The SDK refuses a handler for an undeclared capability.
  if (extras.resources)
    server.setRequestHandler(ListResourcesRequestSchema, answer(extras.resources, { resources: [] }));
  if (extras.prompts)
    server.setRequestHandler(ListPromptsRequestSchema, answer(extras.prompts, { prompts: [] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "1.0.0" });
  await client.connect(clientSide);
  return {
    client,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

describe("mcp-client listDiscovery", () => {
  it("follows every page of tools/list and hashes each tool", async () => {
    const pages = {
      "": { names: ["a", "b"], next: "p2" },
      p2: { names: ["c"], next: "p3" },
      p3: { names: ["d"] },
    };
    const { client, close } = await serverWith(pages, { resources: "ok", prompts: "fail" });
    try {
      const discovery = await listDiscovery(client, "stdio", { timeoutMs: 2000 });
      expect(discovery.tools.map((t) => t.name)).to.deep.equal(["a", "b", "c", "d"]);
      expect(discovery.tools[0]).to.deep.include({ description: "", annotations: null });
      expect(discovery.tools[0]?.hash).to.equal(
        toolDefinitionHash({ name: "a", description: "", inputSchema: { type: "object", properties: {} } }),
      );
      // Declared and listable → true; declared but failing → false.
      expect(discovery).to.include({ transport: "stdio", resources: true, prompts: false });
    } finally {
      await close();
    }
  });

  it("reports undeclared resources and prompts as false without asking", async () => {
    const { client, close } = await serverWith({ "": { names: ["only"] } }, {});
    try {
      expect(await listDiscovery(client, "sse")).to.deep.include({ resources: false, prompts: false });
    } finally {
      await close();
    }
  });

  const broken: Array<[string, Record<string, Page>, string]> = [
    ["a cursor loop", { "": { names: ["a"], next: "x" }, x: { names: ["b"], next: "x" } }, "loop back"],
    ["a duplicate tool name", { "": { names: ["a"], next: "x" }, x: { names: ["a"] } }, "same tool name"],
    ["a refused page", { "": { names: ["a"], next: "missing" } }, "refused to list"],
  ];
  for (const [what, pages, message] of broken) {
    it(`throws CONNECTION_FAILED (not_mcp) on ${what}`, async () => {
      const { client, close } = await serverWith(pages, {});
      try {
        const error = await listDiscovery(client, "streamable-http").then(
          () => expect.fail("expected a rejection"),
          (e: unknown) => e as Record<string, unknown>,
        );
        expect(error).to.include({ name: "MethodError", code: "CONNECTION_FAILED", reason: "not_mcp" });
        expect(error.message).to.include(message);
      } finally {
        await close();
      }
    });
  }
});
