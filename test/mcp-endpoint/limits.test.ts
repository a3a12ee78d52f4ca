import { type ClientRequest, request } from "node:http";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "chai";
import { resolveLimits } from "../../host-shim/mcp-endpoint/limits.js";
import {
  type Harness,
  aborted,
  callMessage,
  connectClient,
  listMessage,
  requestLines,
  rpc,
  startEndpoint,
  textOf,
} from "./harness.js";
import { SECRET_A, SECRET_B } from "./registry-double.js";

/** A POST to /mcp with key A on its own socket, announcing `contentLength`; the test writes the body. */
function rawCall(h: Harness, contentLength: number): ClientRequest {
  const req = request({
    host: "127.0.0.1",
    port: Number(new URL(h.base).port),
    path: "/mcp",
    method: "POST",
    agent: false,
    headers: {
      authorization: `Bearer ${SECRET_A}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "content-length": contentLength,
    },
  });
  // The tests cut these connections off on purpose.
  req.on("error", () => undefined);
  return req;
}

describe("/mcp endpoint: limits and cancellation", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("65 concurrent requests over a lowered limit: the excess gets 429 at once, the rest complete", async () => {
    h = await startEndpoint({ limits: { maxConcurrentRequests: 16, maxInFlightPerKey: 100 } });
    const harness = h;
    const replies = Array.from({ length: 65 }, () => rpc(harness, SECRET_A, callMessage("slow")));
    // 16 slow calls hold every slot, so each of the other 49 is answered while they wait.
    await harness.registry.waitForSlow(16);
    const early = await waitForStatuses(replies, 429, 49);
    for (const reply of early) {
      expect((reply.json as { error: { data: { code: string } } }).error.data.code).to.equal("BUSY");
      expect(reply.headers["retry-after"]).to.equal("1");
    }
    harness.registry.releaseAll();
    const all = await Promise.all(replies);
    expect(all.filter((reply) => reply.status === 200).length).to.equal(16);
    expect(all.filter((reply) => reply.status === 429).length).to.equal(49);
    expect(harness.registry.slowCalls.length).to.equal(16);
    // Slots come back: the endpoint serves again.
    expect((await rpc(harness, SECRET_A, listMessage())).status).to.equal(200);
  });

  it("a key with maxInFlightPerKey calls running gets 429 for the next; other keys are unaffected", async () => {
    h = await startEndpoint({ limits: { maxInFlightPerKey: 2 } });
    const first = rpc(h, SECRET_A, callMessage("slow"));
    const second = rpc(h, SECRET_A, callMessage("slow"));
    await h.registry.waitForSlow(2);
    const message = callMessage("echo", { text: "third" });
    const third = await rpc(h, SECRET_A, message);
    expect(third.status).to.equal(429);
    const error = (third.json as { id: unknown; error: { message: string } }).error;
    expect(error.message).to.match(/already has 2 tool calls running/);
    expect((third.json as { id: unknown }).id).to.equal(message.id);
    // Listing is not a tool call, and key B has its own budget.
    expect((await rpc(h, SECRET_A, listMessage())).status).to.equal(200);
    expect((await rpc(h, SECRET_B, callMessage("echo", { text: "b" }))).status).to.equal(200);
    // Through the SDK client the refusal is an HTTP 429 error.
    const client = await connectClient(h.url, SECRET_A);
    let failure: unknown;
    try {
      await client.callTool({ name: "echo", arguments: { text: "x" } });
    } catch (caught) {
      failure = caught;
    }
    expect(failure).to.be.instanceOf(StreamableHTTPError);
    expect((failure as StreamableHTTPError).code).to.equal(429);
    h.registry.releaseAll();
    expect((await first).status).to.equal(200);
    expect((await second).status).to.equal(200);
    const again = await client.callTool({ name: "echo", arguments: { text: "again" } });
    expect(textOf(again)).to.equal("again");
    await client.close();
  });

  it("revoking the key during a slow call aborts its signal and ends the call with an error; the next request gets 401", async () => {
    h = await startEndpoint();
    const client = await connectClient(h.url, SECRET_A);
    const call = client.callTool({ name: "slow", arguments: {} });
    await h.registry.waitForSlow(1);
    const slow = h.registry.slowCalls[0];
    if (slow === undefined) throw new Error("no slow call");
    h.registry.revoke("key-a");
    const result = await call;
    expect(result.isError).to.equal(true);
    expect(textOf(result)).to.match(/revoked/);
    expect(slow.signal.aborted).to.equal(true);
    // Settled by the revocation, not by the slow tool's own timer.
    expect(slow.timerFired).to.equal(false);
    let failure: unknown;
    try {
      await client.listTools();
    } catch (caught) {
      failure = caught;
    }
    expect((failure as StreamableHTTPError).code).to.equal(401);
    await client.close().catch(() => undefined);
  });

  it("revocation ends the call even when the tool ignores its signal", async () => {
    h = await startEndpoint();
    const call = rpc(h, SECRET_A, callMessage("slow", { ignoreSignal: true }));
    await h.registry.waitForSlow(1);
    h.registry.revoke("key-a");
    const reply = await call;
    expect(reply.status).to.equal(200);
    const result = (reply.json as { result: { isError: boolean } }).result;
    expect(result.isError).to.equal(true);
    expect(textOf(result)).to.match(/revoked/);
    expect(h.registry.slowCalls[0]?.timerFired).to.equal(false);
    expect(h.registry.slowCalls[0]?.signal.aborted).to.equal(true);
  });

  it("a call past callTimeoutMs is aborted and answered with a timeout error", async () => {
    h = await startEndpoint({ limits: { callTimeoutMs: 200 } });
    const client = await connectClient(h.url, SECRET_A);
    const result = await client.callTool({ name: "slow", arguments: { ignoreSignal: true } });
    expect(result.isError).to.equal(true);
    expect(textOf(result)).to.match(/timed out after 200 ms/);
    expect(h.registry.slowCalls[0]?.signal.aborted).to.equal(true);
    expect(h.registry.slowCalls[0]?.timerFired).to.equal(false);
    await client.close();
  });

  it("a client that disconnects mid-call aborts the tool's signal, and is logged as 499", async () => {
    h = await startEndpoint();
    const body = JSON.stringify(callMessage("slow"));
    const req = rawCall(h, Buffer.byteLength(body));
    req.end(body);
    await h.registry.waitForSlow(1);
    const slow = h.registry.slowCalls[0];
    if (slow === undefined) throw new Error("no slow call");
    req.destroy();
    await aborted(slow.signal);
    expect(slow.timerFired).to.equal(false);
    const harness = h;
    await until(() => requestLines(harness).some((line) => line.status === 499));
    const line = requestLines(harness).find((entry) => entry.status === 499);
    expect(line).to.include({ keyId: "key-a", method: "tools/call" });
  });

  it("close() cancels running calls, refuses new requests with 503, and unsubscribes", async () => {
    h = await startEndpoint();
    const call = rpc(h, SECRET_A, callMessage("slow"));
    await h.registry.waitForSlow(1);
    expect(h.registry.listenerCount).to.equal(1);
    const closing = h.endpoint.close();
    const refused = await rpc(h, SECRET_A, listMessage());
    expect(refused.status).to.equal(503);
    const reply = await call;
    expect(textOf((reply.json as { result: unknown }).result)).to.match(/shutting down/);
    await closing;
    expect(h.registry.listenerCount).to.equal(0);
  });

  it("close() does not wait for a client that never finishes its upload", async () => {
    h = await startEndpoint();
    const req = rawCall(h, 1000);
    // The route's listener runs first; by the time this one runs the handler is reading the body.
    const arrived = new Promise((resolve) => h?.server.once("request", resolve));
    req.write('{"jsonrpc":"2.0",');
    await arrived;
    await h.endpoint.close();
    req.destroy();
  });
});

describe("/mcp endpoint: limit settings", () => {
  it("defaults are the documented ones and a bound must be a positive integer", () => {
    expect(resolveLimits()).to.deep.equal({
      maxConcurrentRequests: 64,
      maxInFlightPerKey: 8,
      maxBodyBytes: 1024 * 1024,
      maxArgumentBytes: 256 * 1024,
      maxResultBytes: 1024 * 1024,
      callTimeoutMs: 60_000,
    });
    expect(resolveLimits({ maxInFlightPerKey: 3 }).maxInFlightPerKey).to.equal(3);
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => resolveLimits({ callTimeoutMs: bad })).to.throw(RangeError);
    }
  });
});

/** Waits until `count` of the replies have settled with `status`; the rest may still be pending. */
async function waitForStatuses(
  replies: Array<Promise<{ status: number; json: unknown; headers: Record<string, unknown> }>>,
  status: number,
  count: number,
) {
  const seen: Array<{ status: number; json: unknown; headers: Record<string, unknown> }> = [];
  await new Promise<void>((resolve, reject) => {
    for (const reply of replies) {
      reply.then((value) => {
        if (value.status !== status) return;
        seen.push(value);
        if (seen.length === count) resolve();
      }, reject);
    }
  });
  return seen;
}

/** Polls a condition on the event loop; the mocha timeout bounds it. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
