import { access, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { runCli, startChildGateway } from "./helpers/child-gateway.js";
import { manage } from "./helpers/http.js";

describe("reference gateway CLI (npm start)", function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "mcp-manage-cli-"));
  });
  afterEach(async () => rm(dir, { recursive: true, force: true }));

  it("creates a 0600 token file, prints its path and URL but never the token, and stops cleanly on SIGTERM", async () => {
    const gateway = await startChildGateway(["--port", "0", "--state-dir", join(dir, "state")]);
    const tokenFile = join(dir, "state", "gateway-token");
    expect(gateway.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(gateway.stdout()).to.contain(tokenFile);
    expect((await stat(tokenFile)).mode & 0o777).to.equal(0o600);
    const token = (await readFile(tokenFile, "utf8")).trim();
    expect(token.length).to.be.at.least(32);
    const reply = await manage(gateway.url, token, { method: "mcp.capabilities" });
    expect(reply.status).to.equal(200);
    expect(await gateway.stop()).to.equal(0);
    // The request was logged (so the check below has a line to look at), and nothing printed holds the token.
    expect(gateway.stderr()).to.contain('"msg":"mcp-manage request"');
    expect(gateway.stdout() + gateway.stderr()).not.to.contain(token);
    // The state directory's lock is released on a clean stop.
    const lock = await access(join(dir, "state", "root", "gateway.lock")).then(
      () => "present",
      () => "absent",
    );
    expect(lock).to.equal("absent");
  });

  it("reuses an existing token file, and takes every flag from its environment variable", async () => {
    const tokenFile = join(dir, "token");
    const first = await startChildGateway(["--port", "0", "--state-dir", dir, "--token-file", tokenFile]);
    await first.stop();
    const token = (await readFile(tokenFile, "utf8")).trim();
    const second = await startChildGateway([], {
      MCP_GATEWAY_PORT: "0",
      MCP_GATEWAY_HOST: "::1",
      MCP_GATEWAY_STATE_DIR: dir,
      MCP_GATEWAY_TOKEN_FILE: tokenFile,
      MCP_GATEWAY_PROFILES: "a,b",
      MCP_GATEWAY_ALLOWED_HOSTS: "gateway.example",
    });
    try {
      expect(second.url).to.match(/^http:\/\/\[::1\]:\d+$/);
      const reply = await manage(second.url, token, { method: "mcp.connections.list", profile: "b" });
      expect(reply.status).to.equal(200);
      const allowed = await manage(
        second.url,
        token,
        { method: "mcp.capabilities" },
        {
          headers: { host: "gateway.example", origin: "https://gateway.example" },
        },
      );
      expect(allowed.status).to.equal(200);
    } finally {
      expect(await second.stop("SIGINT")).to.equal(0);
    }
  });

  it("serves TLS with a self-signed pair", async () => {
    const gateway = await startChildGateway(["--port", "0", "--state-dir", dir, "--tls-self-signed"]);
    try {
      expect(gateway.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
      const token = (await readFile(join(dir, "gateway-token"), "utf8")).trim();
      const reply = await manage(gateway.url, token, { method: "mcp.capabilities" }, { insecure: true });
      expect(reply.status).to.equal(200);
    } finally {
      await gateway.stop();
    }
  });

  it("refuses a second gateway on the same state directory", async () => {
    const gateway = await startChildGateway(["--port", "0", "--state-dir", dir]);
    try {
      const second = await runCli(["--port", "0", "--state-dir", dir]);
      expect(second.code).to.equal(1);
      expect(second.stderr).to.contain("in use");
    } finally {
      await gateway.stop();
    }
  });

  it("rejects unknown flags and bad values with usage", async () => {
    for (const args of [["--nope"], ["--port", "99999"], ["--tls-cert", "x"], ["--port", "abc"]]) {
      const result = await runCli(args);
      expect(result.code, args.join(" ")).to.equal(2);
      expect(result.stderr).to.contain("usage:");
    }
  });
});
