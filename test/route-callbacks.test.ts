import { once } from "node:events";
import { type Server, createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { expect } from "chai";
import type { LocalCall } from "../host-shim/dispatch.js";
import { jsonResultFrame } from "../host-shim/framing.js";
import { MANAGE_PATH, type RouteHost, createManageHandler } from "../host-shim/manage-route.js";
import type { MethodRun } from "../host-shim/pool.js";
import { UNAVAILABLE_MESSAGE } from "../plugin/errors.js";

const TOKEN = "route-callbacks-token-0123456789";

/**
 * The route runs on callbacks from the body on: whatever a step throws must still become an answer (or,
 * once an answer is written, leave it alone), and the route must keep serving. The route is the real
 * handler on a real node:http server; only the method call behind it is chosen per test.
 */
describe("owner route: faults inside its callbacks", () => {
  let server: Server;
  let url: string;
  let lines: Record<string, unknown>[];
  let call: LocalCall;
  let logThrows: number;

  const host: RouteHost = {
    getGatewayToken: () => TOKEN,
    logger: {
      info(fields) {
        lines.push(fields);
        if (logThrows > 0) {
          logThrows -= 1;
          throw new Error("log destination failed");
        }
      },
      warn: () => undefined,
      error: () => undefined,
    },
  };

  before(async () => {
    const handler = createManageHandler(host, (method, params, done) => call(method, params, done));
    server = createServer((req, res) => handler(req, res)).listen(0, "127.0.0.1");
    await once(server, "listening");
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${MANAGE_PATH}`;
  });
  after(() => server.close());
  beforeEach(() => {
    lines = [];
    logThrows = 0;
    call = (_method, _params, done) => setImmediate(() => done(answer({ ok: 1 })));
  });

  function answer(result: unknown): MethodRun {
    return { frame: jsonResultFrame(JSON.stringify(result)), fault: null };
  }

  async function post(body: unknown) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as unknown };
  }

  it("answers a call that completes in the same tick", async () => {
    call = (_method, _params, done) => done(answer({ same: "tick" }));
    expect(await post({ method: "mcp.capabilities" })).to.deep.equal({
      status: 200,
      json: { result: { same: "tick" } },
    });
  });

  it("turns a call that throws into 503 UNAVAILABLE, logged as a crash of that method, then serves again", async () => {
    call = () => {
      throw new Error("secret detail that must not reach the client");
    };
    const failed = await post({ method: "mcp.connections.list" });
    expect(failed.status).to.equal(503);
    expect(failed.json).to.deep.equal({ error: { code: "UNAVAILABLE", message: UNAVAILABLE_MESSAGE } });
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include({ method: "mcp.connections.list", status: 503, fault: "crash" });
    call = (_method, _params, done) => done(answer([]));
    expect((await post({ method: "mcp.connections.list" })).status).to.equal(200);
  });

  it("leaves a written answer alone when what follows it throws, and keeps serving", async () => {
    logThrows = 2;
    expect(await post({ method: "mcp.capabilities" })).to.deep.equal({
      status: 200,
      json: { result: { ok: 1 } },
    });
    expect(logThrows).to.equal(0);
    expect(await post({ method: "mcp.capabilities" })).to.deep.equal({
      status: 200,
      json: { result: { ok: 1 } },
    });
  });

  it("answers an upload cut short (the client hangs up mid-body) without a call, and keeps serving", async () => {
    let calls = 0;
    call = (_method, _params, done) => {
      calls += 1;
      done(answer({ ok: 1 }));
    };
    const { port } = server.address() as AddressInfo;
    const socket = connect(port, "127.0.0.1");
    await once(socket, "connect");
    socket.write(
      `POST ${MANAGE_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
        `Authorization: Bearer ${TOKEN}\r\nContent-Length: 100\r\n\r\n{"method":`,
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    socket.destroy();
    for (let waited = 0; lines.length === 0 && waited < 2000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(lines).to.have.length(1);
    expect(lines[0]).to.deep.include({ status: 400 });
    expect(lines[0]).not.to.have.property("method");
    expect(calls).to.equal(0);
    expect((await post({ method: "mcp.capabilities" })).status).to.equal(200);
  });

  it("logs only the fields that have a value: no profile for the root, no fault, no method when none was reached", async () => {
    await post({ method: "mcp.capabilities" });
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).to.equal(401);
    expect(lines).to.have.length(2);
    expect(Object.keys(lines[0] ?? {}).sort()).to.deep.equal(["durationMs", "method", "status"]);
    expect(lines[0]).to.include({ method: "mcp.capabilities", status: 200 });
    expect(Object.keys(lines[1] ?? {}).sort()).to.deep.equal(["durationMs", "status"]);
    expect(lines[1]).to.include({ status: 401 });
  });
});
