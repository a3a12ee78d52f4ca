import { type Server, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import { type Snapshot, beginAndWait, call, resultOf, until } from "../helpers/setup.js";

/** A forwarding proxy that can hold requests: it freezes the server mid-apply, like a slow network. */
async function startGate(target: string) {
  const upstream = new URL(target);
  let held: Array<() => void> | null = null;
  let waiting = 0;
  const server: Server = createServer((req, res) => {
    const forward = () => {
      const outbound = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: req.headers,
        },
        (reply) => {
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(res);
        },
      );
      outbound.on("error", () => res.destroy());
      req.pipe(outbound);
    };
    if (held === null) forward();
    else {
      waiting += 1;
      held.push(forward);
    }
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    hold: () => {
      held = [];
    },
    waiting: () => waiting,
    release: () => {
      const pending = held ?? [];
      held = null;
      for (const go of pending) go();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe("cancel while committing", function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let plain: Awaited<ReturnType<typeof startPlainServer>>;
  let gate: Awaited<ReturnType<typeof startGate>>;

  before(async () => {
    plain = await startPlainServer();
    gate = await startGate(plain.url);
    gw = await startTestGateway();
  });
  after(async () => {
    await gw.close();
    await gate.close();
    await plain.close();
  });

  it("ends an operation whose config was already saved as failed APPLY_INTERRUPTED, still saved", async () => {
    const review = await beginAndWait(gw, { name: "held", config: { url: gate.url } }, ["review"]);
    gate.hold();
    const confirming = call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } });
    await until(() => gate.waiting() > 0);
    const committing = resultOf(await call(gw, "mcp.setup.status", { id: review.id }));
    expect(committing).to.include({ phase: "committing", saved: true });

    const cancelled = resultOf(await call(gw, "mcp.setup.cancel", { id: review.id }));
    expect(cancelled).to.include({ phase: "failed", saved: true });
    expect(cancelled.error?.code).to.equal("APPLY_INTERRUPTED");
    gate.release();
    const answer = resultOf<Snapshot>(await confirming);
    expect(answer.phase).to.equal("failed");
    expect(answer.error?.code).to.equal("APPLY_INTERRUPTED");
    // The saved configuration stays: the connection is listed and comes up.
    await until(async () => {
      const list = resultOf<{ connections: Array<{ name: string; status: string }> }>(
        await call(gw, "mcp.connections.list", {}),
      );
      return list.connections.find((connection) => connection.name === "held")?.status === "connected";
    });
  });
});
