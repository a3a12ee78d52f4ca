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
import { type LoadRequest, type LoadResult, round, runLoad } from "./load.js";
import { environment, writeResults } from "./report.js";

const GATEWAY = fileURLToPath(new URL("../fixtures/gateway/main.js", import.meta.url));
const ECHO = fileURLToPath(new URL("../fixtures/servers/stateless-echo.js", import.meta.url));
const RESULTS = fileURLToPath(new URL("../../bench/results-access.json", import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** At most the endpoint's in-flight limit per key (8), so the run measures calls, not 429s. */
const CONNECTIONS = Math.min(8, Number(process.env.BENCH_CONNECTIONS ?? 8));
/** Direct and via /mcp are measured this many times, alternating; the median round's ratio is the figure. */
const ROUNDS = Math.max(1, Math.round(Number(process.env.BENCH_ACCESS_ROUNDS ?? 5)));
/**
 * Each path is put under load this long before any round, the same for both. The gateway's path runs far
 * more code (an SDK server and client, undici, the access checks) than the echo server's, and it takes V8
 * several seconds under load to optimise it all: with 1 s, the first round measured a half-warm gateway.
 */
const WARMUP_SECONDS = Math.max(1, Number(process.env.BENCH_ACCESS_WARMUP_SECONDS ?? 3));
const TARGET_RATIO = 0.7;
const REVOKE_TARGET_MS = 200;

interface Round {
  direct: LoadResult;
  viaGateway: LoadResult;
  ratio: number;
}

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

  const options = { connections: CONNECTIONS, seconds: SECONDS };
  const directRequest: LoadRequest = {
    url: echo.url,
    method: "POST",
    headers: MCP_HEADERS,
    body: rpc("echo", { text: "hello" }),
  };
  const viaRequest: LoadRequest = {
    url: `${gateway.url}/mcp`,
    method: "POST",
    headers: { ...MCP_HEADERS, authorization: `Bearer ${secret}` },
    body: rpc("echo__echo", { text: "hello" }),
  };
  // Every measured response must be the echo's own answer: a refusal or a tool error inside a 200 would
  // otherwise count as a served call.
  directRequest.expectBody = await probeEcho("direct", directRequest);
  viaRequest.expectBody = await probeEcho("via /mcp", viaRequest);
  // Both paths warm up before anything is measured: the first measured run must not pay for JIT warm-up.
  await runLoad(directRequest, { ...options, seconds: WARMUP_SECONDS, serverPid: echo.pid });
  await runLoad(viaRequest, { ...options, seconds: WARMUP_SECONDS, serverPid: gateway.pid });
  // Alternating rounds, the order flipped each time, and the median ratio: on a shared machine one pair
  // of runs can land in a fast and a slow moment.
  const rounds: Round[] = [];
  for (let index = 0; index < ROUNDS; index++) {
    const measureDirect = () => runLoad(directRequest, { ...options, serverPid: echo.pid });
    const measureVia = () => runLoad(viaRequest, { ...options, serverPid: gateway.pid });
    let direct: LoadResult;
    let via: LoadResult;
    if (index % 2 === 0) {
      direct = await measureDirect();
      via = await measureVia();
    } else {
      via = await measureVia();
      direct = await measureDirect();
    }
    for (const [name, result] of [
      ["direct", direct],
      ["via /mcp", via],
    ] as const) {
      if (result.mismatches > 0 || Object.keys(result.statusCodes).some((status) => status !== "200")) {
        throw new Error(
          `${name}: ${result.mismatches} answers differed from the echo's, statuses ${JSON.stringify(result.statusCodes)}`,
        );
      }
    }
    const round_: Round = {
      direct,
      viaGateway: via,
      ratio: round(via.reqPerSecMean / direct.reqPerSecMean, 3),
    };
    rounds.push(round_);
    out(
      `round ${index + 1}/${ROUNDS}: direct ${round(direct.reqPerSecMean, 0)} req/s, via /mcp ${round(via.reqPerSecMean, 0)} req/s, ratio ${round_.ratio}`,
    );
  }
  const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)];
  if (median === undefined) throw new Error("no round was measured");
  const { direct, viaGateway, ratio } = median;
  const revokeMs = await revocationLatency(gateway.url, token, echo.url);
  const report = (name: string, result: LoadResult) =>
    out(
      `${name.padEnd(22)} ${String(round(result.reqPerSecMean, 0)).padStart(7)} req/s  p50 ${result.latencyMs.p50} ms  p99 ${result.latencyMs.p99} ms  status ${JSON.stringify(result.statusCodes)}`,
    );
  out(`median round (ratio ${ratio}, rounds ${rounds.map((each) => each.ratio).join(", ")}):`);
  report("direct tools/call", direct);
  report("via /mcp tools/call", viaGateway);
  const targets = [
    {
      name: `via /mcp req/s >= ${TARGET_RATIO} x direct (median of ${ROUNDS} alternating rounds)`,
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
    config: { ...options, rounds: ROUNDS, warmupSeconds: WARMUP_SECONDS },
    direct,
    viaGateway,
    ratio,
    rounds: rounds.map((each) => ({
      ratio: each.ratio,
      directReqPerSec: each.direct.reqPerSecMean,
      viaReqPerSec: each.viaGateway.reqPerSecMean,
      directLatencyMs: each.direct.latencyMs,
      viaLatencyMs: each.viaGateway.latencyMs,
    })),
    revokeMs,
    targets,
  });
  await stopAll();
}

/** One call by plain fetch: the answer must be the echo's successful result, and every later one the same. */
async function probeEcho(name: string, request: LoadRequest): Promise<string> {
  const response = await fetch(request.url, { method: "POST", headers: request.headers, body: request.body });
  const text = await response.text();
  const parsed = JSON.parse(text) as { result?: { isError?: boolean; content?: { text?: string }[] } };
  const echoed = parsed.result?.content?.[0]?.text;
  if (
    response.status !== 200 ||
    parsed.result?.isError === true ||
    echoed === undefined ||
    !echoed.includes("hello")
  ) {
    throw new Error(`${name}: the probe call did not echo: ${response.status} ${text.slice(0, 200)}`);
  }
  return text;
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
