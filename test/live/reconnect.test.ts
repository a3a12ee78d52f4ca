import { expect } from "chai";
import sinon from "sinon";
import { startFailingServer } from "../../fixtures/servers/failing.js";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { backoffDelay } from "../../host-shim/live/backoff.js";
import { closedPort } from "../helpers/ports.js";
import {
  currentHashes,
  harness,
  httpTarget,
  permissions,
  sleep,
  spec,
  startPlainOnPort,
  textOf,
  waitFor,
} from "./helpers.js";

/** Polls on setImmediate, so it works while setTimeout is faked. */
async function until(what: string, predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("LiveConnections: drops, failures, lifecycle", () => {
  it("notices a stopped server, retries with backoff, and re-registers when it is back on the same port", async () => {
    let server = await startPlainOnPort();
    const h = harness({ backoff: { initialMs: 50, maxMs: 400 } });
    try {
      const target = httpTarget(server.url);
      const approved = await currentHashes(target);
      expect((await h.live.apply(spec("plain", target, permissions({ approved })))).status).to.equal(
        "connected",
      );
      expect(h.registry.names()).to.deep.equal(["plain__add", "plain__echo"]);

      await server.close();
      await waitFor("the drop", () => h.live.status("plain")?.status === "connecting", 5000);
      expect(h.registry.names()).to.deep.equal([]);
      const reason = h.live.status("plain")?.reason ?? "";
      expect(reason).to.match(/Retrying\.$/);
      expect(reason).to.not.match(/ECONNREFUSED|fetch failed|Error:|at /);
      const down = await h.live
        .callTool("plain", "echo", { text: "x" }, new AbortController().signal)
        .catch((e) => e);
      expect(down).to.have.property("code", "UNAVAILABLE");

      await sleep(600); // several failed attempts while it is down
      expect(h.live.status("plain")?.status).to.equal("connecting");
      server = await startPlainOnPort(server.port);
      await waitFor("the reconnect", () => h.live.status("plain")?.status === "connected", 5000);
      expect(h.registry.names()).to.deep.equal(["plain__add", "plain__echo"]);
      expect(textOf(await h.registry.call("plain__echo", { text: "back" }))).to.equal("back");
      expect(server.calls).to.deep.equal([{ tool: "echo", args: { text: "back" } }]);
      expect(h.logger.entries.some((e) => e.message.includes("dropped"))).to.equal(true);
    } finally {
      await h.live.close();
      await server.close();
    }
  });

  it("a call that fails below MCP triggers a liveness check, a reconnect, and re-registration", async () => {
    const server = await startPlainServer();
    let broken = false;
    const flaky: typeof fetch = (input, init) => {
      if (broken && (init?.method ?? "GET") === "POST") {
        return Promise.reject(
          new TypeError("fetch failed", { cause: Object.assign(new Error("reset"), { code: "ECONNRESET" }) }),
        );
      }
      return globalThis.fetch(input, init);
    };
    const h = harness({ fetch: flaky });
    try {
      const target = httpTarget(server.url);
      await h.live.apply(spec("flaky", target, permissions({ approved: await currentHashes(target) })));
      expect(h.registry.names()).to.deep.equal(["flaky__add", "flaky__echo"]);

      broken = true;
      const failed = await h.registry.call("flaky__echo", { text: "lost" }).catch((e: unknown) => e);
      expect(failed).to.have.property("code", "UNAVAILABLE");
      expect(failed)
        .to.have.property("message")
        .that.does.not.match(/ECONNRESET|fetch failed/);
      await waitFor("the drop", () => h.live.status("flaky")?.status === "connecting");
      expect(h.registry.names()).to.deep.equal([]);

      broken = false;
      await waitFor("the reconnect", () => h.live.status("flaky")?.status === "connected", 5000);
      expect(textOf(await h.registry.call("flaky__echo", { text: "again" }))).to.equal("again");
      expect(server.calls).to.deep.equal([{ tool: "echo", args: { text: "again" } }]);
    } finally {
      await h.live.close();
      await server.close();
    }
  });

  it("a permanent failure shows failed with an owner-readable reason and is not retried", async () => {
    const server = await startFailingServer("http404");
    const h = harness();
    try {
      const status = await h.live.apply(spec("gone", httpTarget(server.url), permissions()));
      expect(status.status).to.equal("failed");
      expect(status.reason).to.be.a("string").and.match(/404/);
      expect(status.tools).to.deep.equal([]);
      const requests = server.requests();
      await sleep(300);
      expect(server.requests()).to.equal(requests);
    } finally {
      await h.live.close();
      await server.close();
    }
  });

  it("an unreachable server stays connecting, with a reason, and backs off exponentially (fake timers)", async () => {
    const port = await closedPort();
    let fetches = 0;
    const counting: typeof fetch = (input, init) => {
      fetches++;
      return globalThis.fetch(input, init);
    };
    const clock = sinon.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const random = sinon.stub(Math, "random").returns(0.999999);
    const h = harness({ backoff: { initialMs: 1000, maxMs: 4000 }, fetch: counting });
    try {
      const status = await h.live.apply(
        spec("down", httpTarget(`http://127.0.0.1:${port}/mcp`), permissions()),
      );
      expect(status.status).to.equal("connecting");
      expect(status.reason).to.equal(
        "The server could not be reached: the connection was refused. Retrying.",
      );
      const perAttempt = fetches;
      expect(perAttempt).to.be.greaterThan(0);
      for (const [attempt, delay] of [1000, 2000, 4000, 4000].entries()) {
        await until("the retry timer", () => clock.countTimers() === 1);
        await clock.tickAsync(delay - 5);
        expect(fetches, `no attempt before ${delay} ms`).to.equal(perAttempt * (attempt + 1));
        await clock.tickAsync(5);
        await until(`attempt ${attempt + 2}`, () => fetches === perAttempt * (attempt + 2));
      }
      expect(h.live.status("down")?.status).to.equal("connecting");
    } finally {
      random.restore();
      clock.restore();
      await h.live.close();
    }
  });

  it("disable unregisters and closes; enable reconnects; remove and close leave nothing registered", async () => {
    const server = await startPlainServer();
    const h = harness();
    try {
      const target = httpTarget(server.url);
      const approved = await currentHashes(target);
      const on = spec("plain", target, permissions({ approved }));
      await h.live.apply(on);
      expect(h.registry.names()).to.have.length(2);

      const disabled = await h.live.apply({ ...on, enabled: false });
      expect(disabled.status).to.equal("disabled");
      expect(disabled.reason).to.equal(null);
      expect(disabled.tools.every((t) => !t.exposed)).to.equal(true);
      expect(h.registry.names()).to.deep.equal([]);
      await waitFor("the session to end", () => server.sessionCount() === 0);

      expect((await h.live.apply(on)).status).to.equal("connected");
      expect(h.registry.names()).to.deep.equal(["plain__add", "plain__echo"]);
      await h.live.apply(spec("other", target, permissions({ approved })));
      expect(h.registry.names()).to.have.length(4);

      await h.live.remove("plain");
      expect(h.live.status("plain")).to.equal(null);
      expect(h.registry.names()).to.deep.equal(["other__add", "other__echo"]);
      const error = await h.live
        .callTool("plain", "echo", { text: "x" }, new AbortController().signal)
        .catch((e) => e);
      expect(error).to.have.property("code", "NOT_FOUND");

      await h.live.close();
      expect(h.registry.names()).to.deep.equal([]);
      await waitFor("every session to end", () => server.sessionCount() === 0);
    } finally {
      await h.live.close();
      await server.close();
    }
  });

  it("backoffDelay grows from initialMs, caps at maxMs and jitters within [half, full]", () => {
    const opts = { initialMs: 500, maxMs: 30_000 };
    expect([0, 1, 2, 3].map((n) => backoffDelay(n, opts, () => 1))).to.deep.equal([500, 1000, 2000, 4000]);
    expect(backoffDelay(20, opts, () => 1)).to.equal(30_000);
    expect(backoffDelay(3, opts, () => 0)).to.equal(2000);
    expect(backoffDelay(500, opts, () => 0.5)).to.equal(22_500);
  });
});
