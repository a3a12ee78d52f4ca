import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { selfSignedPair } from "../../fixtures/gateway/tls.js";
import { type FailingMode, startFailingServer } from "../../fixtures/servers/failing.js";
import { startLegacySseServer } from "../../fixtures/servers/legacy-sse.js";
import { startOAuthServer } from "../../fixtures/servers/oauth.js";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { stdioServerParams } from "../../fixtures/servers/stdio-path.js";
import { connectClient } from "../../plugin/mcp-client/connect.js";
import { discover } from "../../plugin/mcp-client/discover.js";
import { toolDefinitionHash } from "../../plugin/mcp-client/tool-hash.js";
import type { DiscoveryOutcome, ServerTarget } from "../../plugin/mcp-client/types.js";
import { closedPort } from "../helpers/ports.js";

const TIMEOUT = 5000;
const SECRET_HEADER = "header-value-that-must-not-leak";
const http = (url: string, headers: Record<string, string> = {}): ServerTarget => ({
  kind: "http",
  url,
  headers,
});
const stdio = (params: { command: string; args: string[]; env: Record<string, string> }): ServerTarget => ({
  kind: "stdio",
  ...params,
});

function expectOk(outcome: DiscoveryOutcome) {
  if (outcome.kind !== "ok") expect.fail(`expected ok, got ${JSON.stringify(outcome)}`);
  return outcome.discovery;
}

function expectFailed(outcome: DiscoveryOutcome, reason: string) {
  if (outcome.kind !== "failed") expect.fail(`expected failed/${reason}, got ${JSON.stringify(outcome)}`);
  expect(outcome.reason, outcome.message).to.equal(reason);
  expect(outcome.message).to.match(/^[A-Z].*\.$/);
  expect(outcome.message).to.not.include(SECRET_HEADER);
  expect(outcome.message).to.not.match(/127\.0\.0\.1|Error|fetch failed|ECONN/);
  return outcome;
}

/** A loopback URL nothing listens on. */
async function refusedUrl(): Promise<string> {
  return `http://127.0.0.1:${await closedPort()}/mcp`;
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("mcp-client discover", () => {
  it("discovers a plain Streamable HTTP server: tools with hashes, resources and prompts", async () => {
    const server = await startPlainServer();
    try {
      const discovery = expectOk(await discover(http(server.url), { timeoutMs: TIMEOUT }));
      expect(discovery.transport).to.equal("streamable-http");
      expect(discovery.tools.map((t) => t.name)).to.deep.equal(["echo", "add"]);
      const echo = discovery.tools[0];
      expect(echo?.description).to.equal("Returns the text it is given.");
      expect(echo?.annotations).to.include({ readOnlyHint: true, openWorldHint: false });
      expect(discovery.tools[1]?.annotations).to.equal(null);
      for (const tool of discovery.tools) {
        expect(tool.hash).to.equal(toolDefinitionHash(tool));
        expect(tool.inputSchema).to.include({ type: "object" });
      }
      expect(discovery.resources).to.equal(true);
      expect(discovery.prompts).to.equal(true);
      // The session is ended in the background (discover does not wait for the DELETE), but it is ended.
      await until(() => server.sessionCount() === 0);
    } finally {
      await server.close();
    }
  });

  it("sends the access token and configured headers, and never lets a header override a reserved one", async () => {
    const server = await startPlainServer();
    const seen: Headers[] = [];
    const spy: typeof fetch = (input, init) => {
      seen.push(new Headers(init?.headers));
      return fetch(input, init);
    };
    try {
      const headers = { "X-Api-Key": SECRET_HEADER, authorization: "Basic old", "Mcp-Session-Id": "forged" };
      const outcome = await discover(http(server.url, headers), {
        timeoutMs: TIMEOUT,
        accessToken: "tok",
        fetch: spy,
      });
      expectOk(outcome);
      expect(seen.length).to.be.greaterThan(1);
      expect(seen[0]?.get("authorization")).to.equal("Bearer tok");
      expect(seen[0]?.get("x-api-key")).to.equal(SECRET_HEADER);
      expect(seen[0]?.get("mcp-session-id")).to.equal(null);
    } finally {
      await server.close();
    }
  });

  it("sends the transport's requests through transportFetch, and stops tying them to the connect deadline once connected", async () => {
    const server = await startPlainServer();
    const viaTransport: Array<AbortSignal | null | undefined> = [];
    let viaFetch = 0;
    const transportFetch: typeof fetch = (input, init) => {
      viaTransport.push(init?.signal);
      return fetch(input, init);
    };
    const plain: typeof fetch = (input, init) => {
      viaFetch += 1;
      return fetch(input, init);
    };
    try {
      const connected = await connectClient(http(server.url), {
        timeoutMs: TIMEOUT,
        fetch: plain,
        transportFetch,
      });
      if (!connected.ok) throw new Error(`connect failed: ${connected.outcome.kind}`);
      const during = viaTransport.length;
      expect(during).to.be.greaterThan(0);
      await connected.client.listTools();
      await connected.client.ping();
      const after = viaTransport.slice(during).filter((signal) => signal !== undefined);
      expect(after.length).to.be.greaterThan(1);
      // The transport's own signal, passed as it is: no per-request combination with the cleared deadline.
      for (const signal of after) expect(signal).to.equal(after[0]);
      expect(viaFetch).to.equal(0);
      await connected.close();
    } finally {
      await server.close();
    }
  });

  it("discovers a stdio server with its FIXTURE_ env and nothing else of the gateway's env", async () => {
    const target = stdio(stdioServerParams({ FIXTURE_GREETING: "bonjour" }));
    const discovery = expectOk(await discover(target, { timeoutMs: TIMEOUT }));
    expect(discovery.transport).to.equal("stdio");
    expect(discovery.tools.map((t) => t.name)).to.have.members(["echo", "add", "env_echo"]);
    expect(discovery).to.include({ resources: true, prompts: true });

    process.env.FIXTURE_GATEWAY_ONLY = "gateway secret";
    const connected = await connectClient(target, { timeoutMs: TIMEOUT });
    try {
      if (!connected.ok) expect.fail(JSON.stringify(connected.outcome));
      const text = async (name: string) => {
        const result = await connected.client.callTool({ name: "env_echo", arguments: { name } });
        return (result.content as Array<{ text?: string }>)[0]?.text;
      };
      expect(await text("FIXTURE_GREETING")).to.equal("bonjour");
      expect(await text("FIXTURE_GATEWAY_ONLY")).to.equal("FIXTURE_GATEWAY_ONLY is not set");
    } finally {
      // biome-ignore lint/performance/noDelete: assigning undefined would set the string "undefined"
      delete process.env.FIXTURE_GATEWAY_ONLY;
      if (connected.ok) await connected.close();
    }
  });

  it("falls back to legacy HTTP+SSE after the Streamable HTTP POST gets a 4xx", async () => {
    const server = await startLegacySseServer();
    try {
      const discovery = expectOk(await discover(http(server.url), { timeoutMs: TIMEOUT }));
      expect(discovery.transport).to.equal("sse");
      expect(discovery.tools.map((t) => t.name)).to.deep.equal(["echo", "add"]);
      expect(discovery).to.include({ resources: true, prompts: true });
      expect(server.rejectedPosts()).to.equal(1);
    } finally {
      await server.close();
    }
  });

  const modes: Array<[FailingMode, string]> = [
    ["http404", "not_found"],
    ["not-mcp", "not_mcp"],
    ["http500", "server_error"],
    ["refuse-auth", "auth_refused"],
  ];
  for (const [mode, reason] of modes) {
    it(`classifies a failing server (${mode}) as ${reason}`, async () => {
      const server = await startFailingServer(mode);
      try {
        expectFailed(
          await discover(http(server.url, { "X-Api-Key": SECRET_HEADER }), { timeoutMs: TIMEOUT }),
          reason,
        );
      } finally {
        await server.close();
      }
    });
  }

  it("classifies a hanging server as timeout within timeoutMs", async () => {
    const server = await startFailingServer("hang");
    try {
      const started = Date.now();
      const outcome = expectFailed(await discover(http(server.url), { timeoutMs: 300 }), "timeout");
      expect(Date.now() - started).to.be.lessThan(2000);
      expect(outcome.message).to.include("0.3 s");
    } finally {
      await server.close();
    }
  });

  it("classifies a refused connection as unreachable", async () => {
    expectFailed(await discover(http(await refusedUrl()), { timeoutMs: TIMEOUT }), "unreachable");
  });

  it("classifies an untrusted TLS certificate as tls", async () => {
    const server = createHttpsServer(await selfSignedPair(), (_req, res) => res.end("{}"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      const outcome = expectFailed(
        await discover(http(`https://127.0.0.1:${port}/mcp`), { timeoutMs: TIMEOUT }),
        "tls",
      );
      expect(outcome.message).to.include("self-signed");
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("classifies a command that does not exist as spawn_failed", async () => {
    const target = stdio({
      command: "/nonexistent/mcp-server-binary",
      args: [],
      env: { TOKEN: SECRET_HEADER },
    });
    expectFailed(await discover(target, { timeoutMs: TIMEOUT }), "spawn_failed");
  });

  it("classifies a command that exits at once as spawn_failed, and one that prints junk as not_mcp", async () => {
    const exits = stdio({ command: process.execPath, args: ["-e", "process.exit(3)"], env: {} });
    expectFailed(await discover(exits, { timeoutMs: TIMEOUT }), "spawn_failed");
    const junk = stdio({ command: process.execPath, args: ["-e", "console.log('hello there')"], env: {} });
    expectFailed(await discover(junk, { timeoutMs: TIMEOUT }), "not_mcp");
  });

  it("kills a stdio child that does not answer in time", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mcp-client-"));
    const pidFile = join(dir, "pid");
    const script =
      "require('fs').writeFileSync(process.argv[1], String(process.pid)); setInterval(() => {}, 1000)";
    try {
      const target = stdio({ command: process.execPath, args: ["-e", script, pidFile], env: {} });
      expectFailed(await discover(target, { timeoutMs: 500 }), "timeout");
      const pid = Number(await readFile(pidFile, "utf8"));
      expect(pid).to.be.greaterThan(0);
      expect(() => process.kill(pid, 0))
        .to.throw()
        .with.property("code", "ESRCH");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("reports auth_required with the metadata URL for an OAuth server without a token", async () => {
    const server = await startOAuthServer();
    try {
      const outcome = await discover(http(server.url), { timeoutMs: TIMEOUT });
      expect(outcome).to.deep.equal({
        kind: "auth_required",
        resourceMetadataUrl: server.resourceMetadataUrl,
      });
      const bad = await discover(http(server.url), { timeoutMs: TIMEOUT, accessToken: "not-a-jwt" });
      expect(bad).to.deep.equal({ kind: "auth_required", resourceMetadataUrl: server.resourceMetadataUrl });
    } finally {
      await server.close();
    }
  });
});
