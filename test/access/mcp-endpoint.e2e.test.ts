import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "chai";
import sinon from "sinon";
import { startSlowServer } from "../../fixtures/servers/slow.js";
import { keyId, makeSecret } from "../helpers/access.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import { send } from "../helpers/http.js";
import { inspector } from "../helpers/inspector.js";
import { beginAndWait, call, requestId, resultOf, until } from "../helpers/setup.js";

type SlowServer = Awaited<ReturnType<typeof startSlowServer>>;

async function connectWith(gw: TestGateway, bearer: string): Promise<Client> {
  const client = new Client({ name: "external-agent", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", gw.url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  await client.connect(transport);
  return client;
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ text?: string }> }).content ?? [];
  return content.map((part) => part.text ?? "").join("");
}

describe("/mcp: an external agent with a scoped key", function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let slow: SlowServer;
  const main = "agent:main:main";

  async function createKey(tools: string[], sessionKey = main, ttlSeconds = 3600) {
    const { secret, digest } = makeSecret();
    const id = keyId();
    resultOf(
      await call(gw, "mcp.access.create", {
        id,
        label: "test agent",
        sessionKey,
        tools,
        tokenDigest: digest,
        ttlSeconds,
      }),
    );
    return { id, secret };
  }

  before(async () => {
    slow = await startSlowServer();
    gw = await startTestGateway();
    const review = await beginAndWait(gw, { name: "slow", config: { url: slow.url } }, ["review"]);
    resultOf(await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }));
  });
  after(async () => {
    await gw.close();
    await slow.close();
  });

  it("lists exactly the key's tools and calls them, in the key's conversation", async () => {
    const { secret } = await createKey(["slow__echo", "conversation_post_message"]);
    const client = await connectWith(gw, secret);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).to.deep.equal([
        "conversation_post_message",
        "slow__echo",
      ]);
      expect(
        textOf(await client.callTool({ name: "slow__echo", arguments: { text: "through the gateway" } })),
      ).to.equal("through the gateway");
      await client.callTool({ name: "conversation_post_message", arguments: { text: "hello main" } });
      const recent = await gw.gateway.root.conversations.recent(main, 5);
      expect(recent.map((message) => message.text)).to.include("hello main");
    } finally {
      await client.close();
    }
  });

  it("serves the MCP Inspector CLI: lists the key's tools and calls a connected server's tool", async () => {
    const { secret } = await createKey(["slow__echo", "conversation_recent_messages"]);
    const url = new URL("/mcp", gw.url).toString();
    const [listed, called] = await Promise.all([
      inspector(url, secret, ["--method", "tools/list"]),
      inspector(url, secret, [
        "--method",
        "tools/call",
        "--tool-name",
        "slow__echo",
        "--tool-arg",
        "text=via-inspector",
      ]),
    ]);
    expect(listed.code, listed.stderr).to.equal(0);
    const names = (JSON.parse(listed.stdout) as { tools: Array<{ name: string }> }).tools.map(
      (tool) => tool.name,
    );
    expect(names.sort()).to.deep.equal(["conversation_recent_messages", "slow__echo"]);
    expect(called.code, called.stderr).to.equal(0);
    expect(textOf(JSON.parse(called.stdout))).to.equal("via-inspector");
    const refused = await inspector(url, gw.token, ["--method", "tools/list"]);
    expect(refused.code).not.to.equal(0);
    expect(refused.stdout + refused.stderr).not.to.contain(gw.token);
  });

  it("refuses every tool outside the key, and another conversation stays untouched", async () => {
    gw.gateway.root.conversations.create("agent:other:1", "Other");
    const { secret } = await createKey(["conversation_post_message"], "agent:other:1");
    const client = await connectWith(gw, secret);
    try {
      for (const name of [
        "slow__echo",
        "slow__sleep",
        "conversation_recent_messages",
        "echo",
        "mcp_connection",
      ]) {
        const outcome = await client.callTool({ name, arguments: {} }).then(
          (result) => ((result as { isError?: boolean }).isError === true ? "refused" : "allowed"),
          () => "refused",
        );
        expect(outcome, name).to.equal("refused");
      }
      await client
        .callTool({
          name: "conversation_post_message",
          arguments: { text: "only here", sessionKey: main },
        })
        .catch(() => undefined);
      const mainMessages = (await gw.gateway.root.conversations.recent(main, 50)).map(
        (message) => message.text,
      );
      expect(mainMessages).not.to.include("only here");
    } finally {
      await client.close();
    }
  });

  it("answers 401 with WWW-Authenticate to the gateway token, a wrong key, a revoked or expired key", async () => {
    const post = (headers: Record<string, string>) =>
      send({
        url: gw.url,
        path: "/mcp",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        json: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
      });
    const revoked = await createKey(["slow__echo"]);
    resultOf(await call(gw, "mcp.access.revoke", { id: revoked.id }));
    const attempts: Array<Record<string, string>> = [
      { authorization: `Bearer ${gw.token}` },
      { "x-service-token": gw.token },
      { authorization: `Bearer ${makeSecret().secret}` },
      { authorization: `Bearer ${revoked.secret}` },
      {},
    ];
    for (const headers of attempts) {
      const reply = await post(headers);
      expect(reply.status, JSON.stringify(Object.keys(headers))).to.equal(401);
      expect(String(reply.headers["www-authenticate"])).to.match(/^Bearer/);
    }
    const expiring = await createKey(["slow__echo"], main, 60);
    const clock = sinon.useFakeTimers({ now: Date.now(), toFake: ["Date"] });
    try {
      expect((await post({ authorization: `Bearer ${expiring.secret}` })).status).to.equal(200);
      clock.tick(60_001);
      expect((await post({ authorization: `Bearer ${expiring.secret}` })).status).to.equal(401);
    } finally {
      clock.restore();
    }
    const withOrigin = await post({
      authorization: `Bearer ${(await createKey(["slow__echo"])).secret}`,
      origin: gw.url,
    });
    expect(withOrigin.status).to.equal(403);
  });

  it("cancels a call in flight when its key is revoked, then refuses the key", async () => {
    const { id, secret } = await createKey(["slow__sleep"]);
    const client = await connectWith(gw, secret);
    try {
      const started = Date.now();
      const pending = client.callTool({ name: "slow__sleep", arguments: { ms: 10_000 } }).then(
        (result) => ((result as { isError?: boolean }).isError === true ? "error" : "completed"),
        () => "error",
      );
      await until(() => slow.running() > 0);
      resultOf(await call(gw, "mcp.access.revoke", { id }));
      expect(await pending).to.equal("error");
      // Settled long before the tool's own 10 s: the revocation, not the tool, ended the call.
      expect(Date.now() - started).to.be.below(9_000);
      await until(() => slow.cancelled() > 0);
      expect(slow.calls.some((entry) => entry.tool === "sleep")).to.equal(false);
      const again = await client.listTools().then(
        () => "listed",
        () => "refused",
      );
      expect(again).to.equal("refused");
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it("stops exposing a tool whose connection was disabled, and a deleted conversation stops its keys", async () => {
    const { secret } = await createKey(["slow__echo", "conversation_post_message"]);
    resultOf(
      await call(gw, "mcp.connections.action", {
        name: "slow",
        requestId: requestId("disable"),
        action: "disable",
      }),
    );
    const client = await connectWith(gw, secret);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).to.deep.equal(["conversation_post_message"]);
      const refused = await client.callTool({ name: "slow__echo", arguments: { text: "x" } }).then(
        (result) => (result as { isError?: boolean }).isError === true,
        () => true,
      );
      expect(refused).to.equal(true);
    } finally {
      await client.close();
      resultOf(
        await call(gw, "mcp.connections.action", {
          name: "slow",
          requestId: requestId("enable"),
          action: "enable",
        }),
      );
    }
    gw.gateway.root.conversations.create("agent:doomed:1", "Doomed");
    const doomed = await createKey(["conversation_post_message"], "agent:doomed:1");
    const before = await connectWith(gw, doomed.secret);
    await before.close();
    gw.gateway.root.conversations.delete("agent:doomed:1");
    const after = await connectWith(gw, doomed.secret).then(
      async (client) => {
        await client.close();
        return "connected";
      },
      () => "refused",
    );
    expect(after).to.equal("refused");
    // A conversation that comes back under the same key does not bring the key back.
    gw.gateway.root.conversations.create("agent:doomed:1", "Doomed again");
    resultOf(await call(gw, "mcp.access.catalog", {}));
    const revived = await connectWith(gw, doomed.secret).then(
      async (client) => {
        await client.close();
        return "connected";
      },
      () => "refused",
    );
    expect(revived).to.equal("refused");
  });
});
