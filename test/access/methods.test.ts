import { createHash } from "node:crypto";
import { expect } from "chai";
import sinon from "sinon";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { keyId, makeSecret } from "../helpers/access.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import { beginAndWait, call, errorOf, resultOf } from "../helpers/setup.js";

interface KeyView {
  id: string;
  status: string;
  tools: string[];
  sessionKey: string;
  expiresAt: string;
}

describe("external access keys: catalog, create, list, revoke", function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let plain: Awaited<ReturnType<typeof startPlainServer>>;
  const session = "agent:main:main";

  before(async () => {
    plain = await startPlainServer();
    gw = await startTestGateway();
    const review = await beginAndWait(gw, { name: "plain", config: { url: plain.url } }, ["review"]);
    resultOf(await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }));
  });
  after(async () => {
    await gw.close();
    await plain.close();
  });

  const create = (params: Record<string, unknown>) => call(gw, "mcp.access.create", params);
  const base = () => ({
    id: keyId(),
    label: "Cursor",
    sessionKey: session,
    tools: ["plain__echo"],
    ttlSeconds: 3600,
  });

  it("advertises external access and lists conversations and eligible tools", async () => {
    const capabilities = resultOf<{ externalAgentAccess: boolean }>(await call(gw, "mcp.capabilities", {}));
    expect(capabilities.externalAgentAccess).to.equal(true);
    const catalog = resultOf<{
      conversations: Array<{ sessionKey: string; title: string }>;
      tools: Array<{ name: string; source: string }>;
    }>(await call(gw, "mcp.access.catalog", { sessionKey: session }));
    expect(catalog.conversations).to.deep.equal([{ sessionKey: session, title: "Main" }]);
    const names = catalog.tools.map((tool) => tool.name);
    expect(names).to.include.members([
      "conversation_recent_messages",
      "conversation_post_message",
      "plain__echo",
      "plain__add",
    ]);
    expect(errorOf(await call(gw, "mcp.access.catalog", { sessionKey: "agent:none:x" })).code).to.equal(
      "NOT_FOUND",
    );
  });

  it("creates from a digest only, idempotently per id, and lists it active", async () => {
    const { secret, digest } = makeSecret();
    const params = { ...base(), tokenDigest: digest };
    const first = resultOf<KeyView>(await create(params));
    expect(first).to.include({ id: params.id, status: "active", sessionKey: session });
    const again = resultOf<KeyView>(await create(params));
    expect(again.id).to.equal(first.id);
    expect(errorOf(await create({ ...params, label: "Other" })).code).to.equal("CONFLICT");
    expect(errorOf(await create({ ...base(), tokenDigest: digest })).code).to.equal("ACCESS_INVALID");
    const list = resultOf<{ credentials: KeyView[]; endpointPath: string; localEndpoint: string }>(
      await call(gw, "mcp.access.list", {}),
    );
    expect(list.endpointPath).to.equal("/mcp");
    expect(list.localEndpoint).to.equal(`${gw.url}/mcp`);
    expect(list.credentials.find((key) => key.id === first.id)?.status).to.equal("active");
    const text = JSON.stringify(list);
    expect(text).not.to.contain(digest);
    expect(text).not.to.contain(secret);
  });

  it("refuses what a key must never be", async () => {
    const gatewayDigest = createHash("sha256").update(gw.token).digest("hex");
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...base(), tokenDigest: gatewayDigest }, "ACCESS_INVALID"],
      [{ ...base(), tokenDigest: makeSecret().digest, tools: ["not_a_tool"] }, "ACCESS_INVALID"],
      [
        { ...base(), tokenDigest: makeSecret().digest, tools: ["plain__echo", "plain__echo"] },
        "INVALID_PARAMS",
      ],
      [{ ...base(), tokenDigest: makeSecret().digest, sessionKey: "agent:ghost:1" }, "NOT_FOUND"],
      [{ ...base(), tokenDigest: makeSecret().digest, ttlSeconds: 59 }, "INVALID_PARAMS"],
      [{ ...base(), tokenDigest: makeSecret().digest, ttlSeconds: 90 * 86_400 + 1 }, "INVALID_PARAMS"],
      [{ ...base(), tokenDigest: makeSecret().digest, tools: [] }, "INVALID_PARAMS"],
      [{ ...base(), tokenDigest: "ABC" }, "INVALID_PARAMS"],
      [{ ...base(), tokenDigest: makeSecret().digest, secret: "x" }, "INVALID_PARAMS"],
    ];
    for (const [params, code] of cases)
      expect(errorOf(await create(params)).code, JSON.stringify(params)).to.equal(code);
    expect(errorOf(await call(gw, "mcp.access.revoke", { id: "no-such-key" })).code).to.equal("NOT_FOUND");
  });

  it("revokes at once, expires on time, and marks keys of a deleted conversation unavailable", async () => {
    const revoked = resultOf<KeyView>(await create({ ...base(), tokenDigest: makeSecret().digest }));
    expect(resultOf<KeyView>(await call(gw, "mcp.access.revoke", { id: revoked.id })).status).to.equal(
      "revoked",
    );
    expect(resultOf<KeyView>(await call(gw, "mcp.access.revoke", { id: revoked.id })).status).to.equal(
      "revoked",
    );

    gw.gateway.root.conversations.create("agent:side:1", "Side");
    const orphan = resultOf<KeyView>(
      await create({ ...base(), sessionKey: "agent:side:1", tokenDigest: makeSecret().digest }),
    );
    gw.gateway.root.conversations.delete("agent:side:1");

    const clock = sinon.useFakeTimers({ now: Date.now(), toFake: ["Date"] });
    try {
      const short = resultOf<KeyView>(
        await create({ ...base(), ttlSeconds: 60, tokenDigest: makeSecret().digest }),
      );
      clock.tick(61_000);
      const list = resultOf<{ credentials: KeyView[] }>(await call(gw, "mcp.access.list", {}));
      const status = (id: string) => list.credentials.find((key) => key.id === id)?.status;
      expect(status(short.id)).to.equal("expired");
      expect(status(revoked.id)).to.equal("revoked");
      expect(status(orphan.id)).to.equal("unavailable");
    } finally {
      clock.restore();
    }
  });

  it("holds at most 256 keys", async () => {
    const existing = resultOf<{ credentials: KeyView[] }>(await call(gw, "mcp.access.list", {})).credentials
      .length;
    for (let index = existing; index < 256; index += 1) {
      resultOf(await create({ ...base(), tokenDigest: makeSecret().digest }));
    }
    expect(errorOf(await create({ ...base(), tokenDigest: makeSecret().digest })).code).to.equal(
      "LIMIT_REACHED",
    );
  });
});
