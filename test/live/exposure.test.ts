import { expect } from "chai";
import { startChangingServer } from "../../fixtures/servers/changing.js";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { isLiveCallError } from "../../host-shim/live/types.js";
import {
  currentHashes,
  harness,
  httpTarget,
  permissions,
  rejection,
  spec,
  textOf,
  waitFor,
} from "./helpers.js";

describe("LiveConnections: exposure", () => {
  it("registers every approved tool as <connection>__<tool>, callable through the agent registry", async () => {
    const server = await startPlainServer();
    const h = harness();
    try {
      const target = httpTarget(server.url);
      const approved = await currentHashes(target);
      const status = await h.live.apply(spec("plain", target, permissions({ approved })));
      expect(status.status).to.equal("connected");
      expect(status.reason).to.equal(null);
      expect(status.tools).to.deep.equal([
        { name: "echo", exposed: true, awaitingReview: false },
        { name: "add", exposed: true, awaitingReview: false },
      ]);
      expect(h.registry.names()).to.deep.equal(["plain__add", "plain__echo"]);
      const echo = h.registry.get("plain__echo");
      expect(echo?.description).to.equal("Returns the text it is given.");
      expect(echo?.inputSchema).to.have.nested.property("properties.text");

      expect(textOf(await h.registry.call("plain__echo", { text: "hello" }, "s:1"))).to.equal("hello");
      expect(textOf(await h.registry.call("plain__add", { a: 2, b: 40 }))).to.equal("42");
      const signal = new AbortController().signal;
      expect(textOf(await h.live.callTool("plain", "add", { a: 1, b: 1 }, signal))).to.equal("2");
      const aborted = new AbortController();
      aborted.abort();
      const cancelled = await rejection(h.live.callTool("plain", "add", { a: 1, b: 1 }, aborted.signal));
      expect(isLiveCallError(cancelled) && cancelled.code).to.equal("CANCELLED");
      expect(server.calls).to.deep.equal([
        { tool: "echo", args: { text: "hello" } },
        { tool: "add", args: { a: 2, b: 40 } },
        { tool: "add", args: { a: 1, b: 1 } },
      ]);
      expect(h.changes).to.include("plain");
    } finally {
      await h.live.close();
      await server.close();
    }
    expect(h.registry.names()).to.deep.equal([]);
  });

  it("applies all/exclude, selected and none on the same session, and callTool follows the same rules", async () => {
    const server = await startPlainServer();
    const h = harness();
    const signal = new AbortController().signal;
    try {
      const target = httpTarget(server.url);
      const approved = await currentHashes(target);
      await waitFor("discovery's session to end", () => server.sessionCount() === 0);

      // Approval missing for `add`: allowed by the mode, but waiting for the owner.
      let status = await h.live.apply(
        spec("p", target, permissions({ approved: { echo: approved.echo ?? "" } })),
      );
      expect(h.registry.names()).to.deep.equal(["p__echo"]);
      expect(status.tools.find((t) => t.name === "add")).to.deep.equal({
        name: "add",
        exposed: false,
        awaitingReview: true,
      });
      const refused = await rejection(h.live.callTool("p", "add", { a: 1, b: 2 }, signal));
      expect(isLiveCallError(refused) && refused.code).to.equal("NOT_PERMITTED");

      status = await h.live.apply(
        spec("p", target, permissions({ mode: "all", exclude: ["echo"], approved })),
      );
      expect(h.registry.names()).to.deep.equal(["p__add"]);
      expect(status.tools).to.deep.equal([
        { name: "echo", exposed: false, awaitingReview: false },
        { name: "add", exposed: true, awaitingReview: false },
      ]);

      status = await h.live.apply(
        spec("p", target, permissions({ mode: "selected", include: ["echo"], approved })),
      );
      expect(h.registry.names()).to.deep.equal(["p__echo"]);
      expect(status.tools.map((t) => t.exposed)).to.deep.equal([true, false]);

      status = await h.live.apply(spec("p", target, permissions({ mode: "none", approved })));
      expect(h.registry.names()).to.deep.equal([]);
      expect(status.status).to.equal("connected");
      expect(status.tools.every((t) => !t.exposed && !t.awaitingReview)).to.equal(true);
      const none = await rejection(h.live.callTool("p", "echo", { text: "x" }, signal));
      expect(isLiveCallError(none) && none.code).to.equal("NOT_PERMITTED");

      // Permission changes reuse the live session: no reconnect per decision.
      expect(server.sessionCount()).to.equal(1);
      const unknown = await rejection(h.live.callTool("nope", "echo", {}, signal));
      expect(isLiveCallError(unknown) && unknown.code).to.equal("NOT_FOUND");
      expect(server.calls).to.deep.equal([]);
    } finally {
      await h.live.close();
      await server.close();
    }
  });

  it("a changed or new tool is unregistered and awaits review while the others stay; re-approval exposes it", async () => {
    const server = await startChangingServer([
      { name: "alpha", description: "The first tool." },
      { name: "beta", description: "The second tool." },
    ]);
    const h = harness();
    try {
      const target = httpTarget(server.url);
      const approved = await currentHashes(target);
      await h.live.apply(spec("chg", target, permissions({ approved })));
      expect(h.registry.names()).to.deep.equal(["chg__alpha", "chg__beta"]);
      await waitFor("the client's notification stream", () => server.listenerCount() > 0);
      const review = (name: string) => h.live.status("chg")?.tools.find((t) => t.name === name);

      server.addTool("gamma", "A third tool.");
      await waitFor("gamma listed", () => review("gamma") !== undefined);
      expect(review("gamma")).to.deep.equal({ name: "gamma", exposed: false, awaitingReview: true });
      expect(h.registry.names()).to.deep.equal(["chg__alpha", "chg__beta"]);

      server.changeDescription("alpha", "Now does something else.");
      await waitFor("alpha unregistered", () => !h.registry.names().includes("chg__alpha"));
      expect(review("alpha")).to.deep.equal({ name: "alpha", exposed: false, awaitingReview: true });
      expect(h.registry.names()).to.deep.equal(["chg__beta"]);
      expect(textOf(await h.registry.call("chg__beta", { text: "still here" }))).to.equal("beta ran");

      server.changeSchema("beta");
      await waitFor("beta unregistered", () => h.registry.names().length === 0);
      expect(review("beta")).to.deep.equal({ name: "beta", exposed: false, awaitingReview: true });
      expect(h.live.status("chg")?.status).to.equal("connected");

      // The owner reviews again: what they see now is what gets pinned.
      const reapproved = await currentHashes(target);
      const status = await h.live.apply(spec("chg", target, permissions({ approved: reapproved })));
      expect(status.tools.every((t) => t.exposed && !t.awaitingReview)).to.equal(true);
      expect(h.registry.names()).to.deep.equal(["chg__alpha", "chg__beta", "chg__gamma"]);
      expect(h.registry.get("chg__alpha")?.description).to.equal("Now does something else.");
      expect(h.registry.get("chg__beta")?.inputSchema).to.have.nested.property("properties.extra1");
      expect(textOf(await h.registry.call("chg__beta", { text: "x", extra1: 1 }))).to.equal("beta ran");

      server.removeTool("gamma");
      await waitFor("gamma gone", () => review("gamma") === undefined);
      expect(h.registry.names()).to.deep.equal(["chg__alpha", "chg__beta"]);
    } finally {
      await h.live.close();
      await server.close();
    }
  });
});
