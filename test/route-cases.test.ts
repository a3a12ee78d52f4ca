import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request as httpRequest,
} from "node:http";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ERROR_TABLE, type ErrorCode } from "../plugin/errors.js";
import { METHOD_NAMES } from "../plugin/method-names.js";
import {
  CaseFileError,
  GATEWAY_NAMES,
  type GatewayName,
  type RequestCase,
  type Target,
  type Transport,
  expandRequest,
  loadCases,
  partialMismatch,
} from "./helpers/cases.js";
import {
  TEST_TOKEN,
  type TestGateway,
  type TestGatewayOptions,
  startTestGateway,
} from "./helpers/gateway.js";

const CASES_DIR = fileURLToPath(new URL("../../fixtures/requests/", import.meta.url));
const MANAGE_PATH = "/api/mcp/manage";

/**
 * Which codes of ERROR_TABLE the route itself produces. A code with a status of its own (not 400) is a
 * route code; of the 400 codes, the route answers these itself (content type, JSON, envelope, allowlist).
 * Every other 400 code is a method's own answer, covered by that method's tests.
 */
const ROUTE_400_CODES: readonly ErrorCode[] = ["INVALID_PARAMS", "UNKNOWN_METHOD"];
/** Route codes that no request of a test can provoke; none today. */
const ROUTE_CANNOT_PRODUCE: readonly ErrorCode[] = [];

const cases = loadCases(CASES_DIR);

/**
 * The "external" gateway listens on loopback like every test server, but its sockets report a
 * documentation address as their peer (a socket seam): the real handler sees a non-loopback peer.
 */
const REMOTE_PEER = "203.0.113.9";

function presentRemotePeer(gw: TestGateway): void {
  const event = gw.ca === undefined ? "connection" : "secureConnection";
  gw.gateway.httpServer.prependListener(event, (socket: import("node:net").Socket) =>
    Object.defineProperty(socket, "remoteAddress", { value: REMOTE_PEER, configurable: true }),
  );
}

const POOL = { pool: { minThreads: 1, maxThreads: 1 } };

/** Each configuration a case may name. A string is why this machine cannot offer it (its cases are skipped). */
function gatewayOptions(name: GatewayName): TestGatewayOptions | string {
  switch (name) {
    case "plain":
      return { pluginOptions: POOL };
    case "profiles":
      return { profiles: ["a", "b"], pluginOptions: POOL };
    case "allowed":
      return { allowedHosts: ["gateway.example"], pluginOptions: POOL };
    case "ipv6":
      return { host: "::1", pluginOptions: POOL };
    case "mapped":
      // An IPv6 socket bound to the IPv4-mapped loopback address: IPv4 peers arrive as ::ffff:127.0.0.1.
      return { host: "::ffff:127.0.0.1", pluginOptions: POOL };
    case "external":
      return { pluginOptions: POOL };
  }
}

/** Listen failures that mean "this machine has no such address", not a bug. */
const UNAVAILABLE_ADDRESS = new Set(["EADDRNOTAVAIL", "EAFNOSUPPORT", "EINVAL"]);

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One raw HTTP(S) exchange. Unlike test/helpers/http.ts `send`, it pins TLS to the certificate's name
 * (`servername: "localhost"`) so a case may send any Host header over TLS (send derives SNI and the
 * certificate check from the Host header). Bodies are bytes; a reply that arrives while the upload is
 * still being written counts, and write errors after it are ignored.
 */
function exchange(
  gw: TestGateway,
  transport: Transport,
  request: {
    method: string;
    path: string;
    headers: Record<string, string | string[]>;
    body: Buffer | undefined;
    chunked: number | undefined;
  },
): Promise<Reply> {
  const url = new URL(gw.url);
  const headers: OutgoingHttpHeaders = { ...request.headers };
  if (request.chunked !== undefined) headers["transfer-encoding"] = "chunked";
  else if (request.body !== undefined && headers["content-length"] === undefined)
    headers["content-length"] = request.body.length;
  const options = {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: Number(url.port),
    path: request.path,
    method: request.method,
    headers,
    agent: false as const,
    timeout: 15_000,
  };
  return new Promise<Reply>((resolve, reject) => {
    let replied = false;
    const onResponse = (res: IncomingMessage) => {
      replied = true;
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("aborted", () => reject(new Error("the response was cut short")));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    };
    const req =
      transport === "tls"
        ? httpsRequest({ ...options, ca: gw.ca, servername: "localhost" }, onResponse)
        : httpRequest(options, onResponse);
    req.on("error", (error) => {
      if (!replied) reject(error);
    });
    req.on("timeout", () => req.destroy(new Error("no reply within 15 s")));
    const { body, chunked } = request;
    if (body === undefined) {
      req.end();
    } else if (chunked !== undefined) {
      for (let offset = 0; offset < body.length; offset += chunked)
        req.write(body.subarray(offset, offset + chunked));
      req.end();
    } else {
      req.end(body);
    }
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Every assertion of one replayed case. */
function check(requestCase: RequestCase, reply: Reply): void {
  const { expect } = requestCase;
  const body = parseJson(reply.text);
  const context = `${requestCase.file} "${requestCase.name}": ${reply.status} ${reply.text.slice(0, 300)}`;

  assert.equal(reply.status, expect.status, `status; ${context}`);
  const cors = Object.keys(reply.headers).filter((name) => name.startsWith("access-control-"));
  assert.deepEqual(cors, [], `no access-control-* header; ${context}`);
  for (const [name, value] of Object.entries(expect.headers)) {
    const actual = reply.headers[name];
    if (value === null) assert.equal(actual, undefined, `header ${name} must be absent; ${context}`);
    else
      assert.equal(Array.isArray(actual) ? actual.join(", ") : actual, value, `header ${name}; ${context}`);
  }

  const routeFrame =
    isObject(body) && ("result" in body || (isObject(body.error) && typeof body.error.code === "string"));
  if (!expect.route) {
    assert.ok(
      !routeFrame,
      `a path that is not the owner route must not answer with a route frame; ${context}`,
    );
    assert.notEqual(reply.headers["cache-control"], "no-store", `not the route's framing; ${context}`);
    return;
  }

  assert.equal(reply.headers["cache-control"], "no-store", `Cache-Control; ${context}`);
  assert.match(
    String(reply.headers["content-type"]),
    /^application\/json\s*(;|$)/i,
    `Content-Type; ${context}`,
  );
  assert.ok(isObject(body), `the body is a JSON object; ${context}`);
  if (expect.code !== undefined) {
    assert.deepEqual(Object.keys(body), ["error"], `an error body has only "error"; ${context}`);
    const error = body.error;
    assert.ok(isObject(error), `error is an object; ${context}`);
    assert.deepEqual(
      Object.keys(error).sort(),
      ["code", "message"],
      `error has code and message only; ${context}`,
    );
    assert.equal(error.code, expect.code, `error code; ${context}`);
    assert.ok(typeof error.message === "string" && error.message.length > 0, `error message; ${context}`);
  } else {
    assert.deepEqual(Object.keys(body), ["result"], `a success body has only "result"; ${context}`);
    if (expect.result !== undefined) {
      const mismatch = partialMismatch(body.result, expect.result);
      assert.equal(mismatch, null, `result; ${context}`);
    }
  }
}

function targetOf(gw: TestGateway, transport: Transport): Target {
  const url = new URL(gw.url);
  return { token: gw.token, host: url.host, port: url.port, scheme: transport === "tls" ? "https" : "http" };
}

describe("owner route: request cases replayed from fixtures/requests", function () {
  this.timeout(30_000);

  const gateways = new Map<string, TestGateway | string>();
  const keyOf = (name: GatewayName, transport: Transport) => `${name}/${transport}`;

  before(async () => {
    const needed = new Map<string, { name: GatewayName; transport: Transport }>();
    for (const requestCase of cases) {
      for (const transport of requestCase.transports) {
        needed.set(keyOf(requestCase.gateway, transport), { name: requestCase.gateway, transport });
      }
    }
    const failures: unknown[] = [];
    await Promise.all(
      [...needed].map(async ([key, { name, transport }]) => {
        const options = gatewayOptions(name);
        if (typeof options === "string") {
          gateways.set(key, options);
          return;
        }
        try {
          const gw = await startTestGateway({ ...options, tls: transport === "tls" });
          if (name === "external") presentRemotePeer(gw);
          gateways.set(key, gw);
        } catch (error) {
          const code = (error as { code?: unknown }).code;
          const optional = name === "ipv6" || name === "mapped" || name === "external";
          if (optional && typeof code === "string" && UNAVAILABLE_ADDRESS.has(code))
            gateways.set(key, `cannot listen (${code})`);
          else failures.push(error);
        }
      }),
    );
    if (failures.length > 0) throw failures[0];
    // The address-bound configurations must really be what their cases rely on.
    for (const [key, gw] of gateways) {
      if (typeof gw === "string") continue;
      const host = new URL(gw.url).hostname;
      if (key.startsWith("mapped/"))
        assert.match(host, /^\[::ffff:/, `${key} listens on an IPv4-mapped address`);
      if (key.startsWith("ipv6/")) assert.equal(host, "[::1]", `${key} listens on ::1`);
    }
  });

  after(async () => {
    await Promise.all([...gateways.values()].map((gw) => (typeof gw === "string" ? undefined : gw.close())));
  });

  for (const requestCase of cases) {
    for (const transport of requestCase.transports) {
      it(`${requestCase.name} [${transport}]`, async function () {
        const gw = gateways.get(keyOf(requestCase.gateway, transport));
        assert.ok(gw !== undefined, "gateway was started");
        if (typeof gw === "string") this.skip();
        const { path, headers } = expandRequest(requestCase, targetOf(gw, transport));
        const reply = await exchange(gw, transport, {
          method: requestCase.method,
          path,
          headers,
          body: requestCase.body,
          chunked: requestCase.chunked,
        });
        check(requestCase, reply);
      });
    }
  }

  it("no gateway log line carries the token or an Authorization value", () => {
    let lines = 0;
    for (const gw of gateways.values()) {
      if (typeof gw === "string") continue;
      lines += gw.logs.length;
      for (const line of gw.logs) {
        assert.ok(!line.includes(TEST_TOKEN), `a log line holds the token: ${line}`);
        assert.ok(!/bearer/i.test(line), `a log line holds an Authorization value: ${line}`);
      }
    }
    assert.ok(lines >= cases.length, `the route logged one line per request (${lines} lines)`);
  });
});

describe("owner route: request case coverage", () => {
  it("has at least 60 cases, and every route error code, allowlisted method and gateway is exercised", () => {
    assert.ok(cases.length >= 60, `only ${cases.length} cases`);

    const expectedCodes = new Set(cases.map((requestCase) => requestCase.expect.code));
    for (const code of ROUTE_400_CODES) assert.equal(ERROR_TABLE[code]?.status, 400, `${code} is a 400 code`);
    const producible = (Object.keys(ERROR_TABLE) as ErrorCode[]).filter(
      (code) =>
        (ERROR_TABLE[code].status !== 400 || ROUTE_400_CODES.includes(code)) &&
        !ROUTE_CANNOT_PRODUCE.includes(code),
    );
    const missing = producible.filter((code) => !expectedCodes.has(code));
    assert.deepEqual(missing, [], "error codes no case expects");

    for (const requestCase of cases) {
      const { code, status } = requestCase.expect;
      if (code === undefined) continue;
      assert.ok(Object.hasOwn(ERROR_TABLE, code), `${requestCase.name}: ${code} is not in ERROR_TABLE`);
      const own = ERROR_TABLE[code as ErrorCode].status;
      assert.ok(
        status === own || status === 400,
        `${requestCase.name}: ${code} with status ${status} (table: ${own})`,
      );
    }

    const reachedMethods = new Set<string>();
    for (const requestCase of cases) {
      const { status, code } = requestCase.expect;
      // A method's own params check answers INVALID_PARAMS from the worker; such cases say so in their name.
      const workerAnswered =
        status === 200 ||
        code === "UNAVAILABLE" ||
        (code === "INVALID_PARAMS" && requestCase.name.includes("reaches its worker"));
      if (requestCase.body === undefined || !workerAnswered) continue;
      const envelope = parseJson(requestCase.body.toString("utf8"));
      if (isObject(envelope) && typeof envelope.method === "string") reachedMethods.add(envelope.method);
    }
    const unreached = METHOD_NAMES.filter((method) => !reachedMethods.has(method));
    assert.deepEqual(unreached, [], "allowlisted methods no case sends to its worker");

    const usedGateways = new Set(cases.map((requestCase) => requestCase.gateway));
    assert.deepEqual(
      GATEWAY_NAMES.filter((name) => !usedGateways.has(name)),
      [],
      "gateway configurations no case uses",
    );
    assert.ok(
      cases.some(
        (requestCase) => requestCase.path.split("?")[0] !== MANAGE_PATH && !requestCase.expect.route,
      ),
      "a case proves another path is not the route",
    );
  });
});

describe("request case files: the loader", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "route-cases-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const valid = { name: "ok", json: { method: "mcp.capabilities" }, expect: { status: 200 } };

  async function rejects(content: unknown, pattern: RegExp): Promise<void> {
    await writeFile(
      join(dir, "broken-case.json"),
      typeof content === "string" ? content : JSON.stringify(content),
    );
    assert.throws(
      () => loadCases(dir),
      (error: unknown) =>
        error instanceof CaseFileError &&
        /broken-case\.json/.test(error.message) &&
        pattern.test(error.message),
    );
  }

  it("loads a valid case with its defaults and builds generated bodies", async () => {
    await writeFile(
      join(dir, "good.json"),
      JSON.stringify([
        valid,
        {
          name: "padded",
          pad: { json: { method: "mcp.capabilities" }, toBytes: 100 },
          chunked: 7,
          expect: { status: 200 },
        },
        {
          name: "filled",
          fill: { byte: "a", bytes: 5 },
          transport: "tls",
          expect: { status: 413, code: "TOO_LARGE" },
        },
      ]),
    );
    const [plain, padded, filled] = loadCases(dir);
    assert.equal(plain?.gateway, "plain");
    assert.deepEqual(plain?.transports, ["plain", "tls"]);
    assert.equal(plain?.path, MANAGE_PATH);
    assert.equal(plain?.body?.toString(), '{"method":"mcp.capabilities"}');
    assert.equal(padded?.body?.length, 100);
    assert.equal(padded?.body?.toString().trimEnd(), '{"method":"mcp.capabilities"}');
    assert.equal(padded?.chunked, 7);
    assert.equal(filled?.body?.toString(), "aaaaa");
    assert.deepEqual(filled?.transports, ["tls"]);
  });

  it("rejects an unknown field, naming the file and the field", async () => {
    await rejects([{ ...valid, expected: { status: 200 } }], /expected is not a known field/);
  });

  it("rejects a case without expect.status", async () => {
    await rejects([{ name: "x", json: {}, expect: {} }], /expect\.status/);
  });

  it("rejects two body forms in one case", async () => {
    await rejects([{ ...valid, text: "{}" }], /at most one body form/);
  });

  it("rejects an unknown gateway configuration", async () => {
    await rejects([{ ...valid, gateway: "staging" }], /gateway/);
  });

  it("rejects a padded body whose JSON is already longer than the target", async () => {
    await rejects(
      [{ name: "x", pad: { json: { method: "mcp.capabilities" }, toBytes: 10 }, expect: { status: 200 } }],
      /pad/,
    );
  });

  it("rejects a file that is not JSON, and a duplicate case name", async () => {
    await rejects("{ not json", /not valid JSON/);
    await writeFile(join(dir, "broken-case.json"), "[]");
    await writeFile(join(dir, "another.json"), JSON.stringify([valid]));
    await rm(join(dir, "broken-case.json"));
    await rejects([valid], /already used in another\.json/);
  });

  it("expands $TOKEN, $HOST, $PORT and $SCHEME, and refuses any other placeholder", async () => {
    await writeFile(
      join(dir, "placeholders.json"),
      JSON.stringify({
        name: "p",
        path: "/api/mcp/manage?t=$TOKEN",
        headers: { Origin: "$SCHEME://localhost:$PORT", Host: "$HOST", "X-List": ["$TOKEN", "x"] },
        expect: { status: 405 },
      }),
    );
    const [requestCase] = loadCases(dir);
    assert.ok(requestCase !== undefined);
    const target: Target = { token: "tok", host: "127.0.0.1:9", port: "9", scheme: "https" };
    assert.deepEqual(expandRequest(requestCase, target), {
      path: "/api/mcp/manage?t=tok",
      headers: { origin: "https://localhost:9", host: "127.0.0.1:9", "x-list": ["tok", "x"] },
    });
    assert.throws(
      () => expandRequest({ ...requestCase, headers: { origin: "$ORIGIN" } }, target),
      /unknown placeholder \$ORIGIN/,
    );
  });
});
