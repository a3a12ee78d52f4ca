import { expect } from "chai";
import sinon from "sinon";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import {
  type Snapshot,
  beginAndWait,
  call,
  errorOf,
  requestId,
  resultOf,
  waitForPhase,
} from "../helpers/setup.js";

describe("setup operations: retry safety, cancel, expiry, retention", function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let plain: Awaited<ReturnType<typeof startPlainServer>>;

  before(async () => {
    plain = await startPlainServer();
    gw = await startTestGateway({ pluginOptions: { pool: { maxThreads: 2 } } });
  });
  after(async () => {
    await gw.close();
    await plain.close();
  });

  it("50 concurrent identical begins make exactly one operation", async () => {
    const params = { name: "same", requestId: requestId(), config: { url: plain.url } };
    const replies = await Promise.all(Array.from({ length: 50 }, () => call(gw, "mcp.setup.begin", params)));
    const ids = new Set(replies.map((reply) => resultOf(reply).id));
    expect(ids.size).to.equal(1);
    const pending = resultOf<{ operations: Snapshot[] }>(await call(gw, "mcp.setup.pending", {}));
    expect(pending.operations.filter((op) => op.name === "same")).to.have.length(1);
    await waitForPhase(gw, [...ids][0] ?? "", ["review"]);
    await call(gw, "mcp.setup.cancel", { id: [...ids][0] });
  });

  it("the same requestId with other params is a CONFLICT; another live setup of the name is BUSY", async () => {
    const id = requestId();
    const first = resultOf(
      await call(gw, "mcp.setup.begin", { name: "busy", requestId: id, config: { url: plain.url } }),
    );
    const conflict = errorOf(
      await call(gw, "mcp.setup.begin", { name: "busy", requestId: id, config: { url: `${plain.url}?x=1` } }),
    );
    expect(conflict.code).to.equal("CONFLICT");
    const busy = errorOf(
      await call(gw, "mcp.setup.begin", { name: "busy", requestId: requestId(), config: { url: plain.url } }),
    );
    expect(busy.code).to.equal("BUSY");
    const same = resultOf(
      await call(gw, "mcp.setup.begin", { name: "busy", requestId: id, config: { url: plain.url } }),
    );
    expect(same.id).to.equal(first.id);
    await waitForPhase(gw, first.id, ["review"]);
    resultOf(await call(gw, "mcp.setup.cancel", { id: first.id }));
  });

  it("cancel_request works when begin's answer was lost, and blocks a late begin", async () => {
    const lost = requestId();
    const begun = resultOf(
      await call(gw, "mcp.setup.begin", { name: "lost", requestId: lost, config: { url: plain.url } }),
    );
    const cancelled = resultOf<{ cancelled: boolean; operation: Snapshot | null }>(
      await call(gw, "mcp.setup.cancel_request", { name: "lost", requestId: lost }),
    );
    expect(cancelled.cancelled).to.equal(true);
    expect(cancelled.operation?.id).to.equal(begun.id);
    expect(cancelled.operation?.phase).to.equal("cancelled");

    const early = requestId();
    resultOf(await call(gw, "mcp.setup.cancel_request", { name: "late", requestId: early }));
    const late = errorOf(
      await call(gw, "mcp.setup.begin", { name: "late", requestId: early, config: { url: plain.url } }),
    );
    expect(late.code).to.equal("CANCELLED");
    const fresh = resultOf(
      await call(gw, "mcp.setup.begin", { name: "late", requestId: requestId(), config: { url: plain.url } }),
    );
    expect(fresh.phase).to.be.oneOf(["checking", "review"]);
    await waitForPhase(gw, fresh.id, ["review"]);
    await call(gw, "mcp.setup.cancel", { id: fresh.id });
  });

  it("cancel is subject to phase", async () => {
    const review = await beginAndWait(gw, { name: "phases", config: { url: plain.url } }, ["review"]);
    const cancelled = resultOf(await call(gw, "mcp.setup.cancel", { id: review.id }));
    expect(cancelled.phase).to.equal("cancelled");
    expect(resultOf(await call(gw, "mcp.setup.cancel", { id: review.id })).phase).to.equal("cancelled");
    expect(
      errorOf(await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } })).code,
    ).to.equal("CANCELLED");
    const complete = await beginAndWait(gw, { name: "phases", config: { url: plain.url } }, ["review"]);
    resultOf(await call(gw, "mcp.setup.confirm", { id: complete.id, permissions: { mode: "none" } }));
    expect(errorOf(await call(gw, "mcp.setup.cancel", { id: complete.id })).code).to.equal("NOT_READY");
    expect(errorOf(await call(gw, "mcp.setup.status", { id: `op_${"0".repeat(32)}` })).code).to.equal(
      "NOT_FOUND",
    );
  });

  describe("with a fake clock", () => {
    let clock: sinon.SinonFakeTimers;
    beforeEach(() => {
      clock = sinon.useFakeTimers({ now: Date.now(), toFake: ["Date"] });
    });
    afterEach(() => clock.restore());

    it("expires an operation 600 s after creation, then keeps it visible for an hour", async () => {
      const review = await beginAndWait(gw, { name: "expiring", config: { url: plain.url } }, ["review"]);
      expect(Date.parse(review.expiresAt) - Date.parse(review.createdAt)).to.equal(600_000);
      clock.tick(599_000);
      expect(resultOf(await call(gw, "mcp.setup.status", { id: review.id })).phase).to.equal("review");
      clock.tick(2_000);
      const expired = resultOf(await call(gw, "mcp.setup.status", { id: review.id }));
      expect(expired.phase).to.equal("expired");
      expect(expired.error?.code).to.equal("EXPIRED");
      expect(
        errorOf(await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } })).code,
      ).to.equal("EXPIRED");
      const pending = resultOf<{ operations: Snapshot[] }>(await call(gw, "mcp.setup.pending", {}));
      expect(pending.operations.map((op) => op.id)).to.include(review.id);
      clock.tick(3_600_001);
      const later = resultOf<{ operations: Snapshot[] }>(await call(gw, "mcp.setup.pending", {}));
      expect(later.operations.map((op) => op.id)).not.to.include(review.id);
      expect(errorOf(await call(gw, "mcp.setup.status", { id: review.id })).code).to.equal("NOT_FOUND");
    });
  });
});
