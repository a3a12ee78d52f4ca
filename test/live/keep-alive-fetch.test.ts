import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "chai";
import { selfSignedPair } from "../../fixtures/gateway/tls.js";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import {
  BufferedResponse,
  MAX_BUFFERED_BYTES,
  keepAliveFetch,
} from "../../host-shim/live/keep-alive-fetch.js";
import { TokenKeeper, connectFetch } from "../../host-shim/live/tokens.js";
import type { LiveSpec } from "../../host-shim/live/types.js";
import { networkProblemOf } from "../../plugin/mcp-client/observed-fetch.js";
import { closedPort } from "../helpers/ports.js";
import { MemoryVault, httpTarget, permissions, rejection, spec, waitFor } from "./helpers.js";

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Fixture {
  url: string;
  server: Server;
  /** Every request as the server saw it, with the client's port (the same port: the same socket). */
  seen: Array<{
    method: string;
    url: string;
    headers: IncomingMessage["headers"];
    body: string;
    port: number;
  }>;
  /** Sockets the server has seen close. */
  closed: Socket[];
  close(): Promise<void>;
}

async function serve(handler: Handler, tls?: { cert: string; key: string }): Promise<Fixture> {
  const seen: Fixture["seen"] = [];
  const closed: Socket[] = [];
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body,
        port: req.socket.remotePort ?? 0,
      });
      handler(req, res, body);
    });
  };
  const server = tls === undefined ? createServer(listener) : createHttpsServer(tls, listener);
  server.on("connection", (socket: Socket) => socket.once("close", () => closed.push(socket)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls === undefined ? "http" : "https"}://127.0.0.1:${port}/mcp`,
    server,
    seen,
    closed,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const post = (body: string, signal?: AbortSignal): RequestInit => ({
  method: "POST",
  redirect: "manual",
  headers: new Headers({ "content-type": "application/json", accept: "application/json, text/event-stream" }),
  body,
  ...(signal === undefined ? {} : { signal }),
});

describe("live connections: the keep-alive fetch of the Streamable HTTP transport", () => {
  const fixtures: Fixture[] = [];
  async function start(handler: Handler, tls?: { cert: string; key: string }): Promise<Fixture> {
    const fixture = await serve(handler, tls);
    fixtures.push(fixture);
    return fixture;
  }
  afterEach(async () => {
    await Promise.all(fixtures.splice(0).map((fixture) => fixture.close()));
  });

  it("sends the method, headers and body, reads a JSON answer whole, and reuses its socket", async () => {
    const f = await start((_req, res, body) => {
      res.writeHead(200, { "content-type": "application/json", "x-extra": "1" }).end(body);
    });
    const first = await keepAliveFetch(f.url, post('{"n":1}'));
    expect(first.status).to.equal(200);
    expect(first.ok).to.equal(true);
    expect(first.headers.get("x-extra")).to.equal("1");
    expect(await first.json()).to.deep.equal({ n: 1 });
    const second = await keepAliveFetch(new URL(f.url), post('{"n":2}'));
    expect(await second.json()).to.deep.equal({ n: 2 });
    expect(f.seen.map((request) => [request.method, request.body])).to.deep.equal([
      ["POST", '{"n":1}'],
      ["POST", '{"n":2}'],
    ]);
    expect(f.seen[0]?.headers["content-type"]).to.equal("application/json");
    expect(f.seen[0]?.headers["content-length"]).to.equal("7");
    // Kept alive: a run of requests one after another shares its connections.
    for (let n = 3; n <= 8; n += 1) await (await keepAliveFetch(f.url, post(`{"n":${n}}`))).json();
    expect(new Set(f.seen.map((request) => request.port)).size).to.be.at.most(2);
  });

  it("a JSON answer read whole behaves as a Response in every way a body can be read", async () => {
    const make = () =>
      new BufferedResponse('{"a":1}', {
        status: 200,
        statusText: "OK",
        headers: new Headers({ "content-type": "application/json" }),
      });
    const once = make();
    expect(once).to.be.instanceOf(Response);
    expect([once.status, once.ok, once.bodyUsed, once.headers.get("content-type")]).to.deep.equal([
      200,
      true,
      false,
      "application/json",
    ]);
    expect(await once.json()).to.deep.equal({ a: 1 });
    expect(once.bodyUsed).to.equal(true);
    expect(await rejection(once.text())).to.be.instanceOf(TypeError);
    expect(() => once.clone()).to.throw(TypeError);
    const streamed = make();
    expect(await new Response(streamed.body).text()).to.equal('{"a":1}');
    expect(streamed.bodyUsed).to.equal(true);
    expect(await rejection(streamed.json())).to.be.instanceOf(TypeError);
    const cloned = make();
    const copy = cloned.clone();
    expect([await copy.text(), await cloned.text()]).to.deep.equal(['{"a":1}', '{"a":1}']);
    expect(new TextDecoder().decode(await make().arrayBuffer())).to.equal('{"a":1}');
    expect((await make().blob()).size).to.equal(7);
    const cancelled = make();
    await cancelled.body?.cancel();
    expect(cancelled.bodyUsed).to.equal(true);
    const broken = new BufferedResponse("not json", { status: 200 });
    expect(await rejection(broken.json())).to.be.instanceOf(SyntaxError);
  });

  it("rejects with the signal's reason when aborted before or while waiting, and drops the socket", async () => {
    const f = await start(() => {
      // Never answers.
    });
    const early = new AbortController();
    early.abort(new Error("stop early"));
    expect(((await rejection(keepAliveFetch(f.url, post("{}", early.signal)))) as Error).message).to.equal(
      "stop early",
    );
    expect(f.seen).to.have.length(0);
    const late = new AbortController();
    const pending = keepAliveFetch(f.url, post("{}", late.signal));
    await waitFor("the request", () => f.seen.length === 1);
    const reason = new Error("stop late");
    late.abort(reason);
    expect(await rejection(pending)).to.equal(reason);
    await waitFor("the socket to close", () => f.closed.length >= 1);
  });

  it("streams an SSE answer as it arrives, and an abort ends the stream and the socket", async () => {
    const f = await start((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('event: message\ndata: {"first":true}\n\n');
      // The stream stays open.
    });
    const controller = new AbortController();
    const response = await keepAliveFetch(f.url, post("{}", controller.signal));
    expect(response.headers.get("content-type")).to.equal("text/event-stream");
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(Buffer.from(first.value ?? []).toString("utf8")).to.include('{"first":true}');
    const reason = new Error("client closed");
    controller.abort(reason);
    expect(await rejection(reader.read())).to.equal(reason);
    await waitFor("the socket to close", () => f.closed.length >= 1);
  });

  it("frees the socket of an answer whose body is cancelled unread, and adds one listener per signal", async () => {
    const f = await start((req, res, body) => {
      if (req.url === "/accepted") res.writeHead(202, { "content-type": "text/plain" }).end("queued");
      else res.writeHead(200, { "content-type": "application/json" }).end(body);
    });
    const base = f.url.replace(/\/mcp$/, "");
    const accepted = await keepAliveFetch(`${base}/accepted`, post("{}"));
    expect(accepted.status).to.equal(202);
    await accepted.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 10));
    const again = await keepAliveFetch(f.url, post('{"again":true}'));
    expect(await again.json()).to.deep.equal({ again: true });
    // The socket of the cancelled answer went back to the pool and served the next request.
    expect(f.seen[1]?.port).to.equal(f.seen[0]?.port);
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      // One transport's signal, many requests at once: no listener pile-up on it.
      const shared = new AbortController();
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, n) => keepAliveFetch(f.url, post(`{"n":${n}}`, shared.signal))),
      );
      expect(
        (await Promise.all(answers.map((answer) => answer.json() as Promise<{ n: number }>))).map(
          (json) => json.n,
        ),
      ).to.have.length(40);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.map((warning) => warning.name)).to.not.include("MaxListenersExceededWarning");
  });

  it("streams a JSON answer larger than it buffers, intact", async () => {
    const big = JSON.stringify({ text: "x".repeat(MAX_BUFFERED_BYTES + 1000) });
    const f = await start((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(big.slice(0, 1000));
      setTimeout(() => res.end(big.slice(1000)), 10);
    });
    const response = await keepAliveFetch(f.url, post("{}"));
    expect(await response.text()).to.equal(big);
  });

  it("never follows a redirect: the 3xx answer comes back as it is", async () => {
    const f = await start((req, res) => {
      if (req.url === "/mcp") res.writeHead(307, { location: "/elsewhere" }).end();
      else res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    const response = await keepAliveFetch(f.url, post("{}"));
    expect(response.status).to.equal(307);
    expect(response.headers.get("location")).to.equal("/elsewhere");
    expect(f.seen.map((request) => request.url)).to.deep.equal(["/mcp"]);
  });

  it("fails below HTTP as fetch does, with the codes the failure classification reads", async () => {
    const refused = await rejection(keepAliveFetch(`http://127.0.0.1:${await closedPort()}/mcp`, post("{}")));
    expect(refused).to.be.instanceOf(TypeError);
    expect((refused as Error).message).to.equal("fetch failed");
    expect(networkProblemOf(refused)).to.deep.equal({ kind: "refused" });

    const reset = await start((req) => req.socket.destroy());
    expect(networkProblemOf(await rejection(keepAliveFetch(reset.url, post("{}"))))).to.deep.equal({
      kind: "network",
    });

    const cut = await start((req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"partial":');
      setTimeout(() => req.socket.destroy(), 10);
    });
    expect(networkProblemOf(await rejection(keepAliveFetch(cut.url, post("{}"))))).to.deep.equal({
      kind: "network",
    });
  });

  it("verifies TLS by default: a self-signed server is refused with a TLS code", async () => {
    const f = await start(
      (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      },
      await selfSignedPair(),
    );
    const problem = networkProblemOf(await rejection(keepAliveFetch(f.url, post("{}"))));
    expect(problem?.kind).to.equal("tls");
    expect(f.seen).to.have.length(0);
  });

  it("decodes a gzip answer, as fetch does", async () => {
    const f = await start((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.end(gzipSync('{"zipped":true}'));
    });
    const response = await keepAliveFetch(f.url, post("{}"));
    expect(response.headers.get("content-encoding")).to.equal(null);
    expect(await response.json()).to.deep.equal({ zipped: true });
    expect(f.seen[0]?.headers["accept-encoding"]).to.include("gzip");
  });

  it("leaves what it does not handle to the global fetch (here: a redirect that is followed)", async () => {
    const f = await start((req, res) => {
      if (req.url === "/mcp") res.writeHead(302, { location: "/elsewhere" }).end();
      else res.writeHead(200, { "content-type": "application/json" }).end('{"moved":true}');
    });
    const response = await keepAliveFetch(f.url, { method: "GET" });
    expect(response.status).to.equal(200);
    expect(await response.json()).to.deep.equal({ moved: true });
  });

  it("is what a live connection's transport sends with, unless a fetch is injected", () => {
    const keeper = new TokenKeeper("c", {
      vault: new MemoryVault(),
      now: () => Date.now(),
      onDead: () => undefined,
    });
    const plainSpec = spec("c", httpTarget("http://127.0.0.1:1/mcp"), permissions());
    expect(connectFetch(plainSpec, keeper, undefined)).to.deep.equal({ transportFetch: keepAliveFetch });
    const injected: typeof fetch = (input, init) => fetch(input, init);
    expect(connectFetch(plainSpec, keeper, injected)).to.deep.equal({ fetch: injected });
    const stdioSpec = spec("c", { kind: "stdio", command: "x", args: [], env: {} }, permissions());
    expect(connectFetch(stdioSpec, keeper, undefined)).to.deep.equal({});
    const oauthSpec = { ...plainSpec, oauth: {} as NonNullable<LiveSpec["oauth"]> };
    const oauth = connectFetch(oauthSpec, keeper, undefined);
    // Both wrap the bearer handling; only the transport's goes over the keep-alive fetch.
    expect(typeof oauth.fetch).to.equal("function");
    expect(typeof oauth.transportFetch).to.equal("function");
    expect(oauth.transportFetch).to.not.equal(oauth.fetch);
    expect(Object.keys(connectFetch(oauthSpec, keeper, injected))).to.deep.equal(["fetch"]);
  });

  it("carries a whole MCP session of the SDK's Streamable HTTP client", async () => {
    const plain = await startPlainServer();
    try {
      const transport = new StreamableHTTPClientTransport(new URL(plain.url), { fetch: keepAliveFetch });
      const client = new Client({ name: "keep-alive-test", version: "1.0.0" });
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).to.include("echo");
      const result = await client.callTool({ name: "echo", arguments: { text: "through node:http" } });
      expect(JSON.stringify(result.content)).to.include("through node:http");
      await transport.terminateSession();
      await client.close();
    } finally {
      await plain.close();
    }
  });
});
