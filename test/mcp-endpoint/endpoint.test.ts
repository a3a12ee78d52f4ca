import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { expect } from "chai";
import {
  type Harness,
  callMessage,
  connectClient,
  listMessage,
  requestLines,
  rpc,
  startEndpoint,
  textOf,
} from "./harness.js";
import { KEY_A, KEY_B, SECRET_A, SECRET_B, WRONG_SECRET } from "./registry-double.js";

const ECHO_MARKER = "echo-argument-PLANTED-5e6f";

describe("/mcp endpoint: MCP through the SDK's own client", () => {
  let h: Harness;
  let clientA: Client;
  let clientB: Client;
  before(async () => {
    h = await startEndpoint();
    clientA = await connectClient(h.url, SECRET_A);
    clientB = await connectClient(h.url, SECRET_B);
  });
  after(async () => {
    await clientA.close();
    await clientB.close();
    await h.close();
  });

  it("tools/list is exactly the key's tools, in the key's order", async () => {
    const a = await clientA.listTools();
    expect(a.tools.map((tool) => tool.name)).to.deep.equal([...KEY_A.tools]);
    const b = await clientB.listTools();
    expect(b.tools.map((tool) => tool.name)).to.deep.equal([...KEY_B.tools]);
    expect(a.tools[0]?.inputSchema).to.deep.include({ type: "object" });
  });

  it("initialize advertises tools only, and ping answers", async () => {
    expect(clientA.getServerCapabilities()).to.deep.equal({ tools: {} });
    expect(clientA.getServerVersion()?.name).to.equal("mcp-manage");
    expect(await clientA.ping()).to.deep.equal({});
  });

  it("tools/call runs the key's tool", async () => {
    const result = await clientA.callTool({ name: "echo", arguments: { text: ECHO_MARKER } });
    expect(result.isError).to.not.equal(true);
    expect(textOf(result)).to.equal(ECHO_MARKER);
  });

  it("a tool of another key is unknown, as McpServer answers it, and never reaches the registry", async () => {
    const before = h.registry.calls.length;
    const result = await clientA.callTool({ name: "vault__read", arguments: {} });
    expect(result.isError).to.equal(true);
    expect(textOf(result)).to.equal("Tool vault__read not found");
    const missing = await clientA.callTool({ name: "no_such_tool", arguments: {} });
    expect(textOf(missing)).to.equal("Tool no_such_tool not found");
    expect(h.registry.calls.slice(before)).to.deep.equal([]);
    // The same name works for the key that holds it.
    const owned = await clientB.callTool({ name: "vault__read", arguments: {} });
    expect(owned.isError).to.not.equal(true);
  });

  it("a result beyond maxResultBytes is refused as a tool error", async () => {
    const result = await clientA.callTool({ name: "big", arguments: {} });
    expect(result.isError).to.equal(true);
    expect(textOf(result)).to.match(/result too large/i);
  });

  it("arguments beyond maxArgumentBytes are refused before the registry is asked", async () => {
    const before = h.registry.calls.length;
    const result = await clientA.callTool({ name: "echo", arguments: { text: "y".repeat(300 * 1024) } });
    expect(result.isError).to.equal(true);
    expect(textOf(result)).to.match(/arguments are too large/);
    expect(h.registry.calls.length).to.equal(before);
  });

  it("answers carry Cache-Control: no-store and never a CORS header", async () => {
    const reply = await rpc(h, SECRET_A, listMessage());
    expect(reply.status).to.equal(200);
    expect(reply.headers["cache-control"]).to.equal("no-store");
    expect(reply.headers["content-type"]).to.match(/^application\/json/);
    expect(Object.keys(reply.headers).filter((name) => name.startsWith("access-control-"))).to.deep.equal([]);
    expect(reply.headers["mcp-session-id"]).to.equal(undefined);
  });

  it("a raw tools/call works without initialize (stateless)", async () => {
    const reply = await rpc(h, SECRET_A, callMessage("echo", { text: "raw" }));
    expect(reply.status).to.equal(200);
    expect((reply.json as { result: { content: unknown } }).result).to.deep.include({
      content: [{ type: "text", text: "raw" }],
    });
  });

  for (const method of ["GET", "DELETE", "PUT"]) {
    it(`${method} answers 405 (stateless: no stream, no session)`, async () => {
      const reply = await rpc(h, SECRET_A, undefined, { method, headers: { accept: "text/event-stream" } });
      expect(reply.status).to.equal(405);
      expect(reply.headers.allow).to.equal("POST");
      expect(reply.headers["cache-control"]).to.equal("no-store");
    });
  }

  it("a body beyond maxBodyBytes answers 413, announced or chunked", async () => {
    const huge = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "z".repeat(1024 * 1024) } },
    };
    const announced = await rpc(h, SECRET_A, huge);
    expect(announced.status).to.equal(413);
    const chunked = await rpc(h, SECRET_A, huge, { chunkSize: 64 * 1024 });
    expect(chunked.status).to.equal(413);
    expect((chunked.json as { error: { data: { code: string } } }).error.data.code).to.equal("TOO_LARGE");
  });

  it("bad JSON, batches and a wrong Content-Type are refused with JSON errors", async () => {
    const bad = await rpc(h, SECRET_A, undefined, { raw: '{"jsonrpc":' });
    expect(bad.status).to.equal(400);
    expect((bad.json as { error: { code: number } }).error.code).to.equal(-32700);
    const batch = await rpc(h, SECRET_A, [listMessage(), listMessage()]);
    expect(batch.status).to.equal(400);
    const text = await rpc(h, SECRET_A, listMessage(), { headers: { "content-type": "text/plain" } });
    expect(text.status).to.equal(415);
  });

  it("the SDK transport's own answers pass through: 406, 400 for a bad version or message, 202 for a notification", async () => {
    const notAcceptable = await rpc(h, SECRET_A, listMessage(), { headers: { accept: "application/json" } });
    expect(notAcceptable.status).to.equal(406);
    expect((notAcceptable.json as { error: { code: number } }).error.code).to.equal(-32000);
    expect(notAcceptable.headers["cache-control"]).to.equal("no-store");
    const version = await rpc(h, SECRET_A, listMessage(), {
      headers: { "mcp-protocol-version": "1999-01-01" },
    });
    expect(version.status).to.equal(400);
    expect((version.json as { error: { message: string } }).error.message).to.match(/protocol version/);
    const known = await rpc(h, SECRET_A, listMessage(), {
      headers: { "mcp-protocol-version": "2025-06-18" },
    });
    expect(known.status).to.equal(200);
    const notRpc = await rpc(h, SECRET_A, { hello: "world" });
    expect(notRpc.status).to.equal(400);
    expect((notRpc.json as { error: { code: number; message: string } }).error).to.deep.include({
      code: -32700,
      message: "Parse error: Invalid JSON-RPC message",
    });
    const notification = await rpc(h, SECRET_A, { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(notification.status).to.equal(202);
    expect(notification.text).to.equal("");
    expect(notification.headers["content-length"]).to.equal("0");
    const answered = await rpc(h, SECRET_A, callMessage("echo", { text: "sized" }));
    expect(answered.status).to.equal(200);
    expect(answered.headers["content-length"]).to.equal(String(Buffer.byteLength(answered.text)));
    expect(answered.headers["transfer-encoding"]).to.equal(undefined);
  });

  it("two keys sending the same JSON-RPC id at once each get only their own tools and results", async () => {
    const same = (method: string, params: Record<string, unknown>) => ({
      jsonrpc: "2.0",
      id: 1,
      method,
      params,
    });
    const echo = (text: string) => same("tools/call", { name: "echo", arguments: { text } });
    const list = same("tools/list", {});
    // A's call stays in flight on its server while B's requests with the same id come and go.
    const slow = rpc(h, SECRET_A, same("tools/call", { name: "slow", arguments: { ignoreSignal: true } }));
    await h.registry.waitForSlow(1);
    const rounds = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        Promise.all([
          rpc(h, SECRET_A, echo(`from-A-${n}`)),
          rpc(h, SECRET_B, echo(`from-B-${n}`)),
          rpc(h, SECRET_A, list),
          rpc(h, SECRET_B, list),
          rpc(h, SECRET_A, same("tools/call", { name: "vault__read", arguments: {} })),
          rpc(h, SECRET_B, same("tools/call", { name: "vault__read", arguments: {} })),
        ]),
      ),
    );
    type Answer = {
      id: unknown;
      result: { content?: Array<{ text: string }>; tools?: Array<{ name: string }> };
    };
    rounds.forEach(([echoA, echoB, listA, listB, vaultA, vaultB], n) => {
      for (const reply of [echoA, echoB, listA, listB, vaultA, vaultB]) {
        expect(reply?.status).to.equal(200);
        expect((reply?.json as Answer).id).to.equal(1);
      }
      expect((echoA?.json as Answer).result.content?.[0]?.text).to.equal(`from-A-${n}`);
      expect((echoB?.json as Answer).result.content?.[0]?.text).to.equal(`from-B-${n}`);
      expect((listA?.json as Answer).result.tools?.map((tool) => tool.name)).to.deep.equal([...KEY_A.tools]);
      expect((listB?.json as Answer).result.tools?.map((tool) => tool.name)).to.deep.equal([...KEY_B.tools]);
      expect((vaultA?.json as Answer).result).to.deep.include({ isError: true });
      expect((vaultB?.json as Answer).result.content?.[0]?.text).to.equal("vault__read ran");
    });
    h.registry.releaseAll();
    const slowReply = await slow;
    expect((slowReply.json as Answer).id).to.equal(1);
    expect((slowReply.json as Answer).result.content?.[0]?.text).to.equal("slow released");
    // The registry was asked only with the key that sent each call.
    const byKey = h.registry.calls.filter((call) => call.name === "vault__read");
    expect(byKey.every((call) => call.keyId === "key-b")).to.equal(true);
  });

  it("logs one line per request with key id and a known method, and no secret, argument or result", async () => {
    await rpc(h, WRONG_SECRET, listMessage());
    await rpc(h, SECRET_A, { jsonrpc: "2.0", id: 9, method: `custom/${SECRET_B}`, params: {} });
    const lines = requestLines(h);
    expect(lines.length).to.be.greaterThan(10);
    for (const line of lines) {
      expect(Object.keys(line).sort()).to.deep.equal(["durationMs", "keyId", "method", "route", "status"]);
    }
    expect(
      lines.some((line) => line.method === "tools/call" && line.keyId === "key-a" && line.status === 200),
    ).to.equal(true);
    expect(lines.some((line) => line.status === 401 && line.keyId === null)).to.equal(true);
    expect(
      lines.some((line) => line.status === 200 && line.method === null && line.keyId === "key-a"),
    ).to.equal(true);
    const all = JSON.stringify(h.logs);
    for (const secret of [SECRET_A, SECRET_B, WRONG_SECRET, ECHO_MARKER, "xxxxxxxxxx"]) {
      expect(all).to.not.include(secret);
    }
  });
});
