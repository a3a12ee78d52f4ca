import { expect } from "chai";
import { type OAuthServer, followAuthorization, startOAuthServer } from "../../fixtures/servers/oauth.js";
import type { LiveSpec } from "../../host-shim/live/types.js";
import { beginAuthorization, checkCallback, exchangeCode } from "../../plugin/mcp-client/oauth.js";
import type { StoredTokens } from "../../plugin/mcp-client/types.js";
import { currentHashes, harness, httpTarget, permissions, sleep, spec, textOf } from "./helpers.js";

const REDIRECT_URI = "http://127.0.0.1:9/mcp/oauth/callback/0123456789abcdef0123456789abcdef";

/** The owner's setup, done with the plugin's own OAuth client: begin → browser → callback → code exchange. */
async function authorize(
  server: OAuthServer,
): Promise<{ oauth: NonNullable<LiveSpec["oauth"]>; tokens: StoredTokens }> {
  const tx = await beginAuthorization({
    serverUrl: server.url,
    resourceMetadataUrl: server.resourceMetadataUrl,
    redirectUri: REDIRECT_URI,
    preRegistered: null,
    clientName: "mcp-manage live test",
  });
  const back = await followAuthorization(tx.authorizationUrl);
  const check = checkCallback(tx, {
    code: back.searchParams.get("code") ?? undefined,
    state: back.searchParams.get("state") ?? "",
    iss: back.searchParams.get("iss") ?? undefined,
  });
  if (!check.ok) throw new Error(check.message);
  const tokens = await exchangeCode(tx, check.code, { now: Date.now });
  return { oauth: { binding: tx.binding, client: tx.client }, tokens };
}

describe("LiveConnections: OAuth", function () {
  this.timeout(30_000);
  let server: OAuthServer;

  beforeEach(async () => {
    server = await startOAuthServer({ accessTokenTtlSeconds: 2 });
  });
  afterEach(async () => {
    await server.close();
    expect(server.serverErrors).to.deep.equal([]);
  });

  it("refreshes before expiry, single-flight under 20 concurrent calls, and goes needs_auth when the chain dies", async () => {
    const h = harness();
    const { oauth, tokens } = await authorize(server);
    h.vault.tokens.set("secure", tokens);
    const target = httpTarget(server.url);
    const approved = await currentHashes(target, tokens.accessToken);
    try {
      const status = await h.live.apply(spec("secure", target, permissions({ approved }), { oauth }));
      expect(status.status).to.equal("connected");
      expect(h.registry.names()).to.deep.equal(["secure__add", "secure__echo"]);
      expect(textOf(await h.registry.call("secure__echo", { text: "one" }))).to.equal("one");

      // Past the access token's lifetime: the call refreshes first, and the new tokens were saved first.
      await sleep(2100);
      const grantsBefore = server.counts().grants.refresh_token;
      expect(textOf(await h.registry.call("secure__add", { a: 1, b: 2 }))).to.equal("3");
      expect(server.counts().grants.refresh_token).to.equal(grantsBefore + 1);
      expect(h.vault.saves.at(-1)?.tokens.accessToken).to.equal(h.vault.get("secure")?.accessToken);
      expect(h.vault.get("secure")?.refreshToken).to.not.equal(tokens.refreshToken);

      // Right after expiry, 20 calls at once: exactly one refresh_token grant, every call succeeds.
      await sleep(2100);
      const before = server.counts();
      const savesBefore = h.vault.saves.length;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => h.registry.call("secure__add", { a: i, b: 1 })),
      );
      expect(results.map(textOf)).to.deep.equal(Array.from({ length: 20 }, (_, i) => String(i + 1)));
      const after = server.counts();
      expect(after.grants.refresh_token - before.grants.refresh_token).to.equal(1);
      expect(after.grantErrors.refresh_token).to.equal(0);
      expect(h.vault.saves.length - savesBefore).to.equal(1);

      // The chain dies: the next refresh is refused, the connection needs the owner, nothing retries.
      expect(server.killRefreshChain()).to.equal(1);
      await sleep(2100);
      const dead = await h.registry.call("secure__echo", { text: "x" }).catch((e: unknown) => e);
      expect(dead).to.have.property("code", "NEEDS_AUTH");
      const final = h.live.status("secure");
      expect(final?.status).to.equal("needs_auth");
      expect(final?.reason).to.match(/authorize/);
      expect(final?.tools.every((t) => !t.exposed)).to.equal(true);
      expect(h.registry.names()).to.deep.equal([]);
      const errors = server.counts().grantErrors.refresh_token;
      expect(errors).to.equal(1);
      await sleep(300);
      expect(server.counts().grantErrors.refresh_token).to.equal(errors);
      const direct = await h.live
        .callTool("secure", "echo", { text: "x" }, new AbortController().signal)
        .catch((e) => e);
      expect(direct).to.have.property("code", "NEEDS_AUTH");
      expect(server.counts().grantErrors.refresh_token).to.equal(errors);

      const logs = JSON.stringify(h.logger.entries);
      for (const saved of h.vault.saves) {
        expect(logs).to.not.include(saved.tokens.accessToken);
        expect(logs).to.not.include(saved.tokens.refreshToken ?? "no refresh token");
      }
      expect(JSON.stringify(final)).to.not.include(tokens.accessToken);
    } finally {
      await h.live.close();
    }
  });

  it("refreshes on a 401 when the expiry is unknown, and a new authorization after needs_auth reconnects", async () => {
    const h = harness();
    const { oauth, tokens } = await authorize(server);
    // No expiresAt: nothing to refresh ahead of, so the server's 401 is what triggers the refresh.
    h.vault.tokens.set("secure", { ...tokens, expiresAt: null });
    const target = httpTarget(server.url);
    const approved = await currentHashes(target, tokens.accessToken);
    try {
      await h.live.apply(spec("secure", target, permissions({ approved }), { oauth }));
      expect(h.registry.names()).to.deep.equal(["secure__add", "secure__echo"]);
      await sleep(2100);
      const before = server.counts();
      expect(textOf(await h.registry.call("secure__echo", { text: "after a 401" }))).to.equal("after a 401");
      const after = server.counts();
      expect(after.unauthorized - before.unauthorized).to.equal(1);
      expect(after.grants.refresh_token - before.grants.refresh_token).to.equal(1);
      expect(h.vault.saves).to.have.length(1);

      // No refresh token at all: needs_auth at once, without asking the authorization server.
      h.vault.tokens.set("secure", { ...tokens, refreshToken: null, expiresAt: Date.now() - 1 });
      const secure = spec("secure", target, permissions({ approved }), { oauth });
      expect((await h.live.apply({ ...secure, enabled: false })).status).to.equal("disabled");
      const stale = await h.live.apply(secure);
      expect(stale.status).to.equal("needs_auth");
      expect(h.registry.names()).to.deep.equal([]);
      expect(server.counts().grantErrors.refresh_token).to.equal(0);

      // The owner authorizes again (setup saves new tokens); applying the spec reconnects.
      const again = await authorize(server);
      h.vault.tokens.set("secure", again.tokens);
      const back = await h.live.apply(
        spec("secure", target, permissions({ approved }), { oauth: again.oauth }),
      );
      expect(back.status).to.equal("connected");
      expect(h.registry.names()).to.deep.equal(["secure__add", "secure__echo"]);
      expect(textOf(await h.registry.call("secure__add", { a: 20, b: 22 }))).to.equal("42");
    } finally {
      await h.live.close();
    }
  });
});
