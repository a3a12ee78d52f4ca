/**
 * The external-access benchmark (part of `npm run bench`): tools/call of a fixture server's echo tool
 * through the gateway's /mcp with a real key, against calling that server directly, in one run; and how
 * long a call in flight survives its key's revocation. Writes bench/results-access.json.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { installCleanup, registerTempDir, spawnServer, stopAll } from "./children.js";
import { type LoadResult, round, runLoad } from "./load.js";
import { environment, writeResults } from "./report.js";

const GATEWAY = fileURLToPath(new URL("../fixtures/gateway/main.js", import.meta.url));
const ECHO = fileURLToPath(new URL("../fixtures/servers/stateless-echo.js", import.meta.url));
const RESULTS = fileURLToPath(new URL("../../bench/results-access.json", import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** At most the endpoint's in-flight limit per key (8), so the run measures calls, not 429s. */
const CONNECTIONS = Math.min(8, Number(process.env.BENCH_CONNECTIONS ?? 8));
const TARGET_RATIO = 0.7;
const REVOKE_TARGET_MS = 200;

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function manage(url: string, token: string, method: string, params: Record<string, unknown>) {
  const response = await fetch(`${url}/api/mcp/manage`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ method, params }),
  });
  const body = (await response.json()) as { result?: Record<string, unknown>; error?: { code: string } };
  if (body.result === undefined) throw new Error(`${method} failed: ${body.error?.code}`);
  return body.result;
}

function rpc(name: string, args: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } });
}

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function main(): Promise<void> {
  installCleanup();
  const dir = mkdtempSync(join(tmpdir(), "mcp-manage-bench-access-"));
  registerTempDir(dir);
  const echo = await spawnServer({ name: "echo", script: ECHO, args: [] });
  const gateway = await spawnServer({
    name: "gateway",
    script: GATEWAY,
    args: ["--port", "0", "--state-dir", join(dir, "state"), "--token-file", join(dir, "token")],
    stderrFile: join(dir, "gateway.log"),
    nodeArgs: (process.env.BENCH_GATEWAY_NODE_ARGS ?? "").split(" ").filter((arg) => arg.length > 0),
  });
  const { readFileSync } = await import("node:fs");
  const token = readFileSync(join(dir, "token"), "utf8").trim();

  const begun = await manage(gateway.url, token, "mcp.setup.begin", {
    name: "echo",
    requestId: `bench-${randomBytes(8).toString("hex")}`,
    config: { url: echo.url },
  });
  let phase = String(begun.phase);
  while (phase === "checking") {
    await new Promise((resolve) => setTimeout(resolve, 10));
    phase = String((await manage(gateway.url, token, "mcp.setup.status", { id: begun.id })).phase);
  }
  await manage(gateway.url, token, "mcp.setup.confirm", { id: begun.id, permissions: { mode: "all" } });
  const secret = randomBytes(32).toString("base64url");
  await manage(gateway.url, token, "mcp.access.create", {
    id: `bench-key-${randomBytes(4).toString("hex")}`,
    label: "bench",
    sessionKey: "agent:main:main",
    tools: ["echo__echo", "echo__sleep"],
    tokenDigest: createHash("sha256").update(secret).digest("hex"),
    ttlSeconds: 3600,
  });

  const body = rpc("echo", { text: "hello" });
  const options = { connections: CONNECTIONS, seconds: SECONDS };
  await runLoad(
    { url: echo.url, method: "POST", headers: MCP_HEADERS, body },
    { ...options, seconds: 1, serverPid: echo.pid },
  );
  const direct = await runLoad(
    { url: echo.url, method: "POST", headers: MCP_HEADERS, body },
    { ...options, serverPid: echo.pid },
  );
  const viaGateway = await runLoad(
    {
      url: `${gateway.url}/mcp`,
      method: "POST",
      headers: { ...MCP_HEADERS, authorization: `Bearer ${secret}` },
      body: rpc("echo__echo", { text: "hello" }),
    },
    { ...options, serverPid: gateway.pid },
  );
  const revokeMs = await revocationLatency(gateway.url, token, echo.url);
  const ratio = round(viaGateway.reqPerSecMean / direct.reqPerSecMean, 3);
  const report = (name: string, result: LoadResult) =>
    out(
      `${name.padEnd(22)} ${String(round(result.reqPerSecMean, 0)).padStart(7)} req/s  p50 ${result.latencyMs.p50} ms  p99 ${result.latencyMs.p99} ms  status ${JSON.stringify(result.statusCodes)}`,
    );
  report("direct tools/call", direct);
  report("via /mcp tools/call", viaGateway);
  const targets = [
    {
      name: `via /mcp req/s >= ${TARGET_RATIO} x direct`,
      pass: ratio >= TARGET_RATIO,
      detail: `${ratio} x direct`,
    },
    {
      name: `revoked call settles < ${REVOKE_TARGET_MS} ms after revoke`,
      pass: revokeMs < REVOKE_TARGET_MS,
      detail: `${revokeMs} ms`,
    },
  ];
  for (const target of targets) out(`${target.pass ? "PASS" : "FAIL"} ${target.name}: ${target.detail}`);
  writeResults(RESULTS, {
    environment: environment(),
    config: options,
    direct,
    viaGateway,
    ratio,
    revokeMs,
    targets,
  });
  await stopAll();
}

/** Starts a long call through /mcp with its own key, revokes the key, and times how long the call lives on. */
async function revocationLatency(gatewayUrl: string, token: string, _echoUrl: string): Promise<number> {
  const secret = randomBytes(32).toString("base64url");
  const id = `bench-revoke-${randomBytes(4).toString("hex")}`;
  await manage(gatewayUrl, token, "mcp.access.create", {
    id,
    label: "revoke",
    sessionKey: "agent:main:main",
    tools: ["echo__sleep"],
    tokenDigest: createHash("sha256").update(secret).digest("hex"),
    ttlSeconds: 3600,
  });
  const call = fetch(`${gatewayUrl}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, authorization: `Bearer ${secret}` },
    body: rpc("echo__sleep", { ms: 10_000 }),
  }).then(async (response) => ({
    status: response.status,
    text: await response.text(),
    at: performance.now(),
  }));
  await new Promise((resolve) => setTimeout(resolve, 300));
  const revoking = performance.now();
  await manage(gatewayUrl, token, "mcp.access.revoke", { id });
  const settled = await call;
  if (!settled.text.includes("revoked"))
    throw new Error(`the long call ended otherwise: ${settled.status} ${settled.text.slice(0, 200)}`);
  // From sending the revoke to the call's answer arriving (the revoke's own round trip included).
  return round(settled.at - revoking, 1);
}

main().catch(async (error: unknown) => {
  process.stderr.write(`bench failed: ${(error as Error).message}\n`);
  await stopAll();
  process.exit(1);
});
