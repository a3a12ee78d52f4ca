import { once } from "node:events";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { type Frame, fixedFrame, jsonResultFrame, resultFrame, writeFrame } from "../host-shim/framing.js";

describe("framing", () => {
  let server: Server;
  let frame: Frame;
  before(async () => {
    server = createServer((_req, res) => writeFrame(res, frame)).listen(0, "127.0.0.1");
    await once(server, "listening");
  });
  after(() => server.close());

  async function fetchFrame(next: Frame) {
    frame = next;
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: "POST" });
    return { response, text: await response.text() };
  }

  it("sends a worker's JSON text as the result, byte for byte, and parses it only when body is read", async () => {
    const json = JSON.stringify({ version: 1, name: "ünïcode", list: [1, "two", null] });
    const { response, text } = await fetchFrame(jsonResultFrame(json));
    expect(text).to.equal(`{"result":${json}}`);
    expect(response.headers.get("content-length")).to.equal(String(Buffer.byteLength(text)));
    expect(response.headers.get("cache-control")).to.equal("no-store");
    expect(response.headers.get("content-type")).to.equal("application/json; charset=utf-8");
    expect(jsonResultFrame(json).body).to.deep.equal({ result: JSON.parse(json) });
  });

  it("sends what resultFrame and a fixed frame hold exactly as JSON.stringify would", async () => {
    const result = { a: [1, 2], b: "x" };
    expect((await fetchFrame(resultFrame(result))).text).to.equal(JSON.stringify({ result }));
    const refusal = fixedFrame(401, "UNAUTHORIZED", "no");
    for (let i = 0; i < 2; i++) {
      const { response, text } = await fetchFrame(refusal);
      expect(response.status).to.equal(401);
      expect(text).to.equal('{"error":{"code":"UNAUTHORIZED","message":"no"}}');
    }
    expect(Object.isFrozen(refusal)).to.equal(true);
  });
});
