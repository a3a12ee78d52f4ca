import { expect } from "chai";
import { type TestGateway, startTestGateway } from "./helpers/gateway.js";
import { manage, send } from "./helpers/http.js";

/** Secrets planted everywhere a careless logger might pick them up. */
const PLANTED = [
  "sk-live-PLANTED-env-value-7f3a",
  "oauth-code-PLANTED-91b2",
  "verifier-PLANTED-c0ffee",
  "refresh-PLANTED-4d5e",
  "wrong-token-PLANTED-8a8a",
];

describe("logs never carry a secret", function () {
  this.timeout(30_000);
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ profiles: ["a"] });
  });
  after(async () => gw.close());

  it("a run with the token both ways, setup credentials and bad input logs none of them", async () => {
    const [envValue, code, verifier, refresh, wrong] = PLANTED as [string, string, string, string, string];
    const requests = [
      manage(gw.url, gw.token, { method: "mcp.capabilities" }),
      send({
        url: gw.url,
        json: { method: "mcp.capabilities" },
        headers: { "content-type": "application/json", "x-service-token": gw.token },
      }),
      manage(gw.url, gw.token, { method: "mcp.capabilities" }, { headers: { "x-service-token": gw.token } }),
      manage(gw.url, wrong, { method: "mcp.capabilities" }),
      send({ url: gw.url, path: `/api/mcp/manage?token=${gw.token}`, json: { method: "mcp.capabilities" } }),
      manage(gw.url, gw.token, {
        method: "mcp.setup.begin",
        params: {
          name: "svc",
          requestId: "req-0123456789abcdef",
          catalog: true,
          envValues: { API_KEY: envValue },
        },
      }),
      manage(gw.url, gw.token, {
        method: "mcp.setup.callback",
        params: { id: "op", callback: { code, state: verifier } },
        profile: "a",
      }),
      manage(gw.url, gw.token, { method: refresh }),
      manage(gw.url, gw.token, { method: "mcp.capabilities", params: { x: envValue } }),
      manage(gw.url, gw.token, { method: "mcp.capabilities", profile: envValue }),
      manage(gw.url, gw.token, { method: "mcp.capabilities", [code]: 1 }),
      send({
        url: gw.url,
        raw: `{"method": "${verifier}`,
        headers: { "content-type": "application/json", authorization: `Bearer ${gw.token}` },
      }),
    ];
    const replies = await Promise.all(requests);
    expect(replies.map((reply) => reply.status)).to.deep.equal([
      200, 200, 200, 401, 401, 400, 400, 400, 400, 404, 400, 400,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gw.logs.length).to.be.at.least(replies.length);
    const everything = gw.logs.join("\n");
    for (const secret of [gw.token, ...PLANTED]) expect(everything).not.to.contain(secret);
    for (const reply of replies)
      for (const secret of [gw.token, ...PLANTED]) expect(reply.text).not.to.contain(secret);
  });

  it("writes one line per request with method, status, duration and profile only", async () => {
    const before = gw.logs.length;
    await manage(gw.url, gw.token, { method: "mcp.connections.list", profile: "a" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const lines = gw.logs.slice(before).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).to.have.length(1);
    const [line] = lines as [Record<string, unknown>];
    expect(line).to.include({ method: "mcp.connections.list", status: 200, profile: "a" });
    expect(line.durationMs).to.be.a("number");
    expect(Object.keys(line).sort()).to.deep.equal([
      "durationMs",
      "hostname",
      "level",
      "method",
      "msg",
      "pid",
      "profile",
      "status",
      "time",
    ]);
  });
});
