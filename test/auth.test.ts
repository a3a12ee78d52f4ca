import { expect } from "chai";
import { presentedToken, tokenMatches } from "../host-shim/auth.js";

describe("the gateway token compare", () => {
  const token = "k3y-0123456789abcdefghijklmnopqrstuvwxyzAB";

  it("accepts exactly the configured token", () => {
    expect(tokenMatches(token, token)).to.equal(true);
  });

  it("refuses a prefix, an extension, one changed character and a padded copy", () => {
    expect(tokenMatches(token.slice(0, -1), token)).to.equal(false);
    expect(tokenMatches(`${token}x`, token)).to.equal(false);
    expect(tokenMatches(`${token.slice(0, -1)}C`, token)).to.equal(false);
    expect(tokenMatches(`${token}\u0000`, token)).to.equal(false);
    expect(tokenMatches(`${token.slice(0, -1)}\u0000`, token)).to.equal(false);
  });

  it("compares every code unit: a multibyte token matches only itself", () => {
    const wide = "tökén-ünïcode-välue";
    expect(tokenMatches(wide, wide)).to.equal(true);
    expect(tokenMatches("tokén-ünïcode-välue", wide)).to.equal(false);
    // Same byte length, different characters.
    expect(tokenMatches("tö".padEnd(Buffer.byteLength(wide) - 1, "x"), wide)).to.equal(false);
    // A character cut in half by the configured length must not match.
    expect(tokenMatches(`${wide.slice(0, -1)}é`, wide)).to.equal(false);
  });

  it("tells lone surrogates apart, which encode to the same UTF-8 bytes", () => {
    // Both encode as EF BF BD: a compare of UTF-8 bytes let one stand for the other.
    expect(Buffer.from(`${token}\ud800`).equals(Buffer.from(`${token}\udc00`))).to.equal(true);
    expect(tokenMatches(`${token}\ud800`, `${token}\udc00`)).to.equal(false);
    expect(tokenMatches(`${token}\udc00`, `${token}\udc00`)).to.equal(true);
  });

  it("never matches an empty configured token or an empty presented one", () => {
    expect(tokenMatches("", "")).to.equal(false);
    expect(tokenMatches("anything", "")).to.equal(false);
    expect(tokenMatches("", token)).to.equal(false);
    expect(tokenMatches(null, token)).to.equal(false);
  });

  it("follows a rotated token at once", () => {
    expect(tokenMatches(token, token)).to.equal(true);
    const rotated = `${token}-rotated`;
    expect(tokenMatches(token, rotated)).to.equal(false);
    expect(tokenMatches(rotated, rotated)).to.equal(true);
    expect(tokenMatches(rotated, token)).to.equal(false);
  });

  it("reads the extractor header first, then a Bearer token, never anything else", () => {
    expect(
      presentedToken({ "x-service-token": " a ", authorization: "Bearer b" }, "x-service-token"),
    ).to.equal("a");
    expect(presentedToken({ authorization: "Bearer b" }, "x-service-token")).to.equal("b");
    expect(presentedToken({ authorization: "Basic b" }, "x-service-token")).to.equal(null);
    expect(presentedToken({}, "x-service-token")).to.equal(null);
  });
});
