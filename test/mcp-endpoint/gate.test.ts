import { connect } from "node:net";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "chai";
import type { Reply } from "../helpers/http.js";
import { type Harness, connectClient, listMessage, presentPeerAs, rpc, startEndpoint } from "./harness.js";
import { SECRET_A, SECRET_B, WRONG_SECRET } from "./registry-double.js";

function errorCode(reply: Reply): string | undefined {
  return (reply.json as { error?: { data?: { code?: string } } } | undefined)?.error?.data?.code;
}

function expectRefused(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).to.equal(status);
  expect(errorCode(reply)).to.equal(code);
  expect(reply.headers["cache-control"]).to.equal("no-store");
  expect(reply.headers["content-type"]).to.match(/^application\/json/);
  expect(Object.keys(reply.headers).filter((name) => name.startsWith("access-control-"))).to.deep.equal([]);
}

/** Sends raw bytes and resolves with everything the server wrote before closing. */
function rawRequest(h: Harness, bytes: string): Promise<string> {
  const { port } = new URL(h.base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
  });
}

describe("/mcp endpoint: the gate", () => {
  describe("over plain HTTP", () => {
    let h: Harness;
    before(async () => {
      h = await startEndpoint();
    });
    after(async () => h.close());

    describe("credentials", () => {
      it("no Authorization header → 401 with WWW-Authenticate: Bearer", async () => {
        const reply = await rpc(h, null, listMessage());
        expectRefused(reply, 401, "UNAUTHORIZED");
        expect(reply.headers["www-authenticate"]).to.equal("Bearer");
      });

      it("an unknown key → 401 invalid_token, and the secret is not echoed", async () => {
        const reply = await rpc(h, WRONG_SECRET, listMessage());
        expectRefused(reply, 401, "UNAUTHORIZED");
        expect(reply.headers["www-authenticate"]).to.equal('Bearer error="invalid_token"');
        expect(reply.text).to.not.include(WRONG_SECRET);
      });

      it("another scheme → 401", async () => {
        const reply = await rpc(h, null, listMessage(), { headers: { authorization: `Basic ${SECRET_A}` } });
        expectRefused(reply, 401, "UNAUTHORIZED");
        expect(reply.headers["www-authenticate"]).to.equal("Bearer");
      });

      it("an X-Service-Token header → 401, even beside a valid key", async () => {
        const reply = await rpc(h, SECRET_A, listMessage(), {
          headers: { "x-service-token": "gateway-token" },
        });
        expectRefused(reply, 401, "UNAUTHORIZED");
        expect(reply.headers["www-authenticate"]).to.match(/^Bearer/);
      });

      it("two Authorization headers → 401, even when the first is valid", async () => {
        const reply = await rpc(h, null, listMessage(), {
          headers: { authorization: [`Bearer ${SECRET_A}`, `Bearer ${SECRET_B}`] },
        });
        expectRefused(reply, 401, "UNAUTHORIZED");
      });

      it("the SDK client with a wrong key fails to connect with HTTP 401", async () => {
        let failure: unknown;
        try {
          await connectClient(h.url, WRONG_SECRET);
        } catch (error) {
          failure = error;
        }
        expect(failure).to.be.instanceOf(StreamableHTTPError);
        expect((failure as StreamableHTTPError).code).to.equal(401);
      });

      it("a key revoked between requests gets 401 at once", async () => {
        const other = await startEndpoint();
        try {
          const client = await connectClient(other.url, SECRET_B);
          await client.listTools();
          other.registry.revoke("key-b");
          const reply = await rpc(other, SECRET_B, listMessage());
          expectRefused(reply, 401, "UNAUTHORIZED");
          expect(reply.headers["www-authenticate"]).to.equal('Bearer error="invalid_token"');
          await client.close();
        } finally {
          await other.close();
        }
      });
    });

    describe("browser origins, query strings, transport", () => {
      it("any Origin header → 403, even a loopback one with a valid key", async () => {
        for (const origin of ["http://127.0.0.1", "https://evil.example", "null", "app://desktop"]) {
          const reply = await rpc(h, SECRET_A, listMessage(), { headers: { origin } });
          expectRefused(reply, 403, "SECURE_TRANSPORT_REQUIRED");
        }
      });

      it("a query string → 400, even an empty one, and the key in it is never accepted", async () => {
        for (const path of [`/mcp?access_token=${SECRET_A}`, "/mcp?x=1"]) {
          const reply = await rpc(h, SECRET_A, listMessage(), { path });
          expectRefused(reply, 400, "INVALID_REQUEST");
          expect(reply.text).to.not.include(SECRET_A);
        }
        // A URL object drops a bare "?", so that one goes over a raw socket.
        const head = await rawRequest(
          h,
          `POST /mcp? HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${SECRET_A}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
        );
        expect(head).to.match(/^HTTP\/1\.1 400 /);
      });

      it("a non-loopback Host header → 403, whatever the forwarding headers claim", async () => {
        for (const host of ["gateway.example.com", "evil.example:8080", "10.0.0.5"]) {
          const reply = await rpc(h, SECRET_A, listMessage(), {
            headers: { host, "x-forwarded-proto": "https", forwarded: "proto=https;for=127.0.0.1" },
          });
          expectRefused(reply, 403, "SECURE_TRANSPORT_REQUIRED");
        }
      });

      it("loopback Host names pass: localhost, 127.x, [::1]", async () => {
        for (const host of ["localhost", "127.0.0.1:1", "[::1]:8080", "app.localhost"]) {
          const reply = await rpc(h, SECRET_A, listMessage(), { headers: { host } });
          expect(reply.status, host).to.equal(200);
        }
      });

      const peers: Array<[string, number]> = [
        ["203.0.113.7", 403],
        ["::ffff:10.0.0.1", 403],
        ["2001:db8::1", 403],
        ["127.0.0.1", 200],
        ["::ffff:127.0.0.1", 200],
      ];
      for (const [address, status] of peers) {
        it(`a socket peer at ${address} with a valid key → ${status}`, async () => {
          const restore = presentPeerAs(h, address);
          try {
            const reply = await rpc(h, SECRET_A, listMessage(), {
              headers: { "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1" },
            });
            expect(reply.status).to.equal(status);
            if (status === 403) expectRefused(reply, 403, "SECURE_TRANSPORT_REQUIRED");
          } finally {
            restore();
          }
        });
      }

      it("the transport is checked before the key: a remote peer with no key gets 403, not 401", async () => {
        const restore = presentPeerAs(h, "198.51.100.4");
        try {
          const reply = await rpc(h, null, listMessage(), { headers: { origin: "https://evil.example" } });
          expectRefused(reply, 403, "SECURE_TRANSPORT_REQUIRED");
        } finally {
          restore();
        }
      });
    });
  });

  describe("over TLS", () => {
    let h: Harness;
    before(async () => {
      h = await startEndpoint({ tls: true });
    });
    after(async () => h.close());

    it("a TLS socket counts, whatever the peer and the Host name", async () => {
      const restore = presentPeerAs(h, "203.0.113.7");
      try {
        // The Host name is not in the test certificate, so this one request skips the name check.
        const reply = await rpc(h, SECRET_A, listMessage(), {
          headers: { host: "gateway.example.com" },
          insecure: true,
        });
        expect(reply.status).to.equal(200);
        const refused = await rpc(h, null, listMessage());
        expectRefused(refused, 401, "UNAUTHORIZED");
      } finally {
        restore();
      }
    });
  });
});
