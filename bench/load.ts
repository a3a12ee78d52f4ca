/**
 * One load run with autocannon's programmatic API, in the bench process. Besides autocannon's own figures
 * it keeps every response's time (autocannon's histogram has 1 ms resolution, too coarse for a loopback
 * baseline) and status, and the CPU time the client and the server used during the run.
 */
import { Agent, request } from "node:http";
import autocannon from "autocannon";
import { readProcCpuMs, readSystemBusyMs } from "./children.js";

export interface LoadRequest {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: Buffer | string | undefined;
  /** Every response body must equal this; those that do not are counted in `mismatches`. */
  expectBody?: string | undefined;
}

export interface LoadOptions {
  connections: number;
  seconds: number;
  /** pid of the server, to measure its CPU time during the run. */
  serverPid: number;
}

export interface LoadResult {
  durationSeconds: number;
  /** autocannon's mean of per-second request counts. */
  reqPerSecMean: number;
  /** Responses divided by the run's wall time (a cross-check of the mean). */
  reqPerSecOverall: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** autocannon's own (integer ms) percentiles. */
  autocannonLatencyMs: { p50: number; p99: number };
  responses: number;
  requestsSent: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  mismatches: number;
  statusCodes: Record<string, number>;
  /** Responses that announced `Connection: close` (each made the client reconnect). */
  connectionCloseResponses: number;
  /**
   * CPU used during the run, in % of one core: this process (the client), the server, and everything else
   * on the machine (other processes, kernel work not charged to either). A high `otherPercent` means the
   * run was disturbed and its figures are not trustworthy.
   */
  cpu: {
    clientPercent: number;
    serverPercent: number;
    /** The server's main thread alone (its event loop: HTTP, the route, dispatching to workers). */
    serverMainThreadPercent: number;
    /** CPU time per response, in µs: the whole server, and its main thread (less noisy than req/s). */
    serverUsPerResponse: number;
    serverMainThreadUsPerResponse: number;
    otherPercent: number;
  };
}

/** The autocannon internals the close-aware patch touches (autocannon 8, lib/httpClient.js). */
interface ClientInternals {
  conn: unknown;
  _doRequest: () => void;
  on(event: "headers", listener: (info: { shouldKeepAlive?: boolean }) => void): unknown;
}

/**
 * autocannon answers every response by writing the next request on the same socket, even when the
 * response said `Connection: close`. That request is orphaned: the server never answers it, it stays at
 * the head of the client's queue, and every later response on the new socket is matched with an older
 * request, so latencies grow without bound (measured: p50 ~1 s for a 413 served in a few ms, and twice as
 * many requests sent as answered). With this patch a client sends nothing more on a socket whose last
 * response announced close; autocannon reconnects on the server's FIN (its 'end' handler) and sends the
 * next request on the fresh socket, so each latency includes the new connection's setup.
 */
function closeAware(client: autocannon.Client, counter: { closeResponses: number }): void {
  const internals = client as unknown as ClientInternals;
  let closingConn: unknown = null;
  internals.on("headers", (info) => {
    if (info.shouldKeepAlive === false) {
      closingConn = internals.conn;
      counter.closeResponses++;
    }
  });
  const doRequest = internals._doRequest.bind(client);
  internals._doRequest = () => {
    if (closingConn !== null && internals.conn === closingConn) return;
    doRequest();
  };
}

export async function runLoad(req: LoadRequest, options: LoadOptions): Promise<LoadResult> {
  const times: number[] = [];
  const statusCodes: Record<string, number> = {};
  const counter = { closeResponses: 0 };
  const cpuStart = process.cpuUsage();
  const serverCpuStart = readProcCpuMs(options.serverPid);
  const serverMainStart = readProcCpuMs(options.serverPid, options.serverPid);
  const systemStart = readSystemBusyMs();
  const wallStart = process.hrtime.bigint();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: req.url,
        method: req.method,
        headers: req.headers,
        body: req.body,
        ...(req.expectBody === undefined ? {} : { expectBody: req.expectBody }),
        connections: options.connections,
        duration: options.seconds,
        pipelining: 1,
        timeout: 10,
        setupClient: (client) => closeAware(client, counter),
      },
      (error: unknown, done: autocannon.Result) => (error ? reject(error as Error) : resolve(done)),
    );
    instance.on("response", (_client: unknown, status: number, _bytes: number, responseTime: number) => {
      times.push(responseTime);
      statusCodes[status] = (statusCodes[status] ?? 0) + 1;
    });
  });
  const wallMs = Number(process.hrtime.bigint() - wallStart) / 1e6;
  const cpu = process.cpuUsage(cpuStart);
  const serverCpuMs = readProcCpuMs(options.serverPid) - serverCpuStart;
  const serverMainMs = readProcCpuMs(options.serverPid, options.serverPid) - serverMainStart;
  const clientCpuMs = (cpu.user + cpu.system) / 1000;
  const otherCpuMs = readSystemBusyMs() - systemStart - serverCpuMs - clientCpuMs;
  times.sort((a, b) => a - b);
  return {
    durationSeconds: result.duration,
    reqPerSecMean: result.requests.mean,
    reqPerSecOverall: round((times.length * 1000) / wallMs, 1),
    latencyMs: {
      p50: round(percentile(times, 50), 3),
      p90: round(percentile(times, 90), 3),
      p99: round(percentile(times, 99), 3),
      max: round(times[times.length - 1] ?? 0, 3),
      mean: round(times.reduce((sum, time) => sum + time, 0) / Math.max(1, times.length), 3),
    },
    autocannonLatencyMs: { p50: result.latency.p50, p99: result.latency.p99 },
    responses: result.requests.total,
    requestsSent: result.requests.sent,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    mismatches: result.mismatches,
    statusCodes,
    connectionCloseResponses: counter.closeResponses,
    cpu: {
      clientPercent: round((clientCpuMs / wallMs) * 100, 1),
      serverPercent: round((serverCpuMs / wallMs) * 100, 1),
      serverMainThreadPercent: round((serverMainMs / wallMs) * 100, 1),
      serverUsPerResponse: round((serverCpuMs * 1000) / Math.max(1, times.length), 1),
      serverMainThreadUsPerResponse: round((serverMainMs * 1000) / Math.max(1, times.length), 1),
      otherPercent: round((Math.max(0, otherCpuMs) / wallMs) * 100, 1),
    },
  };
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? 0;
}

export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export interface ProbeResult {
  status: number;
  connection: string | undefined;
  body: string;
}

/** One request with node:http (its own connection) to check what a scenario's request is answered. */
export function probe(req: LoadRequest): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    // A keep-alive agent, so that the Connection header of the answer is the server's choice.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const outgoing = request(req.url, { method: req.method, headers: req.headers, agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (text: string) => {
        if (body.length < 2_000) body += text;
      });
      res.on("end", () => {
        agent.destroy();
        resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body });
      });
      res.on("error", reject);
    });
    outgoing.setTimeout(10_000, () => outgoing.destroy(new Error("probe timed out")));
    // The server may answer and close before reading a large body: that is not a failure of the probe,
    // unless the connection ends without an answer.
    let answered = false;
    outgoing.once("response", () => {
      answered = true;
    });
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE" && error.code !== "ECONNRESET") reject(error);
    });
    outgoing.on("close", () => {
      if (!answered) {
        agent.destroy();
        reject(new Error(`probe of ${req.url}: the connection closed without a response`));
      }
    });
    outgoing.end(req.body);
  });
}
