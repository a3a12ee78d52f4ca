import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { type TestGateway, startTestGateway } from "./helpers/gateway.js";
import { manage } from "./helpers/http.js";

const FAULT_WORKER = fileURLToPath(new URL("../fixtures/workers/fault-worker.js", import.meta.url));

describe("worker faults through the real pool", function () {
  this.timeout(60_000);
  let gw: TestGateway;

  before(async () => {
    gw = await startTestGateway({
      profiles: ["a"],
      pluginOptions: {
        pool: {
          workerFilename: FAULT_WORKER,
          maxThreads: 2,
          taskTimeoutMs: 1_500,
          maxOldGenerationSizeMb: 32,
        },
      },
    });
  });
  after(async () => gw.close());

  async function expectHealthy(profile: string | null = null) {
    const reply = await manage(gw.url, gw.token, { method: "mcp.capabilities", profile });
    expect(reply.status).to.equal(200);
    expect((reply.json as { result: { version: number } }).result.version).to.equal(1);
  }

  for (const fault of ["crash", "hang", "oom", "throw"] as const) {
    for (const profile of [null, "a"]) {
      it(`a worker ${fault} answers 503 UNAVAILABLE without raw text (${profile ?? "root"}), then serves again`, async () => {
        const reply = await manage(gw.url, gw.token, {
          method: "mcp.setup.status",
          params: { id: fault },
          profile,
        });
        expect(reply.status).to.equal(503);
        expect(reply.json).to.deep.equal({
          error: { code: "UNAVAILABLE", message: "The request could not be completed; try again." },
        });
        expect(reply.headers["cache-control"]).to.equal("no-store");
        expect(reply.text).not.to.contain("sk-live");
        await expectHealthy(profile);
        await expectHealthy(profile);
      });
    }
  }

  it("keeps serving other requests while one worker hangs", async () => {
    const hung = manage(gw.url, gw.token, { method: "mcp.setup.status", params: { id: "hang" } });
    await expectHealthy();
    expect((await hung).status).to.equal(503);
  });

  it("logs each fault by kind, without the error's text", async () => {
    const faults = gw.logs
      .map((line) => JSON.parse(line) as { fault?: string | null })
      .map((entry) => entry.fault);
    expect(faults).to.include.members(["crash", "timeout", "out_of_memory"]);
    expect(gw.logs.join("\n")).not.to.contain("sk-live");
  });
});
