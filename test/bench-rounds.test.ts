import { expect } from "chai";
import type { LoadResult, ProbeResult } from "../bench/load.js";
import { type Round, type RoundRun, evaluateTargets, summarize } from "../bench/report.js";
import { median, pairedRatios, roundOrder, roundOrderName } from "../bench/rounds.js";
import type { Scenario } from "../bench/scenarios.js";

describe("the bench's paired rounds", () => {
  describe("median", () => {
    it("is the middle value of an odd count, the mean of the two middle ones of an even count", () => {
      expect(median([3, 1, 2])).to.equal(2);
      expect(median([4, 1, 3, 2])).to.equal(2.5);
      expect(median([7])).to.equal(7);
      expect(median([])).to.equal(null);
    });

    it("does not reorder its input", () => {
      const values = [3, 1, 2];
      median(values);
      expect(values).to.deep.equal([3, 1, 2]);
    });
  });

  describe("roundOrder", () => {
    it("runs the scenarios forward on even rounds and reversed on odd ones", () => {
      const names = ["baseline", "a", "b"];
      expect(roundOrder(names, 0)).to.deep.equal(["baseline", "a", "b"]);
      expect(roundOrder(names, 1)).to.deep.equal(["b", "a", "baseline"]);
      expect(roundOrder(names, 2)).to.deep.equal(["baseline", "a", "b"]);
      expect(names).to.deep.equal(["baseline", "a", "b"]);
      expect([0, 1, 2, 3].map(roundOrderName)).to.deep.equal(["forward", "reversed", "forward", "reversed"]);
    });
  });

  describe("pairedRatios", () => {
    it("divides each round's figure by the same round's baseline and takes the median of those ratios", () => {
      // The machine drifts: the baseline runs at 1000, 2000, 500 req/s. Paired, the scenario is half of it
      // in two rounds and 0.6 in one; against the fastest baseline it would look like 0.25-0.6.
      const ratios = pairedRatios(
        [
          { baseline: 1000, capabilities: 500, unauthorized: 800 },
          { baseline: 2000, capabilities: 1200, unauthorized: 1500 },
          { baseline: 500, capabilities: 250, unauthorized: 400 },
        ],
        "baseline",
      );
      expect(Object.keys(ratios).sort()).to.deep.equal(["capabilities", "unauthorized"]);
      expect(ratios.capabilities).to.deep.equal({
        perRound: [0.5, 0.6, 0.5],
        median: 0.5,
        min: 0.5,
        max: 0.6,
      });
      expect(ratios.unauthorized).to.deep.equal({
        perRound: [0.8, 0.75, 0.8],
        median: 0.8,
        min: 0.75,
        max: 0.8,
      });
    });

    it("is the median of the ratios, not the ratio of the medians", () => {
      // Median req/s 300 / median baseline 1000 would give 0.3; the per-round ratios are 0.1, 0.3, 0.9.
      const ratios = pairedRatios(
        [
          { baseline: 1000, s: 100 },
          { baseline: 1000, s: 300 },
          { baseline: 100, s: 90 },
        ],
        "baseline",
      );
      expect(ratios.s?.median).to.equal(0.3);
      const twoRounds = pairedRatios(
        [
          { baseline: 1000, s: 400 },
          { baseline: 1000, s: 500 },
        ],
        "baseline",
      );
      expect(twoRounds.s?.median).to.equal(0.45);
    });

    it("leaves out rounds without the scenario or without a positive baseline, and rounds to 3 digits", () => {
      const ratios = pairedRatios(
        [{ baseline: 0, s: 100 }, { baseline: 300, s: 100 }, { baseline: 300 }, { s: 5 }],
        "baseline",
      );
      expect(ratios.s).to.deep.equal({
        perRound: [null, 0.333, null, null],
        median: 0.333,
        min: 0.333,
        max: 0.333,
      });
      expect(pairedRatios([{ baseline: 0, s: 1 }], "baseline").s).to.deep.equal({
        perRound: [null],
        median: null,
        min: null,
        max: null,
      });
      expect(pairedRatios([], "baseline")).to.deep.equal({});
    });
  });

  describe("summarize and the targets", () => {
    const probe: ProbeResult = { status: 200, connection: "keep-alive", body: "" };
    const result = (reqPerSec: number, status: number, p50 = 1): LoadResult => ({
      durationSeconds: 1,
      reqPerSecMean: reqPerSec,
      reqPerSecOverall: reqPerSec,
      latencyMs: { p50, p90: p50, p99: p50 * 2, max: p50 * 3, mean: p50 },
      autocannonLatencyMs: { p50: 1, p99: 2 },
      responses: reqPerSec,
      requestsSent: reqPerSec,
      errors: 0,
      timeouts: 0,
      non2xx: status >= 300 ? reqPerSec : 0,
      mismatches: 0,
      statusCodes: { [status]: reqPerSec },
      connectionCloseResponses: 0,
      cpu: {
        clientPercent: 50,
        serverPercent: 90,
        serverMainThreadPercent: 80,
        serverUsPerResponse: 10,
        serverMainThreadUsPerResponse: 8,
        otherPercent: 1,
      },
    });
    const run = (reqPerSec: number, status: number, expected: number, p50?: number): RoundRun => ({
      probe: { ...probe, status },
      statusOk: status === expected,
      result: result(reqPerSec, status, p50),
      logRange: null,
    });
    const scenarios: Scenario[] = [
      {
        name: "baseline",
        description: "",
        server: "baseline",
        expectStatus: 200,
        isBaseline: true,
        build: () => ({ url: "", method: "POST", headers: {} }),
      },
      {
        name: "capabilities",
        description: "",
        server: "gateway",
        expectStatus: 200,
        minReqRatio: 0.5,
        build: () => ({ url: "", method: "POST", headers: {} }),
      },
    ];
    const roundOf = (index: number, base: number, caps: number, counted = true, capsStatus = 200): Round => ({
      index,
      order: roundOrderName(index),
      machineQuiet: true,
      disturbed: !counted,
      counted,
      runs: { baseline: run(base, 200, 200, 1), capabilities: run(caps, capsStatus, 200, 2) },
    });
    const input = (rounds: Round[]) => ({
      scenarios,
      probes: { baseline: probe, capabilities: probe },
      warmupOk: { baseline: true, capabilities: true },
      rounds,
    });

    it("reports median req/s, the median paired ratio with min and max, and leaves replaced rounds out", () => {
      const reports = summarize(
        input([
          roundOf(0, 1000, 520),
          roundOf(1, 2000, 100, false),
          roundOf(2, 2000, 1100),
          roundOf(3, 600, 270),
        ]),
      );
      const caps = reports.find((report) => report.name === "capabilities");
      expect(caps?.rounds).to.equal(3);
      expect(caps?.reqPerSec).to.deep.equal({ median: 520, min: 270, max: 1100, perRound: [520, 1100, 270] });
      expect(caps?.ratios.reqPerSec).to.deep.equal({
        perRound: [0.52, 0.55, 0.45],
        median: 0.52,
        min: 0.45,
        max: 0.55,
      });
      expect(caps?.ratios.p50).to.equal(2);
      expect(caps?.latencyMs).to.deep.equal({ p50: 2, p99: 4 });
      expect(caps?.statusOk).to.equal(true);
      const base = reports.find((report) => report.name === "baseline");
      expect(base?.ratios).to.deep.equal({ reqPerSec: null, p50: null, p99: null });
      expect(base?.reqPerSec.median).to.equal(1000);
      const [target] = evaluateTargets(scenarios, reports, null);
      expect(target?.pass).to.equal(true);
      expect(target?.detail).to.contain("median 0.52 x baseline over 3 rounds (min 0.45, max 0.55");
    });

    it("fails a scenario whose statuses were wrong in any round, even with a good ratio", () => {
      const reports = summarize(
        input([roundOf(0, 1000, 900), roundOf(1, 1000, 900, true, 500), roundOf(2, 1000, 900)]),
      );
      const caps = reports.find((report) => report.name === "capabilities");
      expect(caps?.statusOk).to.equal(false);
      expect(caps?.badRounds).to.deep.equal([1]);
      const [target] = evaluateTargets(scenarios, reports, null);
      expect(target?.pass).to.equal(false);
      expect(target?.detail).to.contain("not every response was 200");
    });

    it("fails a scenario whose warm-up statuses were wrong", () => {
      const reports = summarize({
        ...input([roundOf(0, 1000, 900)]),
        warmupOk: { baseline: true, capabilities: false },
      });
      expect(reports.find((report) => report.name === "capabilities")?.statusOk).to.equal(false);
    });
  });
});
