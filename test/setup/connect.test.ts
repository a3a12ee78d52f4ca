import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "chai";
import { startFailingServer } from "../../fixtures/servers/failing.js";
import { startLegacySseServer } from "../../fixtures/servers/legacy-sse.js";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { STDIO_SERVER_PATH } from "../../fixtures/servers/stdio-path.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import { type Snapshot, beginAndWait, call, errorOf, requestId, resultOf } from "../helpers/setup.js";

interface ConnectionsList {
  connections: Array<{
    name: string;
    status: string;
    statusReason: string | null;
    enabled: boolean;
    tools: Array<{ name: string; exposed: boolean; awaitingReview: boolean }>;
    permissions: { mode: string };
  }>;
  catalog: Array<{ id: string; configured: boolean }>;
}

describe("connection setup: discovery, review, confirm, live tools", function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let plain: Awaited<ReturnType<typeof startPlainServer>>;

  before(async () => {
    plain = await startPlainServer();
    gw = await startTestGateway({ profiles: ["a"] });
  });
  after(async () => {
    await gw.close();
    await plain.close();
  });

  for (const profile of [null, "a"]) {
    const instance = () => (profile === null ? gw.gateway.root : gw.gateway.profiles.get(profile));

    it(`connects a Streamable HTTP server end to end (${profile ?? "root"})`, async () => {
      const review = await beginAndWait(
        gw,
        { name: "plain", config: { url: plain.url } },
        ["review", "failed"],
        profile,
      );
      expect(review.phase, JSON.stringify(review.error)).to.equal("review");
      expect(review.tools.map((tool) => tool.name).sort()).to.deep.equal(["add", "echo"]);
      expect(review.capabilities).to.deep.equal({ resources: true, prompts: true });
      expect(review.saved).to.equal(false);

      const done = resultOf(
        await call(
          gw,
          "mcp.setup.confirm",
          { id: review.id, permissions: { mode: "all", exclude: ["add"] } },
          profile,
        ),
      );
      expect(done.phase).to.equal("complete");
      expect(done.saved).to.equal(true);
      expect(done.runtime).to.include({ applied: true, status: "connected" });

      const tools = instance()?.tools;
      expect(tools?.names()).to.include("plain__echo").and.not.include("plain__add");
      const result = (await tools?.call("plain__echo", { text: "hello" })) as {
        content: Array<{ text: string }>;
      };
      expect(result.content[0]?.text).to.contain("hello");

      const list = resultOf<ConnectionsList>(await call(gw, "mcp.connections.list", {}, profile));
      const entry = list.connections.find((connection) => connection.name === "plain");
      expect(entry).to.include({ status: "connected", enabled: true });
      expect(entry?.tools).to.deep.include({ name: "echo", exposed: true, awaitingReview: false });
      expect(entry?.tools).to.deep.include({ name: "add", exposed: false, awaitingReview: false });
    });
  }

  it("keeps each profile's connections apart", async () => {
    const root = resultOf<ConnectionsList>(await call(gw, "mcp.connections.list", {}));
    const a = resultOf<ConnectionsList>(await call(gw, "mcp.connections.list", {}, "a"));
    expect(root.connections.map((c) => c.name)).to.deep.equal(["plain"]);
    expect(a.connections.map((c) => c.name)).to.deep.equal(["plain"]);
    const profileDir = join(gw.stateDir, "profiles", "a");
    const published = JSON.parse(await readFile(join(profileDir, "connections.json"), "utf8"));
    expect(Object.keys(published.connections)).to.deep.equal(["plain"]);
    expect((await stat(join(profileDir, "secrets.json"))).mode & 0o777).to.equal(0o600);
  });

  it("connects a stdio server, passing its env values and never returning them", async () => {
    const secret = "fixture-env-secret-7a7a7a";
    const review = await beginAndWait(
      gw,
      {
        name: "local",
        config: { command: process.execPath, args: [STDIO_SERVER_PATH], env: { FIXTURE_KEY: secret } },
      },
      ["review", "failed"],
    );
    expect(review.phase, JSON.stringify(review.error)).to.equal("review");
    const done = resultOf(
      await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }),
    );
    expect(done.runtime?.status).to.equal("connected");
    const result = (await gw.gateway.root.tools.call("local__env_echo", { name: "FIXTURE_KEY" })) as {
      content: Array<{ text: string }>;
    };
    expect(result.content[0]?.text).to.contain(secret);
    const list = await call(gw, "mcp.connections.list", {});
    expect(list.text).not.to.contain(secret);
    expect(JSON.stringify(done)).not.to.contain(secret);
    expect(await readFile(join(gw.stateDir, "root", "connections.json"), "utf8")).not.to.contain(secret);
    expect(gw.logs.join("\n")).not.to.contain(secret);
  });

  it("falls back to a legacy HTTP+SSE server", async () => {
    const legacy = await startLegacySseServer();
    try {
      const review = await beginAndWait(gw, { name: "legacy", config: { url: legacy.url } }, [
        "review",
        "failed",
      ]);
      expect(review.phase, JSON.stringify(review.error)).to.equal("review");
      expect(review.tools.map((tool) => tool.name)).to.include("echo");
      await call(gw, "mcp.setup.cancel", { id: review.id });
    } finally {
      await legacy.close();
    }
  });

  for (const mode of ["http404", "not-mcp", "http500", "refuse-auth"] as const) {
    it(`reports a ${mode} server as failed with CONNECTION_FAILED and a reason`, async () => {
      const failing = await startFailingServer(mode);
      try {
        const done = await beginAndWait(gw, { name: `bad-${mode}`, config: { url: failing.url } }, [
          "failed",
          "review",
        ]);
        expect(done.phase).to.equal("failed");
        expect(done.error?.code).to.be.oneOf(["CONNECTION_FAILED", "OAUTH_INVALID"]);
        expect(done.error?.message)
          .to.be.a("string")
          .and.not.match(/Error:|at .*\.js/);
      } finally {
        await failing.close();
      }
    });
  }

  it("reports an unreachable server", async () => {
    const done = await beginAndWait(gw, { name: "nowhere", config: { url: "http://127.0.0.1:9/mcp" } }, [
      "failed",
    ]);
    expect(done.error?.code).to.equal("CONNECTION_FAILED");
    expect(done.error?.message.toLowerCase()).to.match(/reach|refused|connect/);
  });

  it("refuses bad drafts with clear errors", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: "x", requestId: requestId() }, "INVALID_PARAMS"],
      [{ name: "x", requestId: requestId(), config: { url: "http://example.com/mcp" } }, "CONFIG_INVALID"],
      [
        { name: "x", requestId: requestId(), config: { url: "https://a.example", command: "x" } },
        "CONFIG_INVALID",
      ],
      [
        { name: "x", requestId: requestId(), config: { command: "x", headers: { A: "b" } } },
        "CONFIG_INVALID",
      ],
      [{ name: "x", requestId: requestId(), catalog: true }, "CONFIG_INVALID"],
      [{ name: "brave-search", requestId: requestId(), catalog: true }, "CONFIG_INVALID"],
      [
        { name: "brave-search", requestId: requestId(), catalog: true, envValues: { NOPE: "v" } },
        "CONFIG_INVALID",
      ],
      [{ name: "x", requestId: requestId(), chatRequestId: "chat-1" }, "UNAVAILABLE"],
      [{ name: "x y", requestId: requestId(), config: { url: plain.url } }, "INVALID_PARAMS"],
      [{ name: "x", requestId: "short", config: { url: plain.url } }, "INVALID_PARAMS"],
      [
        {
          name: "x",
          requestId: requestId(),
          config: { url: plain.url },
          redirectUri: "https://evil.example/cb",
        },
        "INVALID_PARAMS",
      ],
      [{ name: "plain", requestId: requestId(), config: { url: plain.url } }, "CONFIG_INVALID"],
      [{ name: "ghost", requestId: requestId(), intent: "permissions" }, "NOT_FOUND"],
      [{ name: "x", requestId: requestId(), config: { url: plain.url }, extra: 1 }, "INVALID_PARAMS"],
    ];
    for (const [params, code] of cases) {
      const error = errorOf(await call(gw, "mcp.setup.begin", params));
      expect(error.code, JSON.stringify(params)).to.equal(code);
    }
  });

  it("confirm checks the decision against discovery, and is idempotent", async () => {
    const review = await beginAndWait(gw, { name: "plain2", config: { url: plain.url } }, ["review"]);
    const bad = errorOf(
      await call(gw, "mcp.setup.confirm", {
        id: review.id,
        permissions: { mode: "selected", include: ["nope"] },
      }),
    );
    expect(bad.code).to.equal("INVALID_PARAMS");
    const decision = { mode: "selected", include: ["add"] };
    const first = resultOf<Snapshot>(
      await call(gw, "mcp.setup.confirm", { id: review.id, permissions: decision }),
    );
    expect(first.phase).to.equal("complete");
    const again = resultOf<Snapshot>(
      await call(gw, "mcp.setup.confirm", { id: review.id, permissions: decision }),
    );
    expect(again.id).to.equal(first.id);
    const other = errorOf(
      await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }),
    );
    expect(other.code).to.equal("CONFLICT");
    expect(gw.gateway.root.tools.names()).to.include("plain2__add").and.not.include("plain2__echo");
  });
});
