import type { Socket } from "node:net";
import { expect } from "chai";
import { isLoopbackAddress } from "../host-shim/transport.js";
import { type TestGateway, startTestGateway } from "./helpers/gateway.js";
import { manage } from "./helpers/http.js";

/**
 * The non-loopback rule through the real handler: a socket seam makes the gateway's own socket report
 * another peer address, as it would for a connection from the network. Removing the check fails these.
 */
function presentPeerAs(gw: TestGateway, address: string): () => void {
  const server = gw.gateway.httpServer;
  const event = gw.ca === undefined ? "connection" : "secureConnection";
  const seam = (socket: Socket) =>
    Object.defineProperty(socket, "remoteAddress", { value: address, configurable: true });
  server.prependListener(event, seam);
  return () => server.off(event, seam);
}

describe("transport: TLS or a loopback peer", () => {
  describe("over plain HTTP", () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway();
    });
    after(async () => gw.close());

    const cases: Array<[string, number]> = [
      ["203.0.113.7", 403],
      ["10.0.0.1", 403],
      ["::ffff:10.0.0.1", 403],
      ["2001:db8::1", 403],
      ["128.0.0.1", 403],
      ["127.0.0.1", 200],
      ["127.9.8.7", 200],
      ["::1", 200],
      ["::ffff:127.0.0.1", 200],
    ];
    for (const [address, status] of cases) {
      it(`a peer at ${address} gets ${status}`, async () => {
        const restore = presentPeerAs(gw, address);
        try {
          const reply = await manage(gw.url, gw.token, { method: "mcp.capabilities" });
          expect(reply.status).to.equal(status);
          if (status === 403) {
            expect((reply.json as { error: { code: string } }).error.code).to.equal(
              "SECURE_TRANSPORT_REQUIRED",
            );
            expect(reply.headers["cache-control"]).to.equal("no-store");
          }
        } finally {
          restore();
        }
      });
    }

    it("forwarding headers never establish trust", async () => {
      const restore = presentPeerAs(gw, "198.51.100.4");
      try {
        const reply = await manage(
          gw.url,
          gw.token,
          { method: "mcp.capabilities" },
          {
            headers: {
              forwarded: "for=127.0.0.1;proto=https",
              "x-forwarded-for": "127.0.0.1",
              "x-forwarded-proto": "https",
              "x-real-ip": "127.0.0.1",
            },
          },
        );
        expect(reply.status).to.equal(403);
      } finally {
        restore();
      }
    });

    it("checks transport before the token: a remote peer with no token learns nothing else", async () => {
      const restore = presentPeerAs(gw, "198.51.100.4");
      try {
        const reply = await manage(gw.url, "wrong", { method: "nope" });
        expect(reply.status).to.equal(403);
      } finally {
        restore();
      }
    });
  });

  describe("over TLS", () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ tls: true });
    });
    after(async () => gw.close());

    it("accepts a non-loopback peer on a TLS socket", async () => {
      const restore = presentPeerAs(gw, "203.0.113.7");
      try {
        const reply = await manage(gw.url, gw.token, { method: "mcp.capabilities" }, { ca: gw.ca });
        expect(reply.status).to.equal(200);
      } finally {
        restore();
      }
    });
  });

  describe("an IPv6 loopback listener", () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ host: "::1" });
    });
    after(async () => gw.close());

    it("serves a ::1 peer", async () => {
      expect(gw.url).to.match(/^http:\/\/\[::1\]:\d+$/);
      const reply = await manage(gw.url, gw.token, { method: "mcp.capabilities" });
      expect(reply.status).to.equal(200);
    });
  });

  it("classifies addresses as a dual-stack listener reports them", () => {
    expect(isLoopbackAddress("::ffff:127.0.0.1")).to.equal(true);
    expect(isLoopbackAddress("::FFFF:127.1.2.3")).to.equal(true);
    expect(isLoopbackAddress("::ffff:192.168.0.1")).to.equal(false);
    expect(isLoopbackAddress("::2")).to.equal(false);
    expect(isLoopbackAddress(undefined)).to.equal(false);
    expect(isLoopbackAddress("127.0.0.1.evil")).to.equal(false);
    expect(isLoopbackAddress("")).to.equal(false);
  });
});
