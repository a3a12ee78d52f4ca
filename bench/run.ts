/**
 * `npm run bench`: a bare node:http baseline and the reference gateway, each in its own child process, put
 * under load by autocannon in this process; then the gateway's peak RSS under concurrent large uploads.
 * Prints the figures, PASS/FAIL per target, and writes bench/results.json. Exits 0 when a target fails
 * (the figures are the point) and 1 only when the bench itself could not run.
 *
 * Environment: BENCH_SECONDS (per scenario, default 5), BENCH_WARMUP_SECONDS (default 1),
 * BENCH_CONNECTIONS (default 10), BENCH_UPLOADS (default 64), BENCH_UPLOAD_MIB (default 10),
 * BENCH_ONLY (comma-separated scenario names; the baseline always runs), BENCH_SKIP_MEMORY=1,
 * BENCH_GATEWAY_NODE_ARGS (node flags for the gateway child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"),
 * BENCH_QUIET_WAIT_SECONDS (before each measured run, wait up to this long for the machine to be quiet;
 * default 10, 0 = no wait), BENCH_RETRIES (runs again a scenario disturbed by other processes; default 1),
 * BENCH_GATEWAY_SCRIPT (another gateway entry taking the same flags), BENCH_KEEP_TMP=1 (keep the temp dir
 * with the gateway logs).
 *
 * Then the setup scenarios (bench/setup-scenarios.ts), each on its own fresh gateway: setup-begin-review,
 * setup-oauth, connections-list-100 (BENCH_ONLY names them too; BENCH_SKIP_SETUP=1 skips them;
 * BENCH_SETUP_RUNS, default 60, at least 50; BENCH_OAUTH_RUNS, default 12, at least 10).
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { type Child, installCleanup, registerTempDir, spawnServer, stopAll } from "./children.js";
import { handlerTimes, logSize } from "./gateway-log.js";
import { type LoadResult, probe, runLoad } from "./load.js";
import { type MemoryResult, runMemoryTest } from "./memory.js";
import { waitForQuiet } from "./quiet.js";
import {
  DISTURBED_PERCENT,
  MAX_RSS_GROWTH_MIB,
  type ScenarioReport,
  chooseBaseline,
  environment,
  evaluateTargets,
  printMemory,
  printScenarios,
  printTargets,
  statusOk,
  withRatios,
  writeResults,
} from "./report.js";
import { SCENARIOS, type Scenario, type ScenarioContext } from "./scenarios.js";
import {
  SETUP_SCENARIOS,
  type SetupBenchResult,
  printSetup,
  runSetupBenchmarks,
  setupTargets,
} from "./setup-scenarios.js";

const HELLO_SCRIPT = fileURLToPath(new URL("./hello-server.js", import.meta.url));
/** The real CLI entry; BENCH_GATEWAY_SCRIPT may name another script taking the same flags (for experiments). */
const GATEWAY_SCRIPT =
  process.env.BENCH_GATEWAY_SCRIPT ?? fileURLToPath(new URL("../fixtures/gateway/main.js", import.meta.url));
const RESULTS_FILE = fileURLToPath(new URL("../../bench/results.json", import.meta.url));

function envNumber(name: string, fallback: number, zeroAllowed = false): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zeroAllowed)) {
    throw new Error(`${name} must be a ${zeroAllowed ? "non-negative" : "positive"} number, got "${text}"`);
  }
  return value;
}

const config = {
  seconds: envNumber("BENCH_SECONDS", 5),
  warmupSeconds: envNumber("BENCH_WARMUP_SECONDS", 1),
  connections: Math.round(envNumber("BENCH_CONNECTIONS", 10)),
  uploads: Math.round(envNumber("BENCH_UPLOADS", 64)),
  uploadBytes: Math.round(envNumber("BENCH_UPLOAD_MIB", 10) * 1024 * 1024),
  only: process.env.BENCH_ONLY?.split(",")
    .map((name) => name.trim())
    .filter((name) => name.length > 0),
  skipMemory: process.env.BENCH_SKIP_MEMORY === "1",
  skipSetup: process.env.BENCH_SKIP_SETUP === "1",
  setupRuns: Math.round(envNumber("BENCH_SETUP_RUNS", 60)),
  oauthRuns: Math.round(envNumber("BENCH_OAUTH_RUNS", 12)),
  /** Before each measured run, wait up to this long for the machine to be quiet (0: don't wait). */
  quietWaitSeconds: envNumber("BENCH_QUIET_WAIT_SECONDS", 10, true),
  /** Measure a scenario again (this many times at most) when other processes disturbed its run. */
  retries: Math.round(envNumber("BENCH_RETRIES", 1, true)),
  gatewayNodeArgs: (process.env.BENCH_GATEWAY_NODE_ARGS ?? "").split(" ").filter((arg) => arg.length > 0),
};

const say = (line: string) => process.stdout.write(`${line}\n`);

async function startGateway(
  dir: string,
  label: string,
): Promise<{ child: Child; token: string; log: string }> {
  const tokenFile = join(dir, `${label}-token`);
  const log = join(dir, `${label}.log`);
  const child = await spawnServer({
    name: `gateway (${label})`,
    script: GATEWAY_SCRIPT,
    args: ["--port", "0", "--state-dir", join(dir, `${label}-state`), "--token-file", tokenFile],
    nodeArgs: config.gatewayNodeArgs,
    stderrFile: log,
  });
  const token = readFileSync(tokenFile, "utf8").trim();
  say(`${child.name}: pid ${child.pid} at ${child.url}, log ${log}`);
  return { child, token, log };
}

async function runScenario(scenario: Scenario, ctx: ScenarioContext, server: Child, log: string | null) {
  const request = scenario.build(ctx);
  const probed = await probe(request);
  if (probed.status !== scenario.expectStatus) {
    say(
      `WARNING ${scenario.name}: probe answered ${probed.status}, expected ${scenario.expectStatus}: ${probed.body}`,
    );
  }
  let attempt = 0;
  let logFrom = 0;
  let result: LoadResult;
  for (;;) {
    attempt++;
    const quiet = await waitForQuiet(config.quietWaitSeconds * 1000);
    say(
      `${scenario.name}: attempt ${attempt}${quiet ? " (machine quiet)" : ""}: warm-up ${config.warmupSeconds} s, ` +
        `then ${config.seconds} s x ${config.connections} connections`,
    );
    await runLoad(request, {
      connections: config.connections,
      seconds: config.warmupSeconds,
      serverPid: server.pid,
    });
    await sleep(200);
    logFrom = log === null ? 0 : logSize(log);
    result = await runLoad(request, {
      connections: config.connections,
      seconds: config.seconds,
      serverPid: server.pid,
    });
    if (result.cpu.otherPercent <= DISTURBED_PERCENT || attempt > config.retries) break;
    say(
      `${scenario.name}: other processes used ${result.cpu.otherPercent}% of a core during the run: measuring again`,
    );
  }
  await sleep(300); // pino writes asynchronously
  const report: ScenarioReport = {
    name: scenario.name,
    description: scenario.description,
    server: scenario.server,
    isBaseline: scenario.isBaseline === true,
    expectStatus: scenario.expectStatus,
    probe: probed,
    statusOk: statusOk(result, scenario.expectStatus),
    result,
    ratios: { reqPerSec: null, p50: null, p99: null },
    attempts: attempt,
    handler: log === null ? null : handlerTimes(log, logFrom, logSize(log)),
  };
  say(
    `${scenario.name}: ${result.reqPerSecMean} req/s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms, ` +
      `errors ${result.errors}, timeouts ${result.timeouts}, statuses ${JSON.stringify(result.statusCodes)}`,
  );
  return report;
}

async function main(): Promise<void> {
  installCleanup();
  const dir = mkdtempSync(join(tmpdir(), "mcp-manage-bench-"));
  registerTempDir(dir);
  const env = environment();
  say(
    `mcp-manage bench: node ${env.node}, ${env.cpuCount} CPUs (${env.cpuModel}), ${env.date}, ` +
      `load average ${env.loadAverageAtStart.join(" ")}`,
  );
  if (config.gatewayNodeArgs.length > 0) say(`gateway node flags: ${config.gatewayNodeArgs.join(" ")}`);
  say(`gateway entry: ${GATEWAY_SCRIPT}`);

  const scenarios = SCENARIOS.filter(
    (scenario) =>
      scenario.isBaseline === true || config.only === undefined || config.only.includes(scenario.name),
  );
  // The baseline sends a token of the gateway's token length; the gateway's own replaces it once known.
  const ctx: ScenarioContext = {
    baselineUrl: "",
    loggedBaselineUrl: "",
    gatewayUrl: "",
    token: "x".repeat(43),
  };
  const reports: ScenarioReport[] = [];
  let current = null as { server: Scenario["server"]; child: Child; log: string | null } | null;
  for (const scenario of scenarios) {
    // One server at a time, so the one under test has the machine to itself apart from the client.
    if (current?.server !== scenario.server) {
      await current?.child.stop();
      if (scenario.server === "baseline" || scenario.server === "baseline-logged") {
        const logged = scenario.server === "baseline-logged";
        const child = await spawnServer({
          name: logged ? "hello-server --pino" : "hello-server",
          script: HELLO_SCRIPT,
          args: ["--exit-with-stdin", ...(logged ? ["--pino"] : [])],
          stdinPipe: true,
          ...(logged ? { stderrFile: join(dir, "hello-pino.log") } : {}),
        });
        say(`${child.name}: pid ${child.pid} at ${child.url}`);
        if (logged) ctx.loggedBaselineUrl = child.url;
        else ctx.baselineUrl = child.url;
        current = { server: scenario.server, child, log: null };
      } else {
        const gateway = await startGateway(dir, "gateway");
        ctx.gatewayUrl = gateway.child.url;
        ctx.token = gateway.token;
        current = { server: "gateway", child: gateway.child, log: gateway.log };
      }
    }
    reports.push(await runScenario(scenario, ctx, current.child, current.log));
  }
  await current?.child.stop();

  let setup: SetupBenchResult | null = null;
  const setupNames = SETUP_SCENARIOS.filter(
    (name) => config.only === undefined || config.only.includes(name),
  );
  if (!config.skipSetup && setupNames.length > 0) {
    setup = await runSetupBenchmarks({
      only: config.only,
      beginRuns: config.setupRuns,
      oauthRuns: config.oauthRuns,
      seconds: config.seconds,
      warmupSeconds: config.warmupSeconds,
      connections: config.connections,
      startGateway: (label) => startGateway(dir, label),
      say,
      quietWaitMs: config.quietWaitSeconds * 1000,
    });
  }

  let memory: MemoryResult | null = null;
  if (!config.skipMemory) {
    const gateway = await startGateway(dir, "gateway-memory");
    await waitForQuiet(config.quietWaitSeconds * 1000);
    say(`memory: ${config.uploads} concurrent uploads of ${config.uploadBytes} bytes to a fresh gateway`);
    memory = await runMemoryTest({
      url: gateway.child.url,
      token: gateway.token,
      pid: gateway.child.pid,
      uploads: config.uploads,
      uploadBytes: config.uploadBytes,
      chunkBytes: 64 * 1024,
      warmupUploads: 8,
    });
    await gateway.child.stop();
  }

  withRatios(reports);
  const ratioBaseline = chooseBaseline(reports);
  const targets = [...evaluateTargets(scenarios, reports, memory), ...setupTargets(setup)];
  printScenarios(reports);
  if (memory !== null) printMemory(memory);
  if (setup !== null) printSetup(setup, say);
  if (ratioBaseline !== undefined) {
    say(
      `\nratios against the ${ratioBaseline.name} run (${ratioBaseline.result.reqPerSecMean} req/s, other processes ` +
        `${ratioBaseline.result.cpu.otherPercent}% of a core)`,
    );
  }
  printTargets(targets);
  say(
    "\nlatencies are per response, from the request's write to the response's end (exact, not autocannon's 1 ms " +
      "buckets); ratios are scenario / baseline.",
  );
  writeResults(RESULTS_FILE, {
    environment: env,
    config: { ...config, rssGrowthLimitMiB: MAX_RSS_GROWTH_MIB },
    ratioBaseline: ratioBaseline?.name ?? null,
    scenarios: reports,
    memory,
    setup,
    targets,
  });
}

// A promise that can never settle (e.g. a server died mid-request) would let node exit 0 silently.
let finished = false;
process.on("exit", (code) => {
  if (finished || code !== 0) return;
  process.stdout.write("bench failed: it stopped before finishing (a request was left without an answer)\n");
  process.exitCode = 1;
});

main().then(
  () => {
    finished = true;
    process.exit(0);
  },
  async (error: unknown) => {
    finished = true;
    process.stdout.write(
      `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    await stopAll(1_500);
    process.exit(1);
  },
);
