import type { IncomingMessage } from "node:http";
import { expect } from "chai";
import { sdkRequest } from "../../host-shim/mcp-endpoint/sdk-request.js";

function incoming(headers: Record<string, string | string[]>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

describe("/mcp endpoint: the request the SDK transport gets", () => {
  it("carries the method, URL and only the headers the SDK reads: never Authorization", () => {
    const request = sdkRequest(
      incoming({
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
        authorization: "Bearer mcpk-never-copied",
        cookie: "a=b",
      }),
    );
    expect(request).to.be.instanceOf(Request);
    expect(request.method).to.equal("POST");
    expect(request.url).to.equal("http://localhost/mcp");
    expect([...request.headers.keys()].sort()).to.deep.equal([
      "accept",
      "content-type",
      "mcp-protocol-version",
    ]);
    expect(JSON.stringify([...request.headers.entries()])).to.not.include("mcpk-never-copied");
  });

  it("answers every other member of Request as a real one of the same method, URL and headers", async () => {
    const request = sdkRequest(incoming({ "content-type": "application/json" }));
    expect(request.signal).to.be.instanceOf(AbortSignal);
    expect(request.signal.aborted).to.equal(false);
    expect([request.redirect, request.cache, request.bodyUsed, request.body]).to.deep.equal([
      "follow",
      "default",
      false,
      null,
    ]);
    const copy = request.clone();
    expect([copy.method, copy.url, copy.headers.get("content-type")]).to.deep.equal([
      "POST",
      "http://localhost/mcp",
      "application/json",
    ]);
    expect(await request.text()).to.equal("");
  });
});
