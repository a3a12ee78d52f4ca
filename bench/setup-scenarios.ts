/**
 * Setup benchmarks, each against its own fresh gateway child process and a fixture server in this process:
 *
 * - setup-begin-review: mcp.setup.begin of a fresh name against the plain fixture, then mcp.setup.status
 *   every 2 ms until review (the latency an owner app sees before it can show the tools); each operation
 *   is cancelled afterwards. Target: p50 < 50 ms.
 * - setup-oauth: the whole OAuth flow against the OAuth fixture (begin with a loopback redirectUri,
 *   awaiting_authorization, the fixture's headless browser, mcp.setup.callback, review, confirm), with
 *   the time of each part. No target; reported.
 * - connections-list-100: mcp.connections.list with 100 connections configured for real (begin/confirm
 *   against one plain fixture), measured while all 100 are connected (the target) and again after all
 *   are disabled. Target: p99 < 20 ms for one client on a keep-alive connection.
 *
 * The 100 connections of connections-list-100 are set up in parallel batches of 10 (begin, review and
 * confirm each); the setup time is reported, not a target.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { followAuthorization, startOAuthServer } from "../fixtures/servers/oauth.js";
import { startPlainServer } from "../fixtures/servers/plain.js";
import type { Child } from "./children.js";
import { type HandlerTimes, handlerTimes, logSize } from "./gateway-log.js";
import { type LoadRequest, type LoadResult, percentile, round, runLoad } from "./load.js";
import { waitForQuiet } from "./quiet.js";
import type { Target } from "./report.js";
import { MANAGE_PATH } from "./scenarios.js";
import {
  type OperationView,
  type OwnerClient,
  freshRequestId,
  ownerClient,
  pollUntil,
} from "./setup-client.js";

export const SETUP_SCENARIOS = ["setup-begin-review", "setup-oauth", "connections-list-100"] as const;
export type SetupScenarioName = (typeof SETUP_SCENARIOS)[number];

export const BEGIN_REVIEW_P50_TARGET_MS = 50;
export const LIST_P99_TARGET_MS = 20;
const POLL_INTERVAL_MS = 2;
const LIST_CONNECTIONS = 100;
const SETUP_BATCH = 10;

export interface Distribution {
  runs: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    runs: sorted.length,
    p50: round(percentile(sorted, 50), 2),
    p90: round(percentile(sorted, 90), 2),
    p99: round(percentile(sorted, 99), 2),
    mean: round(sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length), 2),
    min: round(sorted[0] ?? 0, 2),
    max: round(sorted[sorted.length - 1] ?? 0, 2),
  };
}

export interface SetupGateway {
  child: Child;
  token: string;
  /** The gateway's pino log (one line per owner-route request, with its in-handler durationMs). */
  log: string;
}

export interface SetupBenchOptions {
  /** Scenario names to run; all when undefined. */
  only: readonly string[] | undefined;
  /** Measured begin-to-review runs (at least 50). */
  beginRuns: number;
  /** Measured OAuth flows (at least 10). */
  oauthRuns: number;
  /** Seconds per connections.list load run, and its warm-up. */
  seconds: number;
  warmupSeconds: number;
  /** Concurrent clients of the second connections.list run. */
  connections: number;
  startGateway: (label: string) => Promise<SetupGateway>;
  say: (line: string) => void;
  /** Before each measured part, wait up to this long for the machine to be quiet (0 or absent: don't). */
  quietWaitMs?: number;
}

export interface BeginReviewResult {
  warmupRuns: number;
  /** The machine was quiet when the measured runs began (see quiet.ts). */
  quiet: boolean;
  pollIntervalMs: number;
  /** From writing the begin request to reading the status that says review. */
  latencyMs: Distribution;
  /** The begin request alone. */
  beginMs: Distribution;
  /** Status requests per run, the one that saw review included. */
  polls: { mean: number; max: number };
  /** The cancel after each run (not in the latency). */
  cancelMs: Distribution;
}

export interface OAuthResult {
  warmupRuns: number;
  quiet: boolean;
  /** begin to the confirm's answer, the headless browser included. */
  totalMs: Distribution;
  partsMs: {
    /** begin, then status until awaiting_authorization (PRM/AS metadata, registration, PKCE). */
    beginToAwaiting: Distribution;
    /** The fixture browser through sign-in and consent (the user's part, not the gateway's). */
    browser: Distribution;
    /** mcp.setup.callback (the code exchange) until its answer. */
    callback: Distribution;
    /** status until review (discovery with the new token). */
    callbackToReview: Distribution;
    /** mcp.setup.confirm until its answer (publish and connect). */
    confirm: Distribution;
  };
  /** The gateway's part: total minus the browser. */
  gatewayMs: Distribution;
  runtimeStatuses: Record<string, number>;
}

export interface ListRun {
  /** One client on one keep-alive connection, request after request. */
  tight: LoadResult;
  quiet: boolean;
  handler: HandlerTimes | null;
}

export interface ListResult {
  connections: number;
  setup: {
    how: string;
    seconds: number;
    perConnectionMs: Distribution;
    runtimeStatuses: Record<string, number>;
  };
  responseBytes: number;
  connected: ListRun & {
    statuses: Record<string, number>;
    concurrentClients: number;
    concurrent: LoadResult;
  };
  disabled: ListRun & { statuses: Record<string, number> };
}

export interface SetupBenchResult {
  beginReview: BeginReviewResult | null;
  oauth: OAuthResult | null;
  list: ListResult | null;
}

export async function runSetupBenchmarks(options: SetupBenchOptions): Promise<SetupBenchResult> {
  const wanted = (name: SetupScenarioName) => options.only === undefined || options.only.includes(name);
  const result: SetupBenchResult = { beginReview: null, oauth: null, list: null };
  if (wanted("setup-begin-review")) result.beginReview = await benchBeginReview(options);
  if (wanted("setup-oauth")) result.oauth = await benchOAuth(options);
  if (wanted("connections-list-100")) result.list = await benchList(options);
  return result;
}

/** Waits for a quiet machine (see quiet.ts) and says whether it got one. */
async function quietly(options: SetupBenchOptions, label: string): Promise<boolean> {
  const quiet = await waitForQuiet(options.quietWaitMs ?? 0);
  if ((options.quietWaitMs ?? 0) > 0)
    options.say(`${label}: ${quiet ? "machine quiet" : "machine NOT quiet"}`);
  return quiet;
}

async function withGateway<T>(
  options: SetupBenchOptions,
  label: string,
  run: (gateway: SetupGateway, client: OwnerClient) => Promise<T>,
): Promise<T> {
  const gateway = await options.startGateway(label);
  const client = ownerClient(gateway.child.url, gateway.token);
  try {
    return await run(gateway, client);
  } finally {
    client.close();
    await gateway.child.stop();
  }
}

async function benchBeginReview(options: SetupBenchOptions): Promise<BeginReviewResult> {
  const plain = await startPlainServer();
  try {
    return await withGateway(options, "gateway-setup", async (_gateway, client) => {
      const warmupRuns = 5;
      const runs = Math.max(50, Math.round(options.beginRuns));
      options.say(
        `setup-begin-review: ${warmupRuns} warm-up + ${runs} runs of begin, then status every ${POLL_INTERVAL_MS} ms until review`,
      );
      const latencies: number[] = [];
      const begins: number[] = [];
      const cancels: number[] = [];
      const polls: number[] = [];
      let quiet = false;
      for (let i = 0; i < warmupRuns + runs; i += 1) {
        if (i === warmupRuns) quiet = await quietly(options, "setup-begin-review");
        const start = performance.now();
        const begun = await client.result<OperationView>("mcp.setup.begin", {
          name: `bench-review-${i}`,
          requestId: freshRequestId("review"),
          config: { url: plain.url },
        });
        const begunAt = performance.now();
        const reviewed =
          begun.phase === "review"
            ? { operation: begun, polls: 0 }
            : await pollUntil(client, begun.id, ["review"], POLL_INTERVAL_MS);
        const reviewAt = performance.now();
        await client.result("mcp.setup.cancel", { id: begun.id });
        if (i < warmupRuns) continue;
        latencies.push(reviewAt - start);
        begins.push(begunAt - start);
        cancels.push(performance.now() - reviewAt);
        polls.push(reviewed.polls);
      }
      const result: BeginReviewResult = {
        warmupRuns,
        quiet,
        pollIntervalMs: POLL_INTERVAL_MS,
        latencyMs: distribution(latencies),
        beginMs: distribution(begins),
        polls: {
          mean: round(polls.reduce((sum, n) => sum + n, 0) / polls.length, 2),
          max: Math.max(...polls),
        },
        cancelMs: distribution(cancels),
      };
      options.say(
        `setup-begin-review: p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms ` +
          `(begin alone p50 ${result.beginMs.p50} ms; ${result.polls.mean} polls per run)`,
      );
      return result;
    });
  } finally {
    await plain.close();
  }
}

async function benchOAuth(options: SetupBenchOptions): Promise<OAuthResult> {
  const server = await startOAuthServer();
  try {
    return await withGateway(options, "gateway-oauth", async (_gateway, client) => {
      const warmupRuns = 1;
      const runs = Math.max(10, Math.round(options.oauthRuns));
      options.say(`setup-oauth: ${warmupRuns} warm-up + ${runs} full OAuth setups against the OAuth fixture`);
      const parts = {
        beginToAwaiting: [] as number[],
        browser: [] as number[],
        callback: [] as number[],
        callbackToReview: [] as number[],
        confirm: [] as number[],
      };
      const totals: number[] = [];
      const gatewayTimes: number[] = [];
      const runtimeStatuses: Record<string, number> = {};
      let quiet = false;
      for (let i = 0; i < warmupRuns + runs; i += 1) {
        if (i === warmupRuns) quiet = await quietly(options, "setup-oauth");
        const t0 = performance.now();
        const begun = await client.result<OperationView>("mcp.setup.begin", {
          name: `bench-oauth-${i}`,
          requestId: freshRequestId("oauth"),
          config: { url: server.url },
          redirectUri: `http://127.0.0.1:45678/mcp/oauth/callback/${randomBytes(16).toString("hex")}`,
        });
        const { operation: awaiting } = await pollUntil(
          client,
          begun.id,
          ["awaiting_authorization"],
          POLL_INTERVAL_MS,
        );
        const t1 = performance.now();
        const redirect = await followAuthorization(awaiting.authorizationUrl ?? "");
        const t2 = performance.now();
        const callback: Record<string, string> = { state: redirect.searchParams.get("state") ?? "" };
        for (const key of ["code", "iss"]) {
          const value = redirect.searchParams.get(key);
          if (value !== null) callback[key] = value;
        }
        await client.result("mcp.setup.callback", { id: begun.id, callback });
        const t3 = performance.now();
        await pollUntil(client, begun.id, ["review"], POLL_INTERVAL_MS);
        const t4 = performance.now();
        const done = await client.result<OperationView>("mcp.setup.confirm", {
          id: begun.id,
          permissions: { mode: "all" },
        });
        const t5 = performance.now();
        if (done.phase !== "complete" || !done.saved) {
          throw new Error(`OAuth setup ${i} ended ${done.phase}: ${JSON.stringify(done.error)}`);
        }
        if (i < warmupRuns) continue;
        const status = done.runtime?.status ?? "none";
        runtimeStatuses[status] = (runtimeStatuses[status] ?? 0) + 1;
        parts.beginToAwaiting.push(t1 - t0);
        parts.browser.push(t2 - t1);
        parts.callback.push(t3 - t2);
        parts.callbackToReview.push(t4 - t3);
        parts.confirm.push(t5 - t4);
        totals.push(t5 - t0);
        gatewayTimes.push(t5 - t0 - (t2 - t1));
      }
      const result: OAuthResult = {
        warmupRuns,
        quiet,
        totalMs: distribution(totals),
        partsMs: {
          beginToAwaiting: distribution(parts.beginToAwaiting),
          browser: distribution(parts.browser),
          callback: distribution(parts.callback),
          callbackToReview: distribution(parts.callbackToReview),
          confirm: distribution(parts.confirm),
        },
        gatewayMs: distribution(gatewayTimes),
        runtimeStatuses,
      };
      options.say(
        `setup-oauth: p50 ${result.totalMs.p50} ms, p99 ${result.totalMs.p99} ms ` +
          `(gateway's part p50 ${result.gatewayMs.p50} ms; statuses ${JSON.stringify(runtimeStatuses)})`,
      );
      return result;
    });
  } finally {
    await server.close();
  }
}

async function benchList(options: SetupBenchOptions): Promise<ListResult> {
  const plain = await startPlainServer();
  try {
    return await withGateway(options, "gateway-list", async (gateway, client) => {
      options.say(
        `connections-list-100: configuring ${LIST_CONNECTIONS} connections (begin, review, confirm)`,
      );
      const names = Array.from({ length: LIST_CONNECTIONS }, (_, i) => `list-${String(i).padStart(3, "0")}`);
      const perConnection: number[] = [];
      const runtimeStatuses: Record<string, number> = {};
      const setupStart = performance.now();
      const setUp = async (name: string) => {
        const start = performance.now();
        const begun = await client.result<OperationView>("mcp.setup.begin", {
          name,
          requestId: freshRequestId("list"),
          config: { url: plain.url },
        });
        await pollUntil(client, begun.id, ["review"], 5);
        const done = await client.result<OperationView>("mcp.setup.confirm", {
          id: begun.id,
          permissions: { mode: "all" },
        });
        if (!done.saved) throw new Error(`${name}: confirm did not save: ${JSON.stringify(done.error)}`);
        const status = done.runtime?.status ?? "none";
        runtimeStatuses[status] = (runtimeStatuses[status] ?? 0) + 1;
        perConnection.push(performance.now() - start);
      };
      for (let i = 0; i < names.length; i += SETUP_BATCH) {
        await Promise.all(names.slice(i, i + SETUP_BATCH).map(setUp));
      }
      const setupSeconds = round((performance.now() - setupStart) / 1000, 2);
      options.say(
        `connections-list-100: configured in ${setupSeconds} s (${JSON.stringify(runtimeStatuses)})`,
      );

      const request: LoadRequest = {
        url: `${gateway.child.url}${MANAGE_PATH}`,
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${gateway.token}` },
        body: JSON.stringify({ method: "mcp.connections.list", params: {} }),
      };
      const listed = await client.call<{ connections: Array<{ name: string; status: string }> }>(
        "mcp.connections.list",
        {},
      );
      const connectedStatuses = countStatuses(listed.result?.connections ?? []);
      if ((listed.result?.connections.length ?? 0) !== LIST_CONNECTIONS) {
        throw new Error(`mcp.connections.list lists ${listed.result?.connections.length} connections`);
      }
      const responseBytes = Buffer.byteLength(listed.text);
      const load = async (connections: number, label: string) => {
        options.say(
          `connections-list-100 (${label}): warm-up ${options.warmupSeconds} s, then ${options.seconds} s x ${connections} connection(s)`,
        );
        const quiet = await quietly(options, `connections-list-100 (${label})`);
        await runLoad(request, { connections, seconds: options.warmupSeconds, serverPid: gateway.child.pid });
        await sleep(200);
        const from = logSize(gateway.log);
        const measured = await runLoad(request, {
          connections,
          seconds: options.seconds,
          serverPid: gateway.child.pid,
        });
        await sleep(300); // pino writes asynchronously
        const handler = handlerTimes(gateway.log, from, logSize(gateway.log));
        options.say(
          `connections-list-100 (${label}): ${measured.reqPerSecMean} req/s, p50 ${measured.latencyMs.p50} ms, ` +
            `p99 ${measured.latencyMs.p99} ms, statuses ${JSON.stringify(measured.statusCodes)}`,
        );
        return { measured, handler, quiet };
      };
      const tight = await load(1, "connected, 1 client");
      const concurrent = await load(options.connections, `connected, ${options.connections} clients`);

      options.say(`connections-list-100: disabling all ${LIST_CONNECTIONS}`);
      for (const name of names) {
        const done = await client.result<OperationView>("mcp.connections.action", {
          name,
          requestId: freshRequestId("disable"),
          action: "disable",
        });
        if (done.phase !== "complete") throw new Error(`disable ${name}: ${JSON.stringify(done.error)}`);
      }
      const relisted = await client.result<{ connections: Array<{ name: string; status: string }> }>(
        "mcp.connections.list",
        {},
      );
      const disabledTight = await load(1, "disabled, 1 client");
      return {
        connections: LIST_CONNECTIONS,
        setup: {
          how: `for real, in parallel batches of ${SETUP_BATCH}: begin, status every 5 ms until review, confirm {mode: all}; all against one plain fixture; measured connected, then again all disabled`,
          seconds: setupSeconds,
          perConnectionMs: distribution(perConnection),
          runtimeStatuses,
        },
        responseBytes,
        connected: {
          statuses: connectedStatuses,
          tight: tight.measured,
          handler: tight.handler,
          quiet: tight.quiet,
          concurrentClients: options.connections,
          concurrent: concurrent.measured,
        },
        disabled: {
          statuses: countStatuses(relisted.connections),
          tight: disabledTight.measured,
          handler: disabledTight.handler,
          quiet: disabledTight.quiet,
        },
      };
    });
  } finally {
    await plain.close();
  }
}

function countStatuses(connections: ReadonlyArray<{ status: string }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status } of connections) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

function allOk(result: LoadResult): boolean {
  const codes = Object.keys(result.statusCodes);
  return result.responses > 0 && codes.length === 1 && codes[0] === "200";
}

export function setupTargets(result: SetupBenchResult | null): Target[] {
  const targets: Target[] = [];
  if (result?.beginReview != null) {
    const { latencyMs } = result.beginReview;
    targets.push({
      name: `setup begin -> review p50 < ${BEGIN_REVIEW_P50_TARGET_MS} ms (plain fixture, status every ${POLL_INTERVAL_MS} ms)`,
      pass: latencyMs.p50 < BEGIN_REVIEW_P50_TARGET_MS,
      detail: `p50 ${latencyMs.p50} ms, p99 ${latencyMs.p99} ms over ${latencyMs.runs} runs`,
    });
  }
  if (result?.list != null) {
    const { tight } = result.list.connected;
    const ok = allOk(tight);
    targets.push({
      name: `mcp.connections.list with ${result.list.connections} connected p99 < ${LIST_P99_TARGET_MS} ms (1 client, keep-alive)`,
      pass: ok && tight.latencyMs.p99 < LIST_P99_TARGET_MS,
      detail: `p50 ${tight.latencyMs.p50} ms, p99 ${tight.latencyMs.p99} ms over ${tight.responses} requests${ok ? "" : " (but not every response was 200)"}`,
    });
  }
  return targets;
}

export function printSetup(result: SetupBenchResult, say: (line: string) => void): void {
  const d = (dist: Distribution) => `p50 ${dist.p50} / p90 ${dist.p90} / p99 ${dist.p99} ms (n ${dist.runs})`;
  say("");
  if (result.beginReview !== null) {
    const r = result.beginReview;
    say(`setup-begin-review: begin -> review ${d(r.latencyMs)}; max ${r.latencyMs.max} ms`);
    say(
      `setup-begin-review: begin alone ${d(r.beginMs)}; ${r.polls.mean} status polls per run (max ${r.polls.max}); ` +
        `cancel ${d(r.cancelMs)}`,
    );
  }
  if (result.oauth !== null) {
    const o = result.oauth;
    say(`setup-oauth: total ${d(o.totalMs)}; gateway's part (total - browser) ${d(o.gatewayMs)}`);
    for (const [part, dist] of Object.entries(o.partsMs)) say(`setup-oauth:   ${part.padEnd(17)} ${d(dist)}`);
    say(`setup-oauth: confirm runtime statuses ${JSON.stringify(o.runtimeStatuses)}`);
  }
  if (result.list !== null) {
    const l = result.list;
    const line = (label: string, run: LoadResult, handler: HandlerTimes | null) =>
      say(
        `connections-list-${l.connections} ${label}: ${run.reqPerSecMean} req/s, p50 ${run.latencyMs.p50} / p90 ${run.latencyMs.p90} / p99 ${run.latencyMs.p99} / max ${run.latencyMs.max} ms${
          handler === null
            ? ""
            : `; in-handler p50 ${handler.durationMs.p50} / p99 ${handler.durationMs.p99} ms`
        }; cpu gateway ${run.cpu.serverPercent}%, other ${run.cpu.otherPercent}%`,
      );
    say(
      `connections-list-${l.connections}: set up ${l.setup.how}; ${l.setup.seconds} s, ${d(l.setup.perConnectionMs)} per ` +
        `connection; response ${l.responseBytes} bytes`,
    );
    say(
      `connections-list-${l.connections}: statuses connected run ${JSON.stringify(l.connected.statuses)}, ` +
        `disabled run ${JSON.stringify(l.disabled.statuses)}`,
    );
    line("connected, 1 client", l.connected.tight, l.connected.handler);
    line(`connected, ${l.connected.concurrentClients} clients`, l.connected.concurrent, null);
    line("disabled, 1 client", l.disabled.tight, l.disabled.handler);
  }
}
