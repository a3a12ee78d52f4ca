/**
 * The load scenarios, one row each: which server, which request, what status it must be answered with,
 * and the throughput target relative to the baseline. Add a row to measure something new.
 *
 * bench/run.ts measures them in paired, alternating rounds: every round runs the baseline and each other
 * scenario once (in this order on even rounds, reversed on odd ones), and a scenario's ratio is the median
 * over the rounds of its req/s divided by the baseline's req/s of the same round.
 */
import type { LoadRequest } from "./load.js";

export const MANAGE_PATH = "/api/mcp/manage";

export interface ScenarioContext {
  baselineUrl: string;
  loggedBaselineUrl: string;
  gatewayUrl: string;
  token: string;
}

export interface Scenario {
  name: string;
  description: string;
  server: "baseline" | "baseline-logged" | "gateway";
  /** Every response must have this status; anything else is reported as a problem of the run. */
  expectStatus: number;
  build: (ctx: ScenarioContext) => LoadRequest;
  /** Target: the median of the per-round ratios of its req/s to the baseline's is at least this. */
  minReqRatio?: number;
  /**
   * It disturbs whatever runs after it (a connection per request, or 1 MiB uploads that the gateway drains
   * and lingers on): it is warmed up and measured in rounds of its own, with the baseline, after the rounds
   * of every other scenario, so that it cannot slow those down.
   */
  disturbs?: true;
  /**
   * The baseline (exactly one row): it runs in every round, whatever BENCH_ONLY says, and each other
   * scenario's ratio for a round is taken against its req/s in that same round.
   */
  isBaseline?: true;
}

export const CAPABILITIES_BODY = JSON.stringify({ method: "mcp.capabilities" });
const JSON_TYPE = "application/json";

const baselineRequest = (ctx: ScenarioContext): LoadRequest => ({
  url: `${ctx.baselineUrl}${MANAGE_PATH}`,
  method: "POST",
  headers: { "Content-Type": JSON_TYPE, Authorization: `Bearer ${ctx.token}` },
  body: CAPABILITIES_BODY,
});
const ONE_MIB = 1024 * 1024;

/** A JSON envelope padded to exactly `size` bytes, so the body looks like a real (oversized) request. */
export function paddedEnvelope(size: number): Buffer {
  const head = '{"method":"mcp.capabilities","params":{"pad":"';
  const tail = '"}}';
  const body = Buffer.alloc(size, "x");
  body.write(head, 0, "utf8");
  body.write(tail, size - tail.length, "utf8");
  return body;
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: "baseline",
    description: "bare node:http hello world, same POST as capabilities (body ignored)",
    server: "baseline",
    expectStatus: 200,
    isBaseline: true,
    build: baselineRequest,
  },
  {
    name: "baseline-close",
    description:
      "reference, no target: the hello world answering Connection: close, as the gateway's 413 does",
    server: "baseline",
    expectStatus: 200,
    disturbs: true,
    build: (ctx) => ({
      url: `${ctx.baselineUrl}${MANAGE_PATH}`,
      method: "POST",
      headers: { "Content-Type": JSON_TYPE, Authorization: `Bearer ${ctx.token}`, "X-Bench-Close": "1" },
      body: CAPABILITIES_BODY,
    }),
  },
  {
    name: "baseline-logged",
    description:
      "reference, no target: the hello world plus one pino line per request, as the gateway logs (a floor for any logged route)",
    server: "baseline-logged",
    expectStatus: 200,
    build: (ctx) => ({ ...baselineRequest(ctx), url: `${ctx.loggedBaselineUrl}${MANAGE_PATH}` }),
  },
  {
    name: "capabilities",
    description: "mcp.capabilities through the whole route (auth, body, envelope, worker pool)",
    server: "gateway",
    expectStatus: 200,
    minReqRatio: 0.5,
    build: (ctx) => ({
      url: `${ctx.gatewayUrl}${MANAGE_PATH}`,
      method: "POST",
      headers: { "Content-Type": JSON_TYPE, Authorization: `Bearer ${ctx.token}` },
      body: CAPABILITIES_BODY,
    }),
  },
  {
    name: "route-no-dispatch",
    description:
      "reference, no target: the whole route up to dispatch (unknown method: 400, body read, kept alive)",
    server: "gateway",
    expectStatus: 400,
    build: (ctx) => ({
      url: `${ctx.gatewayUrl}${MANAGE_PATH}`,
      method: "POST",
      headers: { "Content-Type": JSON_TYPE, Authorization: `Bearer ${ctx.token}` },
      body: JSON.stringify({ method: "mcp.bench-unknown" }),
    }),
  },
  {
    name: "unauthorized",
    description: "same request with a wrong token: 401",
    server: "gateway",
    expectStatus: 401,
    minReqRatio: 0.75,
    build: (ctx) => ({
      url: `${ctx.gatewayUrl}${MANAGE_PATH}`,
      method: "POST",
      headers: { "Content-Type": JSON_TYPE, Authorization: `Bearer not-${ctx.token}` },
      body: CAPABILITIES_BODY,
    }),
  },
  {
    name: "too-large-1MiB",
    description: "valid token, 1 MiB body (Content-Length 1048576): 413 with Connection: close",
    server: "gateway",
    expectStatus: 413,
    disturbs: true,
    build: (ctx) => ({
      url: `${ctx.gatewayUrl}${MANAGE_PATH}`,
      method: "POST",
      // autocannon writes Content-Length itself from the body's length (1048576).
      headers: { "Content-Type": JSON_TYPE, Authorization: `Bearer ${ctx.token}` },
      body: paddedEnvelope(ONE_MIB),
    }),
  },
];
