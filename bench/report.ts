/**
 * Ratios to the baseline, the targets as PASS/FAIL, the console table and bench/results.json.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import type { HandlerTimes } from "./gateway-log.js";
import { type LoadResult, type ProbeResult, round } from "./load.js";
import type { MemoryResult } from "./memory.js";
import type { Scenario } from "./scenarios.js";

export const MAX_RSS_GROWTH_MIB = 64;
/** CPU used by the rest of the machine during a run, in % of one core, above which the run is suspect. */
export const DISTURBED_PERCENT = 15;

export interface ScenarioReport {
  name: string;
  description: string;
  server: Scenario["server"];
  expectStatus: number;
  probe: ProbeResult;
  /** Every response of the measured run had the expected status, and there was at least one. */
  statusOk: boolean;
  result: LoadResult;
  /** scenario / baseline, for req/s and for latency; null for the baseline itself or when undefined. */
  ratios: { reqPerSec: number | null; p50: number | null; p99: number | null };
  isBaseline: boolean;
  /** Measured runs it took (a run disturbed by other processes is repeated, see BENCH_RETRIES). */
  attempts: number;
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

function ratio(value: number, base: number): number | null {
  return base > 0 ? round(value / base, 3) : null;
}

/**
 * The baseline run the ratios use. Other work on the machine only ever slows a run down, so: the fastest of
 * the baseline's undisturbed runs, or, when every run was disturbed, the least disturbed one.
 */
export function chooseBaseline(reports: readonly ScenarioReport[]): ScenarioReport | undefined {
  const runs = reports.filter((report) => report.isBaseline);
  const clean = runs.filter((report) => report.result.cpu.otherPercent <= DISTURBED_PERCENT);
  const better = (a: ScenarioReport, b: ScenarioReport) =>
    clean.length > 0
      ? b.result.reqPerSecMean > a.result.reqPerSecMean
      : b.result.cpu.otherPercent < a.result.cpu.otherPercent;
  return (clean.length > 0 ? clean : runs).reduce<ScenarioReport | undefined>(
    (best, report) => (best === undefined || better(best, report) ? report : best),
    undefined,
  );
}

export function withRatios(reports: ScenarioReport[]): void {
  const chosen = chooseBaseline(reports);
  if (chosen === undefined) return;
  const baseline = chosen.result;
  for (const report of reports) {
    if (report === chosen) continue;
    report.ratios = {
      reqPerSec: ratio(report.result.reqPerSecMean, baseline.reqPerSecMean),
      p50: ratio(report.result.latencyMs.p50, baseline.latencyMs.p50),
      p99: ratio(report.result.latencyMs.p99, baseline.latencyMs.p99),
    };
  }
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
    const measured = report?.ratios.reqPerSec ?? null;
    const pass = measured !== null && measured >= scenario.minReqRatio && report?.statusOk === true;
    targets.push({
      name: `${scenario.name} req/s >= ${scenario.minReqRatio} x baseline`,
      pass,
      detail:
        report === undefined
          ? "not run"
          : `${report.result.reqPerSecMean} req/s = ${measured ?? "n/a"} x baseline${report.statusOk ? "" : ` (but not every response was ${scenario.expectStatus})`}`,
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

export function printScenarios(reports: readonly ScenarioReport[]): void {
  out();
  out(
    `${"scenario".padEnd(16)}${cell("req/s", 10)}${cell("x base", 8)}${cell("p50 ms", 9)}${cell("x base", 8)}` +
      `${cell("p99 ms", 9)}${cell("x base", 8)}${cell("errors", 8)}${cell("timeout", 8)}${cell("non2xx", 8)}` +
      `${cell("closes", 8)}${cell("cpu cli%", 9)}${cell("srv%", 6)}${cell("other%", 7)}`,
  );
  for (const { name, result, ratios } of reports) {
    out(
      `${name.padEnd(16)}${cell(result.reqPerSecMean, 10)}${cell(ratios.reqPerSec, 8)}` +
        `${cell(result.latencyMs.p50, 9)}${cell(ratios.p50, 8)}${cell(result.latencyMs.p99, 9)}` +
        `${cell(ratios.p99, 8)}${cell(result.errors, 8)}${cell(result.timeouts, 8)}${cell(result.non2xx, 8)}` +
        `${cell(result.connectionCloseResponses, 8)}${cell(result.cpu.clientPercent, 9)}${cell(result.cpu.serverPercent, 6)}` +
        `${cell(result.cpu.otherPercent, 7)}`,
    );
  }
  const disturbed = reports.filter((report) => report.result.cpu.otherPercent > DISTURBED_PERCENT);
  if (disturbed.length > 0) {
    out(
      `WARNING: other processes used > ${DISTURBED_PERCENT}% of a core during ${disturbed.map((r) => r.name).join(", ")}: those figures are disturbed; rerun on a quiet machine.`,
    );
  }
  out();
  for (const report of reports) {
    const codes = Object.entries(report.result.statusCodes)
      .map(([code, count]) => `${code}x${count}`)
      .join(" ");
    const handler =
      report.handler === null
        ? ""
        : `; in-handler p50 ${report.handler.durationMs.p50} ms, p99 ${report.handler.durationMs.p99} ms`;
    const { cpu } = report.result;
    out(
      `${report.name}: server CPU ${cpu.serverUsPerResponse} µs per response (main thread ` +
        `${cpu.serverMainThreadUsPerResponse} µs, ${cpu.serverMainThreadPercent}% busy)`,
    );
    out(
      `${report.name}: statuses ${codes || "none"} (${report.statusOk ? "all" : "NOT all"} ${report.expectStatus}); ` +
        `sent ${report.result.requestsSent}, answered ${report.result.responses}; probe ${report.probe.status}` +
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
