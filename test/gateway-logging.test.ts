import { Writable } from "node:stream";
import { expect } from "chai";
import { pino } from "pino";
import { LOG_SERIALIZERS } from "../fixtures/gateway/logging.js";

describe("the reference gateway's log redaction", () => {
  function capture() {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString("utf8"));
        callback();
      },
    });
    return { logger: pino({ serializers: LOG_SERIALIZERS }, sink), lines };
  }

  it("hides a token field and the token headers of a logged request, and keeps the rest", () => {
    const { logger, lines } = capture();
    logger.info({ token: "tok-secret-1" }, "a");
    logger.info(
      {
        req: {
          method: "POST",
          headers: { authorization: "Bearer tok-secret-2", "x-service-token": "tok-3", host: "h" },
        },
      },
      "b",
    );
    const text = lines.join("");
    for (const secret of ["tok-secret-1", "tok-secret-2", "tok-3"]) expect(text).not.to.contain(secret);
    const second = JSON.parse(lines[1] ?? "{}") as {
      req: { method: string; headers: Record<string, string> };
    };
    expect(second.req.method).to.equal("POST");
    expect(second.req.headers).to.deep.equal({
      authorization: "[Redacted]",
      "x-service-token": "[Redacted]",
      host: "h",
    });
  });

  it("leaves fields that carry no secret as they are", () => {
    const { logger, lines } = capture();
    logger.info({ method: "mcp.capabilities", status: 200, req: "not an object" }, "c");
    const line = JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
    expect(line.method).to.equal("mcp.capabilities");
    expect(line.req).to.equal("not an object");
  });
});
