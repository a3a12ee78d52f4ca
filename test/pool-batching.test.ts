import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { COALESCED_METHODS, MAX_BATCH } from "../host-shim/pool.js";
import type { PluginHandle } from "../host-shim/register.js";
import { type TestGateway, startTestGateway } from "./helpers/gateway.js";
import { manage } from "./helpers/http.js";

/** A well-formed operation id that names no operation. */
const missing = (index: number) => `op_${index.toString(16).padStart(32, "0")}`;

const FAULT_WORKER = fileURLToPath(new URL("../fixtures/workers/fault-worker.js", import.meta.url));

function rootPlugin(gw: TestGateway): PluginHandle {
  const plugin = gw.gateway.root.plugin;
  if (plugin === undefined) throw new Error("the root plugin is not registered");
  return plugin;
}

describe("read-only calls that arrive together share one worker task", function () {
  this.timeout(60_000);

  describe("with the real worker", () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ profiles: ["a"], pluginOptions: { pool: { maxThreads: 2 } } });
    });
    after(async () => gw.close());

    it("answers each call of a batch with its own result, in any mix of methods", async () => {
      const plugin = rootPlugin(gw);
      // Issued in one tick, so they reach the pool in the same turn (more than one batch's worth).
      const calls = Array.from({ length: MAX_BATCH + 8 }, (_, index) => {
        switch (index % 4) {
          case 0:
            return { method: "mcp.capabilities", params: {} };
          case 1:
            return { method: "mcp.setup.status", params: { id: missing(index) } };
          case 2:
            return { method: "mcp.connections.list", params: {} };
          default:
            return { method: "mcp.setup.status", params: { nonsense: index } };
        }
      });
      const runs = await Promise.all(calls.map((call) => plugin.invoke(call.method, call.params)));
      runs.forEach((run, index) => {
        expect(run.fault, `call ${index}`).to.equal(null);
        const body = run.frame.body as { result?: Record<string, unknown>; error?: { code: string } };
        switch (index % 4) {
          case 0:
            expect(body.result?.version, `call ${index}`).to.equal(1);
            break;
          case 1:
            expect(body.error?.code, `call ${index}`).to.equal("NOT_FOUND");
            break;
          case 2:
            expect(body.result?.connections, `call ${index}`).to.deep.equal([]);
            break;
          default:
            expect(body.error?.code, `call ${index}`).to.equal("INVALID_PARAMS");
        }
      });
    });

    it("batches only methods that neither write nor wait on the network", () => {
      expect([...COALESCED_METHODS].sort()).to.deep.equal([
        "mcp.access.catalog",
        "mcp.access.list",
        "mcp.capabilities",
        "mcp.connections.list",
        "mcp.setup.pending",
        "mcp.setup.status",
      ]);
    });

    it("keeps answers apart over HTTP too, for the root and a profile under concurrent load", async () => {
      const requests = Array.from({ length: 48 }, (_, index) => ({
        method: index % 2 === 0 ? "mcp.capabilities" : "mcp.setup.status",
        params: index % 2 === 0 ? {} : { id: missing(index) },
        profile: index % 3 === 0 ? "a" : null,
      }));
      const replies = await Promise.all(requests.map((request) => manage(gw.url, gw.token, request)));
      replies.forEach((reply, index) => {
        if (index % 2 === 0) {
          expect(reply.status, `request ${index}`).to.equal(200);
          expect((reply.json as { result: { version: number } }).result.version).to.equal(1);
        } else {
          expect(reply.status, `request ${index}`).to.equal(400);
          expect((reply.json as { error: { code: string } }).error.code).to.equal("NOT_FOUND");
        }
      });
    });
  });

  describe("with a worker that fails", () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({
        pluginOptions: { pool: { workerFilename: FAULT_WORKER, maxThreads: 2, taskTimeoutMs: 1_500 } },
      });
    });
    after(async () => gw.close());

    it("a fault in a batch answers each of its calls 503, and the next calls are served", async () => {
      const plugin = rootPlugin(gw);
      const batch = [
        plugin.invoke("mcp.capabilities", {}),
        plugin.invoke("mcp.setup.status", { id: "crash" }),
        plugin.invoke("mcp.capabilities", {}),
      ];
      const runs = await Promise.all(batch);
      for (const run of runs) {
        expect(run.frame.status).to.equal(503);
        expect(run.fault).to.equal("crash");
      }
      const after = await Promise.all([
        plugin.invoke("mcp.capabilities", {}),
        plugin.invoke("mcp.capabilities", {}),
      ]);
      for (const run of after) expect(run.frame.status).to.equal(200);
    });

    it("a method that throws inside a batch fails alone", async () => {
      const plugin = rootPlugin(gw);
      // An unknown id is the method's own error: it must not leak into its neighbours' answers.
      const runs = await Promise.all([
        plugin.invoke("mcp.capabilities", {}),
        plugin.invoke("mcp.setup.status", { id: missing(1) }),
        plugin.invoke("mcp.capabilities", {}),
      ]);
      expect(runs.map((run) => run.frame.status)).to.deep.equal([200, 400, 200]);
    });

    it("a call that must run alone is not held up by a hung batch", async () => {
      const plugin = rootPlugin(gw);
      const hung = Promise.all([
        plugin.invoke("mcp.setup.status", { id: "hang" }),
        plugin.invoke("mcp.capabilities", {}),
      ]);
      const alone = await plugin.invoke("mcp.setup.cancel", { id: missing(1) });
      expect(alone.frame.status).to.equal(400);
      const runs = await hung;
      expect(runs.map((run) => run.fault)).to.deep.equal(["timeout", "timeout"]);
    });
  });
});
