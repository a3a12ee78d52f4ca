import { expect } from "chai";
import { envelopeMemoSize, parseEnvelope } from "../host-shim/envelope.js";

const body = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value));

describe("the envelope memo", () => {
  it("answers a repeated body alike, each time with its own params object", () => {
    const first = parseEnvelope(body({ method: "mcp.capabilities" }));
    const second = parseEnvelope(body({ method: "mcp.capabilities" }));
    expect(second).to.deep.equal(first);
    expect(first.ok && second.ok).to.equal(true);
    if (!first.ok || !second.ok) return;
    expect(second.envelope.params).not.to.equal(first.envelope.params);
    (first.envelope.params as Record<string, unknown>).added = 1;
    const third = parseEnvelope(body({ method: "mcp.capabilities" }));
    expect(third).to.deep.equal({
      ok: true,
      envelope: { method: "mcp.capabilities", params: {}, profile: null },
    });
  });

  it("keeps the profile of the body it learned, and tells bodies apart by their exact bytes", () => {
    const named = parseEnvelope(body({ method: "mcp.connections.list", profile: "work" }));
    const spaced = parseEnvelope(body('{"method": "mcp.connections.list", "profile": "home"}'));
    expect(named).to.deep.equal({
      ok: true,
      envelope: { method: "mcp.connections.list", params: {}, profile: "work" },
    });
    expect(spaced.ok && spaced.envelope.profile).to.equal("home");
    expect(parseEnvelope(body({ method: "mcp.connections.list", profile: "work" }))).to.deep.equal(named);
  });

  it("never remembers a refusal: a bad body fails each time", () => {
    for (let i = 0; i < 2; i++) {
      expect(parseEnvelope(body({ method: "mcp.capabilities", id: 1 }))).to.deep.include({ ok: false });
      expect(parseEnvelope(body({ method: "constructor" }))).to.deep.equal({
        ok: false,
        error: { code: "UNKNOWN_METHOD", message: "The method is not one this route serves." },
      });
      expect(parseEnvelope(body({ method: "mcp.capabilities", profile: " " }))).to.deep.include({
        ok: false,
      });
    }
  });

  it("does not share params that carry values between requests", () => {
    const text = body({ method: "mcp.setup.status", params: { operationId: "op-1" } });
    const first = parseEnvelope(text);
    if (!first.ok) throw new Error("expected a valid envelope");
    (first.envelope.params as Record<string, unknown>).operationId = "changed";
    const second = parseEnvelope(text);
    expect(second.ok && second.envelope.params).to.deep.equal({ operationId: "op-1" });
  });

  it("stays bounded however many distinct bodies arrive", () => {
    for (let i = 0; i < 2000; i++) parseEnvelope(body({ method: "mcp.capabilities", profile: `p${i}` }));
    expect(envelopeMemoSize()).to.be.at.most(256);
    expect(envelopeMemoSize()).to.be.greaterThan(0);
  });
});
