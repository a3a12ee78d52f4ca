import { expect } from "chai";
import { startChangingServer } from "../../fixtures/servers/changing.js";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import { beginAndWait, call, errorOf, requestId, resultOf, until } from "../helpers/setup.js";

interface ConnectionsList {
  connections: Array<{
    name: string;
    status: string;
    enabled: boolean;
    tools: Array<{ name: string; exposed: boolean; awaitingReview: boolean }>;
  }>;
}

async function entryOf(gw: TestGateway, name: string) {
  const list = resultOf<ConnectionsList>(await call(gw, "mcp.connections.list", {}));
  return list.connections.find((connection) => connection.name === name);
}

describe("approval pinned to what the owner saw, and connection actions", function () {
  this.timeout(60_000);
  let gw: TestGateway;

  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => gw.close());

  it("quarantines a new or changed tool until the owner reviews it again", async () => {
    const server = await startChangingServer();
    try {
      const review = await beginAndWait(gw, { name: "shifty", config: { url: server.url } }, ["review"]);
      resultOf(await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }));
      expect(gw.gateway.root.tools.names()).to.include("shifty__alpha");
      await until(() => server.listenerCount() > 0);

      server.addTool("beta", "a new tool");
      server.changeDescription("alpha", "now it does something else");
      await until(
        async () => (await entryOf(gw, "shifty"))?.tools.some((tool) => tool.name === "beta") === true,
      );
      await until(
        async () =>
          (await entryOf(gw, "shifty"))?.tools.find((t) => t.name === "alpha")?.awaitingReview === true,
      );
      const entry = await entryOf(gw, "shifty");
      expect(entry?.tools).to.deep.include({ name: "beta", exposed: false, awaitingReview: true });
      expect(entry?.tools).to.deep.include({ name: "alpha", exposed: false, awaitingReview: true });
      expect(gw.gateway.root.tools.names()).not.to.include("shifty__alpha").and.not.include("shifty__beta");

      const again = await beginAndWait(gw, { name: "shifty", intent: "permissions" }, ["review"]);
      expect(again.tools.find((tool) => tool.name === "alpha")?.description).to.equal(
        "now it does something else",
      );
      resultOf(await call(gw, "mcp.setup.confirm", { id: again.id, permissions: { mode: "all" } }));
      await until(() => gw.gateway.root.tools.names().includes("shifty__beta"));
      expect(gw.gateway.root.tools.names()).to.include("shifty__alpha");

      server.changeSchema("beta");
      await until(() => !gw.gateway.root.tools.names().includes("shifty__beta"));
      expect(gw.gateway.root.tools.names()).to.include("shifty__alpha");
    } finally {
      await server.close();
    }
  });

  it("enable, disable, retry and remove, each idempotent by requestId", async () => {
    const plain = await startPlainServer();
    try {
      const review = await beginAndWait(gw, { name: "acted", config: { url: plain.url } }, ["review"]);
      resultOf(await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }));
      const act = async (action: string, id = requestId(action)) =>
        resultOf(await call(gw, "mcp.connections.action", { name: "acted", requestId: id, action }));

      const disableId = requestId("disable");
      const disabled = await act("disable", disableId);
      expect(disabled).to.include({ phase: "complete", saved: true });
      expect(disabled.runtime?.status).to.equal("disabled");
      expect(gw.gateway.root.tools.names().filter((name) => name.startsWith("acted__"))).to.deep.equal([]);
      expect((await entryOf(gw, "acted"))?.status).to.equal("disabled");
      expect((await act("disable", disableId)).id).to.equal(disabled.id);
      const conflict = errorOf(
        await call(gw, "mcp.connections.action", { name: "acted", requestId: disableId, action: "enable" }),
      );
      expect(conflict.code).to.equal("CONFLICT");

      const enabled = await act("enable");
      expect(enabled.runtime?.status).to.equal("connected");
      expect(gw.gateway.root.tools.names()).to.include("acted__echo");
      expect((await act("retry")).runtime?.status).to.equal("connected");

      const removeId = requestId("remove");
      const removed = await act("remove", removeId);
      expect(removed.runtime?.status).to.equal("removed");
      expect(await entryOf(gw, "acted")).to.equal(undefined);
      expect(gw.gateway.root.tools.names().filter((name) => name.startsWith("acted__"))).to.deep.equal([]);
      expect((await act("remove", removeId)).id).to.equal(removed.id);
      const gone = errorOf(
        await call(gw, "mcp.connections.action", { name: "acted", requestId: requestId(), action: "enable" }),
      );
      expect(gone.code).to.equal("NOT_FOUND");
    } finally {
      await plain.close();
    }
  });
});
