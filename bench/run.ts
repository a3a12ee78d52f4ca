/**
 * `npm run bench`: a bare node:http baseline and the reference gateway, each in its own child process, put
 * under load by autocannon in this process; then the setup scenarios and the gateway's peak RSS under
 * concurrent large uploads. Prints the figures, PASS/FAIL per target, and writes bench/results.json. Exits
 * 0 when a target fails (the figures are the point) and 1 only when the bench itself could not run.
 *
 * Throughput is measured in paired, alternating rounds, as bench/access.ts does: the servers (hello-server,
 * hello-server --pino, the gateway) start once and stay up, idle between runs; every scenario is warmed up
 * once; then each round runs the baseline and every other scenario once, in scenarios.ts's order on even
 * rounds and reversed on odd ones, so that the machine's drift (±20-30% over tens of seconds on a shared
 * 2-core VM) cancels out. Scenarios that disturb what runs after them (a connection per request, 1 MiB
 * uploads: `disturbs` in scenarios.ts) are warmed up and measured afterwards, in as many rounds of their
 * own with the baseline. A scenario's ratio for a round is its req/s over the baseline's in that same
 * round; the targets are judged on the median of those per-round ratios (min and max are printed too).
 * Latency p50/p99 are the medians of the per-round p50/p99; every response of every run (warm-up too) and
 * each round's probe must have the scenario's status, or the scenario is not OK.
 *
 * Environment: BENCH_ROUNDS (default 9: on a shared 2-core VM single rounds swing from 0.3 to 0.8 x the
 * baseline, and the median of 5 moved by 0.1 between runs), BENCH_SECONDS (per scenario per round, default 2),
 * BENCH_WARMUP_SECONDS (per scenario, once, default 2), BENCH_CONNECTIONS (default 10),
 * BENCH_ONLY (comma-separated scenario names; the baseline always runs), BENCH_QUIET_WAIT_SECONDS (before
 * the warm-up and before each round, wait up to this long for the machine to be quiet; default 5, 0 = no
 * wait), BENCH_RETRIES (a round during which other processes used more than 15% of a core is measured
 * again, at most this many times in all; default 1), BENCH_GATEWAY_NODE_ARGS (node flags for the gateway
 * child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"), BENCH_GATEWAY_SCRIPT (another gateway entry taking
 * the same flags), BENCH_KEEP_TMP=1 (keep the temp dir with the gateway logs). With the defaults the
 * throughput part takes about 2.5 minutes.
 *
 * Then the setup scenarios (bench/setup-scenarios.ts), each on its own fresh gateway: setup-begin-review,
 * setup-oauth, connections-list-100 (BENCH_ONLY names them too; BENCH_SKIP_SETUP=1 skips them;
 * BENCH_SETUP_RUNS, default 60, at least 50; BENCH_OAUTH_RUNS, default 12, at least 10;
 * BENCH_SETUP_SECONDS, default 5, and BENCH_SETUP_WARMUP_SECONDS, default 1, for each connections.list
 * load run). Then the memory test (BENCH_SKIP_MEMORY=1 skips it; BENCH_UPLOADS, default 64,
 * BENCH_UPLOAD_MIB, default 10).
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { type Child, installCleanup, registerTempDir, spawnServer, stopAll } from "./children.js";
import { handlerTimesOver, logSize } from "./gateway-log.js";
import { type LoadRequest, type ProbeResult, probe, round, runLoad } from "./load.js";
import { type MemoryResult, runMemoryTest } from "./memory.js";
import { waitForQuiet } from "./quiet.js";
import {
  DISTURBED_PERCENT,
  MAX_RSS_GROWTH_MIB,
  type Round,
  type RoundRun,
  environment,
  evaluateTargets,
  printMemory,
  printScenarios,
  printTargets,
  roundsForResults,
  statusOk,
  summarize,
  writeResults,
} from "./report.js";
import { roundOrder, roundOrderName } from "./rounds.js";
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
/** Between two runs: lets the previous server go idle and the gateway's log lines of the run reach the file. */
const PAUSE_MS = 200;

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
  /** Paired rounds: each runs the baseline and every other scenario once. */
  rounds: Math.max(1, Math.round(envNumber("BENCH_ROUNDS", 9))),
  /** Seconds per scenario per round. */
  seconds: envNumber("BENCH_SECONDS", 2),
  /** Seconds of load per scenario, once, before the first round. */
  warmupSeconds: envNumber("BENCH_WARMUP_SECONDS", 2),
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
  /** Each connections.list load run of the setup scenarios, and its warm-up (as before the rounds). */
  setupSeconds: envNumber("BENCH_SETUP_SECONDS", 5),
  setupWarmupSeconds: envNumber("BENCH_SETUP_WARMUP_SECONDS", 1),
  /** Before the warm-up and each round, wait up to this long for the machine to be quiet (0: don't wait). */
  quietWaitSeconds: envNumber("BENCH_QUIET_WAIT_SECONDS", 5, true),
  /** Rounds disturbed by other processes measured again, at most this many in all. */
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

async function startHello(dir: string, logged: boolean): Promise<Child> {
  const child = await spawnServer({
    name: logged ? "hello-server --pino" : "hello-server",
    script: HELLO_SCRIPT,
    args: ["--exit-with-stdin", ...(logged ? ["--pino"] : [])],
    stdinPipe: true,
    ...(logged ? { stderrFile: join(dir, "hello-pino.log") } : {}),
  });
  say(`${child.name}: pid ${child.pid} at ${child.url}`);
  return child;
}

/** A scenario ready to run: its request, the server it loads, and that server's log (the gateway's). */
interface Prepared {
  scenario: Scenario;
  request: LoadRequest;
  server: Child;
  log: string | null;
}

/** One measured run of a scenario in a round: a probe, then the load, then a pause for the log to settle. */
async function measure(prepared: Prepared): Promise<RoundRun> {
  const { scenario, request, server, log } = prepared;
  const probed = await probe(request);
  const from = log === null ? 0 : logSize(log);
  const result = await runLoad(request, {
    connections: config.connections,
    seconds: config.seconds,
    serverPid: server.pid,
  });
  await sleep(PAUSE_MS);
  const ok = statusOk(result, scenario.expectStatus) && probed.status === scenario.expectStatus;
  if (!ok) {
    say(
      `WARNING ${scenario.name}: statuses ${JSON.stringify(result.statusCodes)}, probe ${probed.status}, ` +
        `expected ${scenario.expectStatus}`,
    );
  }
  return {
    probe: probed,
    statusOk: ok,
    result,
    logRange: log === null ? null : { from, to: logSize(log) },
  };
}

/** Probes each scenario and loads it for the warm-up time; a wrong status is reported, and marks the scenario. */
async function warmUp(
  prepared: readonly Prepared[],
  probes: Record<string, ProbeResult>,
  warmupOk: Record<string, boolean>,
): Promise<void> {
  const machineQuiet = await waitForQuiet(config.quietWaitSeconds * 1000);
  say(
    `warm-up${machineQuiet ? " (machine quiet)" : ""}: ${prepared.map(({ scenario }) => scenario.name).join(", ")}, ` +
      `${config.warmupSeconds} s each x ${config.connections} connections, then ${config.rounds} alternating rounds ` +
      `of ${config.seconds} s each`,
  );
  for (const { scenario, request, server } of prepared) {
    const probed = await probe(request);
    probes[scenario.name] = probed;
    if (probed.status !== scenario.expectStatus) {
      say(
        `WARNING ${scenario.name}: probe answered ${probed.status}, expected ${scenario.expectStatus}: ${probed.body}`,
      );
    }
    const warm = await runLoad(request, {
      connections: config.connections,
      seconds: config.warmupSeconds,
      serverPid: server.pid,
    });
    const ok = statusOk(warm, scenario.expectStatus);
    // The baseline warms up in both phases: one bad warm-up marks it.
    warmupOk[scenario.name] = ok && warmupOk[scenario.name] !== false;
    if (!ok) {
      say(
        `WARNING ${scenario.name}: warm-up statuses ${JSON.stringify(warm.statusCodes)}, expected ${scenario.expectStatus}`,
      );
    }
    say(`  ${scenario.name}: warm-up ${Math.round(warm.reqPerSecMean)} req/s`);
    await sleep(PAUSE_MS);
  }
}

async function runRounds(
  prepared: readonly Prepared[],
  baselineName: string,
  firstIndex: number,
): Promise<Round[]> {
  const rounds: Round[] = [];
  let retriesLeft = config.retries;
  for (let counted = 0; counted < config.rounds; ) {
    const order = roundOrder(prepared, counted);
    const machineQuiet = await waitForQuiet(config.quietWaitSeconds * 1000);
    say(
      `round ${counted + 1}/${config.rounds} (${roundOrderName(counted)}${machineQuiet ? ", machine quiet" : ""}): ` +
        `${order.length} scenarios x ${config.seconds} s x ${config.connections} connections`,
    );
    const runs: Record<string, RoundRun> = {};
    for (const each of order) runs[each.scenario.name] = await measure(each);
    const disturbed = Object.values(runs).some((run) => run.result.cpu.otherPercent > DISTURBED_PERCENT);
    const replace = disturbed && retriesLeft > 0;
    rounds.push({
      index: firstIndex + rounds.length,
      order: roundOrderName(counted),
      machineQuiet,
      disturbed,
      counted: !replace,
      runs,
    });
    const base = runs[baselineName]?.result.reqPerSecMean ?? 0;
    say(
      `  ${order
        .map(({ scenario }) => {
          const rate = runs[scenario.name]?.result.reqPerSecMean ?? 0;
          const ratio = scenario.name === baselineName || base <= 0 ? "" : ` (${round(rate / base, 3)})`;
          return `${scenario.name} ${Math.round(rate)}${ratio}`;
        })
        .join(", ")}`,
    );
    if (replace) {
      retriesLeft--;
      say(
        `  other processes used > ${DISTURBED_PERCENT}% of a core during this round: measuring it again ` +
          `(${retriesLeft} more ${retriesLeft === 1 ? "retry" : "retries"} left)`,
      );
    } else {
      counted++;
    }
  }
  return rounds;
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
  const baseline = scenarios.find((scenario) => scenario.isBaseline === true);
  if (baseline === undefined) throw new Error("scenarios.ts has no baseline row");
  const throughputStart = Date.now();

  // Every server starts once and stays up; an idle one uses no CPU, so the one under load has the machine
  // to itself apart from the client.
  const needs = (server: Scenario["server"]) => scenarios.some((scenario) => scenario.server === server);
  const hello = await startHello(dir, false);
  const logged = needs("baseline-logged") ? await startHello(dir, true) : null;
  const gateway = needs("gateway") ? await startGateway(dir, "gateway") : null;
  // The baseline sends a token of the gateway's token length (the gateway's own, when it runs).
  const ctx: ScenarioContext = {
    baselineUrl: hello.url,
    loggedBaselineUrl: logged?.url ?? "",
    gatewayUrl: gateway?.child.url ?? "",
    token: gateway?.token ?? "x".repeat(43),
  };
  const prepared: Prepared[] = scenarios.map((scenario) => {
    const server =
      scenario.server === "baseline"
        ? hello
        : scenario.server === "baseline-logged"
          ? logged
          : gateway?.child;
    if (server === null || server === undefined)
      throw new Error(`${scenario.name}: its server did not start`);
    return {
      scenario,
      request: scenario.build(ctx),
      server,
      log: scenario.server === "gateway" ? (gateway?.log ?? null) : null,
    };
  });

  const probes: Record<string, ProbeResult> = {};
  const warmupOk: Record<string, boolean> = {};
  // Scenarios that disturb what follows them get rounds of their own, after everyone else's.
  const calm = prepared.filter(({ scenario }) => scenario.disturbs !== true);
  const disturbing = prepared.filter(
    ({ scenario }) => scenario.disturbs === true || scenario.isBaseline === true,
  );
  await warmUp(calm, probes, warmupOk);
  const rounds = await runRounds(calm, baseline.name, 0);
  if (disturbing.length > 1) {
    await warmUp(disturbing, probes, warmupOk);
    rounds.push(...(await runRounds(disturbing, baseline.name, rounds.length)));
  }
  await Promise.all([hello.stop(), logged?.stop(), gateway?.child.stop()]);
  const throughputSeconds = round((Date.now() - throughputStart) / 1000, 1);
  say(`throughput part: ${throughputSeconds} s`);
  const reports = summarize({
    scenarios,
    probes,
    warmupOk,
    rounds,
    handler: (_name, ranges) => (gateway === null ? null : handlerTimesOver(gateway.log, ranges)),
  });

  let setup: SetupBenchResult | null = null;
  const setupNames = SETUP_SCENARIOS.filter(
    (name) => config.only === undefined || config.only.includes(name),
  );
  if (!config.skipSetup && setupNames.length > 0) {
    setup = await runSetupBenchmarks({
      only: config.only,
      beginRuns: config.setupRuns,
      oauthRuns: config.oauthRuns,
      seconds: config.setupSeconds,
      warmupSeconds: config.setupWarmupSeconds,
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

  const targets = [...evaluateTargets(scenarios, reports, memory), ...setupTargets(setup)];
  const counted = rounds.filter((each) => each.counted).length;
  say(
    `\nthroughput: ${counted} paired rounds of ${config.seconds} s per scenario (order alternating; the scenarios ` +
      `that disturb others in rounds of their own, after the rest), after a ${config.warmupSeconds} s warm-up of each${rounds.length > counted ? `; ${rounds.length - counted} disturbed round(s) measured again` : ""}`,
  );
  printScenarios(reports);
  if (memory !== null) printMemory(memory);
  if (setup !== null) printSetup(setup, say);
  printTargets(targets);
  say(
    "\nreq/s: the median over the rounds; x base: the median of the per-round ratios (a scenario's req/s over " +
      "the baseline's req/s in the same round), min and max: the lowest and highest per-round ratio. " +
      "p50/p99: the median over the rounds of each round's p50/p99 (not pooled), per response, from the " +
      "request's write to the response's end (exact, not autocannon's 1 ms buckets); their x base: the median " +
      "of the per-round latency ratios. other%: the highest of any round.",
  );
  writeResults(RESULTS_FILE, {
    environment: env,
    config: { ...config, rssGrowthLimitMiB: MAX_RSS_GROWTH_MIB },
    method:
      "paired alternating rounds: ratio = median over counted rounds of (scenario req/s / baseline req/s of the same round); latency = median of per-round p50/p99",
    baseline: baseline.name,
    throughputSeconds,
    scenarios: reports,
    rounds: roundsForResults(rounds, baseline.name),
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
