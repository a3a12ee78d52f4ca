/**
 * The scenarios' figures summed up over the paired rounds (median req/s, median of the per-round ratios to
 * the baseline, min and max), the targets as PASS/FAIL, the console table and bench/results.json.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import type { HandlerTimes, LogRange } from "./gateway-log.js";
import { type LoadResult, type ProbeResult, round } from "./load.js";
import type { MemoryResult } from "./memory.js";
import { type PairedRatio, median, pairedRatios } from "./rounds.js";
import type { Scenario } from "./scenarios.js";

export const MAX_RSS_GROWTH_MIB = 64;
/** CPU used by the rest of the machine during a run, in % of one core, above which the run is suspect. */
export const DISTURBED_PERCENT = 15;

/** One scenario's measured run in one round. */
export interface RoundRun {
  /** One request by node:http just before the run. */
  probe: ProbeResult;
  /** Every response of the run had the expected status (and there was one), and so did the probe. */
  statusOk: boolean;
  result: LoadResult;
  /** The gateway log's bytes written during the run; null for the hello world servers. */
  logRange: LogRange | null;
}

/** One round: the baseline and every other scenario, measured once each, one after the other. */
export interface Round {
  /** 0-based over every round measured, a replaced one included. */
  index: number;
  /** The scenarios' order in the round (forward on even counted rounds, reversed on odd ones). */
  order: "forward" | "reversed";
  /** The machine was quiet before the round began (see quiet.ts). */
  machineQuiet: boolean;
  /** Other processes used more than DISTURBED_PERCENT of a core during one of its runs. */
  disturbed: boolean;
  /** False for a disturbed round measured again (BENCH_RETRIES): kept in results.json, left out of the figures. */
  counted: boolean;
  runs: Record<string, RoundRun>;
}

/** Median, min and max over the counted rounds, and each round's figure. */
export interface Spread {
  median: number | null;
  min: number | null;
  max: number | null;
  perRound: number[];
}

export interface ScenarioReport {
  name: string;
  description: string;
  server: Scenario["server"];
  isBaseline: boolean;
  expectStatus: number;
  /** The probe before the warm-up. */
  probe: ProbeResult;
  /**
   * Every response had the expected status: the warm-up's and every round's (a replaced round included),
   * each round's probe too, and every round answered at least one request.
   */
  statusOk: boolean;
  /** Indices (0-based, as Round.index) of the rounds whose statuses were wrong (see statusOk). */
  badRounds: number[];
  warmupOk: boolean;
  /** Counted rounds. */
  rounds: number;
  reqPerSec: Spread;
  /**
   * Against the baseline of the same round, the median over the counted rounds: req/s (with min, max and
   * each round's ratio), and p50 and p99 latency. Null for the baseline itself.
   */
  ratios: { reqPerSec: PairedRatio | null; p50: number | null; p99: number | null };
  /** The median over the counted rounds of each round's p50 and p99 (exact, per response). */
  latencyMs: { p50: number | null; p99: number | null };
  /** Summed over the counted rounds. */
  totals: Pick<
    LoadResult,
    | "responses"
    | "requestsSent"
    | "errors"
    | "timeouts"
    | "non2xx"
    | "mismatches"
    | "connectionCloseResponses"
    | "statusCodes"
  >;
  /** Medians over the counted rounds, except otherPercent: the highest of any round. */
  cpu: LoadResult["cpu"];
  /** The gateway's in-handler times, its log lines of all counted rounds pooled; null for the hello worlds. */
  handler: HandlerTimes | null;
}

export interface Target {
  name: string;
  pass: boolean;
  detail: string;
}

export function statusOk(result: LoadResult, expected: number): boolean {
  const codes = Object.keys(result.statusCodes);
  return result.responses > 0 && codes.length === 1 && codes[0] === String(expected);
}

function spread(values: readonly number[], digits: number): Spread {
  const middle = median(values);
  return {
    median: middle === null ? null : round(middle, digits),
    min: values.length === 0 ? null : round(Math.min(...values), digits),
    max: values.length === 0 ? null : round(Math.max(...values), digits),
    perRound: values.map((value) => round(value, digits)),
  };
}

const medianOf = (values: readonly number[], digits: number) => {
  const middle = median(values);
  return middle === null ? null : round(middle, digits);
};

/** One figure per scenario per round, for pairedRatios. */
function figures(rounds: readonly Round[], pick: (result: LoadResult) => number) {
  return rounds.map((each) =>
    Object.fromEntries(Object.entries(each.runs).map(([name, run]) => [name, pick(run.result)])),
  );
}

export interface SummaryInput {
  scenarios: readonly Scenario[];
  /** The probe of each scenario before the warm-up. */
  probes: Readonly<Record<string, ProbeResult>>;
  /** Whether each scenario's warm-up responses all had the expected status. */
  warmupOk: Readonly<Record<string, boolean>>;
  rounds: readonly Round[];
  /** In-handler times of a scenario from its runs' log ranges (null: not known for it). */
  handler?: (name: string, ranges: LogRange[]) => HandlerTimes | null;
}

/** Each scenario's figures over the counted rounds, with its ratios to the baseline paired round by round. */
export function summarize(input: SummaryInput): ScenarioReport[] {
  const baseline = input.scenarios.find((scenario) => scenario.isBaseline === true);
  const counted = input.rounds.filter((each) => each.counted);
  const paired = (pick: (result: LoadResult) => number) =>
    baseline === undefined ? {} : pairedRatios(figures(counted, pick), baseline.name);
  const reqRatios = paired((result) => result.reqPerSecMean);
  const p50Ratios = paired((result) => result.latencyMs.p50);
  const p99Ratios = paired((result) => result.latencyMs.p99);
  const reports: ScenarioReport[] = [];
  for (const scenario of input.scenarios) {
    const probe = input.probes[scenario.name];
    if (probe === undefined) continue;
    const runs = counted.flatMap((each) => {
      const run = each.runs[scenario.name];
      return run === undefined ? [] : [run];
    });
    const results = runs.map((run) => run.result);
    const badRounds = input.rounds
      .filter((each) => each.runs[scenario.name]?.statusOk === false)
      .map((each) => each.index);
    const warmupOk = input.warmupOk[scenario.name] === true;
    const statusCodes: Record<string, number> = {};
    for (const result of results) {
      for (const [code, count] of Object.entries(result.statusCodes)) {
        statusCodes[code] = (statusCodes[code] ?? 0) + count;
      }
    }
    const sum = (pick: (result: LoadResult) => number) =>
      results.reduce((total, result) => total + pick(result), 0);
    const cpuMedian = (pick: (cpu: LoadResult["cpu"]) => number) =>
      medianOf(
        results.map((result) => pick(result.cpu)),
        1,
      ) ?? 0;
    const isBaseline = scenario.isBaseline === true;
    const ranges = runs.flatMap((run) => (run.logRange === null ? [] : [run.logRange]));
    reports.push({
      name: scenario.name,
      description: scenario.description,
      server: scenario.server,
      isBaseline,
      expectStatus: scenario.expectStatus,
      probe,
      statusOk: warmupOk && badRounds.length === 0 && runs.length > 0,
      badRounds,
      warmupOk,
      rounds: runs.length,
      reqPerSec: spread(
        results.map((result) => result.reqPerSecMean),
        1,
      ),
      ratios: {
        reqPerSec: isBaseline ? null : (reqRatios[scenario.name] ?? null),
        p50: isBaseline ? null : (p50Ratios[scenario.name]?.median ?? null),
        p99: isBaseline ? null : (p99Ratios[scenario.name]?.median ?? null),
      },
      latencyMs: {
        p50: medianOf(
          results.map((result) => result.latencyMs.p50),
          3,
        ),
        p99: medianOf(
          results.map((result) => result.latencyMs.p99),
          3,
        ),
      },
      totals: {
        responses: sum((result) => result.responses),
        requestsSent: sum((result) => result.requestsSent),
        errors: sum((result) => result.errors),
        timeouts: sum((result) => result.timeouts),
        non2xx: sum((result) => result.non2xx),
        mismatches: sum((result) => result.mismatches),
        connectionCloseResponses: sum((result) => result.connectionCloseResponses),
        statusCodes,
      },
      cpu: {
        clientPercent: cpuMedian((cpu) => cpu.clientPercent),
        serverPercent: cpuMedian((cpu) => cpu.serverPercent),
        serverMainThreadPercent: cpuMedian((cpu) => cpu.serverMainThreadPercent),
        serverUsPerResponse: cpuMedian((cpu) => cpu.serverUsPerResponse),
        serverMainThreadUsPerResponse: cpuMedian((cpu) => cpu.serverMainThreadUsPerResponse),
        otherPercent: results.reduce((most, result) => Math.max(most, result.cpu.otherPercent), 0),
      },
      handler:
        ranges.length === 0 || input.handler === undefined ? null : input.handler(scenario.name, ranges),
    });
  }
  return reports;
}

/** The rounds as bench/results.json keeps them: per scenario its req/s, its ratio that round, its run. */
export function roundsForResults(rounds: readonly Round[], baselineName: string) {
  const ratios = pairedRatios(
    figures(rounds, (result) => result.reqPerSecMean),
    baselineName,
  );
  return rounds.map((each, position) => ({
    index: each.index,
    order: each.order,
    counted: each.counted,
    disturbed: each.disturbed,
    machineQuiet: each.machineQuiet,
    scenarios: Object.fromEntries(
      Object.entries(each.runs).map(([name, run]) => [
        name,
        {
          reqPerSec: run.result.reqPerSecMean,
          ratio: ratios[name]?.perRound[position] ?? null,
          statusOk: run.statusOk,
          probeStatus: run.probe.status,
          result: run.result,
        },
      ]),
    ),
  }));
}

export function evaluateTargets(
  scenarios: readonly Scenario[],
  reports: ScenarioReport[],
  memory: MemoryResult | null,
): Target[] {
  const targets: Target[] = [];
  for (const scenario of scenarios) {
    if (scenario.minReqRatio === undefined) continue;
    const report = reports.find((candidate) => candidate.name === scenario.name);
    const ratio = report?.ratios.reqPerSec ?? null;
    const measured = ratio?.median ?? null;
    const pass = measured !== null && measured >= scenario.minReqRatio && report?.statusOk === true;
    const statusNote =
      report?.statusOk === false ? ` (but not every response was ${scenario.expectStatus})` : "";
    targets.push({
      name: `${scenario.name} req/s >= ${scenario.minReqRatio} x baseline (median of the per-round ratios)`,
      pass,
      detail:
        report === undefined
          ? "not run"
          : `median ${measured ?? "n/a"} x baseline over ${report.rounds} rounds (min ${ratio?.min ?? "n/a"}, ` +
            `max ${ratio?.max ?? "n/a"}; median ${report.reqPerSec.median} req/s)${statusNote}`,
    });
  }
  if (memory !== null) {
    targets.push({
      name: `RSS growth under ${memory.uploads} x ${memory.uploadBytes / 1048576} MiB uploads < ${MAX_RSS_GROWTH_MIB} MiB`,
      pass: memory.peakGrowthMiB < MAX_RSS_GROWTH_MIB && memory.all413,
      detail: `peak growth ${memory.peakGrowthMiB} MiB (sampled ${memory.sampledPeakGrowthMiB} MiB, retained ${memory.retainedGrowthMiB} MiB)${memory.all413 ? "" : " (but not every upload got 413)"}`,
    });
  }
  return targets;
}

const out = (line = "") => process.stdout.write(`${line}\n`);
const cell = (value: unknown, width: number) => String(value ?? "-").padStart(width);

/**
 * The summary table (medians over the counted rounds; "x base" is the median of the per-round ratios to
 * the baseline, with their min and max for req/s), then per scenario its rounds, CPU and statuses.
 */
export function printScenarios(reports: readonly ScenarioReport[]): void {
  out();
  out(
    `${"scenario".padEnd(16)}${cell("req/s", 9)}${cell("x base", 8)}${cell("min", 7)}${cell("max", 7)}` +
      `${cell("p50 ms", 9)}${cell("x base", 8)}${cell("p99 ms", 9)}${cell("x base", 8)}${cell("errors", 7)}` +
      `${cell("timeout", 8)}${cell("non2xx", 8)}${cell("closes", 8)}${cell("cli%", 6)}${cell("srv%", 6)}` +
      `${cell("other%", 7)}${cell("ok", 4)}`,
  );
  for (const report of reports) {
    const { ratios, totals, cpu } = report;
    out(
      `${report.name.padEnd(16)}${cell(report.reqPerSec.median, 9)}${cell(ratios.reqPerSec?.median, 8)}` +
        `${cell(ratios.reqPerSec?.min, 7)}${cell(ratios.reqPerSec?.max, 7)}` +
        `${cell(report.latencyMs.p50, 9)}${cell(ratios.p50, 8)}${cell(report.latencyMs.p99, 9)}${cell(ratios.p99, 8)}` +
        `${cell(totals.errors, 7)}${cell(totals.timeouts, 8)}${cell(totals.non2xx, 8)}` +
        `${cell(totals.connectionCloseResponses, 8)}${cell(cpu.clientPercent, 6)}${cell(cpu.serverPercent, 6)}` +
        `${cell(cpu.otherPercent, 7)}${cell(report.statusOk ? "ok" : "NO", 4)}`,
    );
  }
  const disturbed = reports.filter((report) => report.cpu.otherPercent > DISTURBED_PERCENT);
  if (disturbed.length > 0) {
    out(
      `WARNING: other processes used > ${DISTURBED_PERCENT}% of a core during a counted round of ${disturbed.map((r) => r.name).join(", ")}: those rounds are disturbed; rerun on a quiet machine.`,
    );
  }
  out();
  for (const report of reports) {
    const codes = Object.entries(report.totals.statusCodes)
      .map(([code, count]) => `${code}x${count}`)
      .join(" ");
    const handler =
      report.handler === null
        ? ""
        : `; in-handler (all rounds pooled) p50 ${report.handler.durationMs.p50} ms, p99 ${report.handler.durationMs.p99} ms`;
    const { cpu } = report;
    const perRound = report.reqPerSec.perRound.map((value) => Math.round(value)).join(" ");
    const ratios =
      report.ratios.reqPerSec === null ? "" : `; x base ${report.ratios.reqPerSec.perRound.join(" ")}`;
    out(`${report.name}: per round req/s ${perRound}${ratios}`);
    out(
      `${report.name}: server CPU ${cpu.serverUsPerResponse} µs per response (main thread ` +
        `${cpu.serverMainThreadUsPerResponse} µs, ${cpu.serverMainThreadPercent}% busy)`,
    );
    const bad = report.statusOk
      ? "all"
      : `NOT all${report.warmupOk ? "" : " (warm-up)"}${report.badRounds.length === 0 ? "" : ` (rounds ${report.badRounds.map((index) => index + 1).join(", ")})`}`;
    out(
      `${report.name}: statuses ${codes || "none"} (${bad} ${report.expectStatus}); ` +
        `sent ${report.totals.requestsSent}, answered ${report.totals.responses}; probe ${report.probe.status}` +
        ` Connection: ${report.probe.connection ?? "-"}${handler}`,
    );
  }
}

export function printMemory(memory: MemoryResult): void {
  const mib = (kib: number) => round(kib / 1024, 1);
  out();
  out(
    `memory: ${memory.uploads} concurrent uploads of ${memory.uploadBytes} bytes: ` +
      `statuses ${JSON.stringify(memory.statusCodes)}, ${memory.completedUploads} sent in full ` +
      `(${memory.totalMiBSent} MiB in ${memory.wallSeconds} s), errors ${JSON.stringify(memory.errors)}, ` +
      `413 after p50 ${memory.responseMs.p50} ms / max ${memory.responseMs.max} ms`,
  );
  out(
    `memory: gateway VmRSS before ${mib(memory.before.vmRssKiB)} MiB, VmHWM after ${mib(memory.after.vmHwmKiB)} MiB` +
      `${memory.peakResetWorked ? " (peak reset before the uploads)" : " (peak NOT reset: using sampled RSS)"}, ` +
      `sampled peak ${mib(memory.sampledPeakRssKiB)} MiB, VmRSS after ${mib(memory.after.vmRssKiB)} MiB, ` +
      `1 s later ${mib(memory.settledRssKiB)} MiB`,
  );
  out(`memory: peak RSS growth ${memory.peakGrowthMiB} MiB`);
}

export function printTargets(targets: readonly Target[]): void {
  out();
  for (const target of targets) out(`${target.pass ? "PASS" : "FAIL"}  ${target.name}: ${target.detail}`);
}

export interface Environment {
  node: string;
  cpuCount: number;
  cpuModel: string;
  platform: string;
  date: string;
  /** 1, 5 and 15 minute load averages when the bench started: other work on the machine skews figures. */
  loadAverageAtStart: number[];
}

export function environment(): Environment {
  return {
    node: process.version,
    cpuCount: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? "unknown",
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
    loadAverageAtStart: loadavg().map((value) => round(value, 2)),
  };
}

export function writeResults(file: string, results: unknown): void {
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  out(`\nwrote ${file}`);
}
