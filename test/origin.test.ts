import { expect } from "chai";
import fc from "fast-check";
import { hostNameOf, hostNameThroughUrl as throughUrl } from "../host-shim/origin.js";

describe("origin: the host name of a Host header", () => {
  it("answers a loopback name without the URL parser exactly as the parser would", () => {
    const cases = [
      "127.0.0.1",
      "127.0.0.1:18789",
      "127.255.255.255:65535",
      "127.0.0.1:65536",
      "127.0.0.1:00080",
      "127.000.0.1",
      "127.1",
      "127.0.0.256",
      "LOCALHOST:80",
      "localhost:",
      "localhost.",
      "a.localhost",
      "[::1]:80",
      "127.0.0.1:80:80",
    ];
    for (const host of cases) expect(hostNameOf(host), host).to.equal(throughUrl(host));
    const octet = fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.stringMatching(/^0\d{1,2}$/));
    const port = fc.oneof(
      fc.constant(""),
      fc.integer({ min: 0, max: 99999 }).map((n) => `:${n}`),
      fc.constant(":"),
    );
    const loopbackish = fc
      .tuple(fc.constantFrom("127", "localhost", "LocalHost", "128"), fc.array(octet, { maxLength: 4 }), port)
      .map(([head, rest, tail]) => `${head}${rest.map((part) => `.${part}`).join("")}${tail}`);
    fc.assert(
      fc.property(fc.oneof(loopbackish, fc.string({ maxLength: 24 })), (host) => {
        expect(hostNameOf(host)).to.equal(throughUrl(host));
      }),
      { numRuns: 2000 },
    );
  });
});
