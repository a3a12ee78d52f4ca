import { expect } from "chai";
import { CLI_TIMEOUT_MS, inspector } from "../helpers/inspector.js";
import { type Harness, startEndpoint } from "./harness.js";
import { SECRET_A, WRONG_SECRET } from "./registry-double.js";

describe("/mcp endpoint: the MCP Inspector CLI", function () {
  this.timeout(2 * CLI_TIMEOUT_MS + 5_000);
  let h: Harness;
  before(async () => {
    h = await startEndpoint();
  });
  after(async () => h.close());

  it("lists exactly the key's tools and calls echo", async () => {
    const [listed, called] = await Promise.all([
      inspector(h.url, SECRET_A, ["--method", "tools/list"]),
      inspector(h.url, SECRET_A, [
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "text=from-inspector",
      ]),
    ]);
    expect(listed.code, listed.stderr).to.equal(0);
    const tools = (JSON.parse(listed.stdout) as { tools: Array<{ name: string }> }).tools;
    expect(tools.map((tool) => tool.name)).to.deep.equal(["echo", "slow", "big"]);
    expect(called.code, called.stderr).to.equal(0);
    expect(JSON.parse(called.stdout)).to.deep.equal({ content: [{ type: "text", text: "from-inspector" }] });
  });

  it("fails with the 401 answer for a wrong key", async () => {
    const run = await inspector(h.url, WRONG_SECRET, ["--method", "tools/list"]);
    expect(run.code).to.not.equal(0);
    expect(run.stderr).to.include("UNAUTHORIZED");
    expect(run.stderr).to.not.include(WRONG_SECRET);
  });
});
