import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { AccessBook } from "../../host-shim/access.js";
import type { AgentTool, GatewayHost } from "../../host-shim/contract.js";
import type { LiveManager } from "../../host-shim/live-contract.js";
import { ProfileStore, type PublishedConnection } from "../../host-shim/store.js";
import type { DiscoveredTool } from "../../plugin/mcp-client/types.js";
import { makeSecret } from "../helpers/access.js";
import { rejection } from "../live/helpers.js";

const SESSION = "agent:main:main";

function tool(name: string): DiscoveredTool {
  return {
    name,
    description: `${name} tool`,
    inputSchema: { type: "object" },
    annotations: null,
    hash: name,
  };
}

/** A live manager double: fixed exposed tools per connection; a call answers with where it went. */
function liveDouble(exposed: Record<string, DiscoveredTool[]>): LiveManager {
  return {
    available: true,
    apply: async () => {
      throw new Error("not used");
    },
    remove: async () => undefined,
    status: () => null,
    discovery: () => null,
    exposedTools: (name) => exposed[name] ?? [],
    callTool: async (name, toolName) => ({ content: [{ type: "text", text: `${name}/${toolName}` }] }),
    close: async () => undefined,
  };
}

function conversationTool(name: string, answer: string): AgentTool {
  return {
    name,
    description: answer,
    inputSchema: { type: "object" },
    call: async () => ({ content: [{ type: "text", text: answer }] }),
  };
}

function hostDouble(conversationTools: AgentTool[]): GatewayHost {
  return {
    stateDir: "",
    getGatewayToken: () => "gateway-token",
    registerHttpRoute: () => undefined,
    registerGatewayMethod: () => undefined,
    conversations: {
      list: async () => [{ sessionKey: SESSION, title: "Main" }],
      exists: async (sessionKey) => sessionKey === SESSION,
      title: async () => "Main",
      recent: async () => [],
      post: async () => undefined,
      onDeleted: () => () => undefined,
    },
    conversationTools,
    tools: { registerTool: () => undefined, unregisterTool: () => undefined },
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
  };
}

function published(enabled: boolean): PublishedConnection {
  return { enabled } as PublishedConnection;
}

describe("external access keys: the access book's lookups", () => {
  let dir: string;
  let store: ProfileStore;
  let book: AccessBook;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "mcp-manage-book-"));
    store = await ProfileStore.open(dir);
    // Names that split two ways: connection "a" with tool "b__c", and connection "a__b" with tool "c".
    store.connections.value = {
      version: 1,
      connections: {
        a: published(true),
        a__b: published(true),
        off: published(false),
        shadowed: published(true),
      },
    };
    const live = liveDouble({
      a: [tool("b__c"), tool("x")],
      a__b: [tool("c"), tool("d")],
      off: [tool("t")],
      shadowed: [tool("t")],
    });
    const host = hostDouble([
      conversationTool("shadowed__t", "first conversation tool"),
      conversationTool("shadowed__t", "last conversation tool"),
    ]);
    book = new AccessBook({ host, store, live, now: () => Date.now() });
    await book.start();
  });
  afterEach(async () => {
    book.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function key(tools: string[]) {
    const { digest } = makeSecret();
    await book.create({
      id: `k-${digest.slice(0, 8)}`,
      label: "k",
      sessionKey: SESSION,
      tools,
      tokenDigest: digest,
      ttlSeconds: 3600,
    });
    const found = book.authenticate(digest);
    if (found === null) throw new Error("the new key does not authenticate");
    return { found, digest };
  }

  it("calls the tool the catalog lists under a name, with the same precedence", async () => {
    const catalog = await book.catalog(SESSION);
    const names = catalog.tools.map((entry) => entry.name);
    expect(names).to.include.members(["a__b__c", "a__x", "a__b__d", "shadowed__t"]);
    expect(names).to.not.include("off__t");
    const { found } = await key(["a__b__c", "a__x", "a__b__d", "shadowed__t"]);
    const signal = new AbortController().signal;
    const text = async (name: string) => {
      const result = await book.callTool(found, name, {}, signal);
      return (result.content[0] as { text: string }).text;
    };
    // The first enabled connection in published order that exposes the name wins, as in the catalog.
    expect(await text("a__b__c")).to.equal("a/b__c");
    expect(await text("a__x")).to.equal("a/x");
    expect(await text("a__b__d")).to.equal("a__b/d");
    // A conversation tool shadows a connection tool; of two with one name, the last counts.
    expect(await text("shadowed__t")).to.equal("last conversation tool");
    const description = catalog.tools.find((entry) => entry.name === "shadowed__t")?.description;
    expect(description).to.equal("last conversation tool");
  });

  it("never calls a tool of a disabled connection, or one outside the key", async () => {
    const { found } = await key(["a__x"]);
    const signal = new AbortController().signal;
    const outside = (await rejection(book.callTool(found, "a__b__d", {}, signal))) as { code: string };
    expect(outside.code).to.equal("UNKNOWN_TOOL");
    const widened = { ...found, tools: ["off__t"] };
    const disabled = (await rejection(book.callTool(widened, "off__t", {}, signal))) as { code: string };
    expect(disabled.code).to.equal("UNKNOWN_TOOL");
  });

  it("authenticates by digest across creates and revocations, at once", async () => {
    const first = await key(["a__x"]);
    expect(book.authenticate(first.digest)).to.equal(first.found);
    const second = await key(["a__b__d"]);
    expect(book.authenticate(second.digest)?.tools).to.deep.equal(["a__b__d"]);
    expect(book.authenticate(first.digest)?.id).to.equal(first.found.id);
    const revoking = book.revoke(first.found.id);
    expect(book.authenticate(first.digest)).to.equal(null);
    await revoking;
    expect(book.authenticate(first.digest)).to.equal(null);
    expect(book.authenticate(second.digest)?.id).to.equal(second.found.id);
    expect(book.authenticate(makeSecret().digest)).to.equal(null);
  });
});
