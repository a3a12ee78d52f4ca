import { request } from "node:http";
import { connect } from "node:net";
import { expect } from "chai";
import { type TestGateway, startTestGateway } from "./helpers/gateway.js";
import { manage } from "./helpers/http.js";

interface RawExchange {
  response: string;
  bytesSent: number;
  error: string | null;
}

/**
 * A client that keeps sending its body in pieces while it reads: it must receive the whole 413 frame
 * before the connection ends, and never an RST in its place.
 */
function uploadWhileReading(
  url: string,
  token: string,
  head: string,
  totalBytes: number,
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const piece = Buffer.alloc(16 * 1024, 0x20);
    let bytesSent = 0;
    let response = "";
    let error: string | null = null;
    // As fast as the socket takes it, so unread bytes sit in the server's receive buffer when it closes.
    const pump = () => {
      while (!socket.destroyed && socket.writable && bytesSent < totalBytes) {
        const chunk = piece.subarray(0, Math.min(piece.length, totalBytes - bytesSent));
        bytesSent += chunk.length;
        const framed = head.includes("chunked") ? `${chunk.length.toString(16)}\r\n${chunk}\r\n` : chunk;
        if (!socket.write(framed)) {
          socket.once("drain", pump);
          return;
        }
      }
    };
    socket.on("connect", () => {
      socket.write(head.replace("$TOKEN", token));
      pump();
    });
    socket.on("data", (data) => {
      response += data.toString("latin1");
    });
    socket.on("error", (err: NodeJS.ErrnoException) => {
      error = err.code ?? "error";
    });
    socket.on("close", () => {
      resolve({ response, bytesSent, error });
    });
  });
}

function parseResponse(raw: string): { status: number; headers: string; body: string } {
  const split = raw.indexOf("\r\n\r\n");
  const headers = raw.slice(0, split);
  return {
    status: Number(headers.split(" ")[1]),
    headers: headers.toLowerCase(),
    body: raw.slice(split + 4),
  };
}

describe("body limit: 413 reaches a client that is still sending", function () {
  this.timeout(30_000);
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => gw.close());

  const announced = (length: number) =>
    `POST /api/mcp/manage HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer $TOKEN\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  const chunked =
    "POST /api/mcp/manage HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer $TOKEN\r\n" +
    "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

  it("announced too large: answers before the body, drains, closes gracefully", async () => {
    const exchange = await uploadWhileReading(gw.url, gw.token, announced(4 * 1024 * 1024), 4 * 1024 * 1024);
    const reply = parseResponse(exchange.response);
    expect(reply.status).to.equal(413);
    expect(reply.headers).to.contain("cache-control: no-store");
    expect(reply.headers).to.contain("connection: close");
    expect(JSON.parse(reply.body)).to.deep.equal({
      error: { code: "TOO_LARGE", message: "The request body exceeds 256 KiB." },
    });
    expect(exchange.error).to.equal(null);
  });

  it("chunked past the limit: stops at 256 KiB and answers while the client still sends", async () => {
    const exchange = await uploadWhileReading(gw.url, gw.token, chunked, 2 * 1024 * 1024);
    const reply = parseResponse(exchange.response);
    expect(reply.status).to.equal(413);
    expect(JSON.parse(reply.body)).to.have.nested.property("error.code", "TOO_LARGE");
    expect(exchange.error).to.equal(null);
  });

  it("a 401 with an unread body also closes gracefully", async () => {
    const head = announced(2 * 1024 * 1024).replace("$TOKEN", "wrong-token");
    const exchange = await uploadWhileReading(gw.url, gw.token, head, 2 * 1024 * 1024);
    expect(parseResponse(exchange.response).status).to.equal(401);
    expect(exchange.error).to.equal(null);
  });

  it("a node http client streaming 10 MiB reads the 413", async () => {
    const { hostname, port } = new URL(gw.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: hostname,
          port,
          method: "POST",
          path: "/api/mcp/manage",
          headers: {
            authorization: `Bearer ${gw.token}`,
            "content-type": "application/json",
            "content-length": 10 * 1024 * 1024,
          },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("error", reject);
      const piece = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const write = () => {
        while (sent < 10 * 1024 * 1024) {
          sent += piece.length;
          if (!req.write(piece)) {
            req.once("drain", write);
            return;
          }
        }
        req.end();
      };
      write();
    });
    expect(status).to.equal(413);
  });

  it("keeps serving after many oversized uploads", async () => {
    await Promise.all(
      Array.from({ length: 16 }, () =>
        uploadWhileReading(gw.url, gw.token, announced(1024 * 1024), 1024 * 1024),
      ),
    );
    const reply = await manage(gw.url, gw.token, { method: "mcp.capabilities" });
    expect(reply.status).to.equal(200);
  });
});
