import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "chai";
import { followAuthorization, startOAuthServer } from "../../fixtures/servers/oauth.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import {
  type Snapshot,
  beginAndWait,
  call,
  errorOf,
  oauthRedirectUri,
  resultOf,
  until,
  waitForPhase,
} from "../helpers/setup.js";

type OAuthServer = Awaited<ReturnType<typeof startOAuthServer>>;

/** Plays the owner's app: follows the authorization URL headlessly and delivers the callback. */
async function authorize(gw: TestGateway, op: Snapshot, profile: string | null = null) {
  expect(op.phase).to.equal("awaiting_authorization");
  const redirect = await followAuthorization(op.authorizationUrl ?? "");
  const callback = {
    code: redirect.searchParams.get("code") ?? undefined,
    state: redirect.searchParams.get("state") ?? "",
    iss: redirect.searchParams.get("iss") ?? undefined,
  };
  return { callback, reply: await call(gw, "mcp.setup.callback", { id: op.id, callback }, profile) };
}

interface ConnectionsList {
  connections: Array<{ name: string; status: string; tools: Array<{ name: string; exposed: boolean }> }>;
}

describe("native OAuth setup against a real authorization server", function () {
  this.timeout(90_000);
  let gw: TestGateway;
  let server: OAuthServer;
  const secrets: string[] = [];

  before(async () => {
    server = await startOAuthServer({ accessTokenTtlSeconds: 2 });
    gw = await startTestGateway({ profiles: ["a"] });
  });
  after(async () => {
    await gw.close();
    await server.close();
  });

  for (const profile of [null, "a"]) {
    it(`authorizes, reviews, confirms and calls a tool; refreshes; survives reauthorization (${profile ?? "root"})`, async () => {
      const awaiting = await beginAndWait(
        gw,
        { name: "secured", config: { url: server.url }, redirectUri: oauthRedirectUri() },
        ["awaiting_authorization", "failed"],
        profile,
      );
      expect(awaiting.phase, JSON.stringify(awaiting.error)).to.equal("awaiting_authorization");
      const authUrl = new URL(awaiting.authorizationUrl ?? "");
      expect(authUrl.searchParams.get("code_challenge_method")).to.equal("S256");
      expect(authUrl.searchParams.get("resource")).to.equal(server.url);
      expect((authUrl.searchParams.get("state") ?? "").length).to.be.at.least(32);
      expect(authUrl.searchParams.get("redirect_uri")).to.equal(oauthRedirectUri());

      const { callback, reply } = await authorize(gw, awaiting, profile);
      secrets.push(callback.code ?? "");
      expect(reply.status, reply.text).to.equal(200);
      // The same callback again is safe.
      const again = await call(gw, "mcp.setup.callback", { id: awaiting.id, callback }, profile);
      expect(again.status, again.text).to.equal(200);
      const review = await waitForPhase(gw, awaiting.id, ["review", "failed"], profile);
      expect(review.phase, JSON.stringify(review.error)).to.equal("review");
      const different = errorOf(
        await call(
          gw,
          "mcp.setup.callback",
          { id: awaiting.id, callback: { ...callback, code: "other" } },
          profile,
        ),
      );
      expect(different.code).to.equal("CONFLICT");

      const done = resultOf(
        await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }, profile),
      );
      expect(done).to.include({ phase: "complete", saved: true });
      expect(done.runtime?.status).to.equal("connected");

      const dir = profile === null ? join(gw.stateDir, "root") : join(gw.stateDir, "profiles", profile);
      const stored = JSON.parse(await readFile(join(dir, "secrets.json"), "utf8"));
      const oauth = stored.connections.secured.oauth;
      const held = [oauth.tokens.accessToken, oauth.tokens.refreshToken, oauth.client.clientId].filter(
        Boolean,
      );
      expect(held.length).to.be.at.least(2);
      secrets.push(...held);
      const listed = await call(gw, "mcp.connections.list", {}, profile);
      for (const secret of held) {
        expect(listed.text).not.to.contain(secret);
        expect(JSON.stringify(done)).not.to.contain(secret);
      }
      expect(await readFile(join(dir, "connections.json"), "utf8")).not.to.contain(oauth.tokens.accessToken);

      const tools = (profile === null ? gw.gateway.root : gw.gateway.profiles.get(profile))?.tools;
      const first = (await tools?.call("secured__echo", { text: "one" })) as {
        content: Array<{ text: string }>;
      };
      expect(first.content[0]?.text).to.contain("one");
      const refreshesBefore = server.counts().grants.refresh_token;
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      const second = (await tools?.call("secured__echo", { text: "two" })) as {
        content: Array<{ text: string }>;
      };
      expect(second.content[0]?.text).to.contain("two");
      expect(server.counts().grants.refresh_token).to.be.greaterThan(refreshesBefore);

      // A permission review after the stored access token expired reads the live session: no sign-in,
      // and no second spender of the refresh chain.
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      const permissions = await beginAndWait(
        gw,
        { name: "secured", intent: "permissions" },
        ["review", "failed"],
        profile,
      );
      expect(permissions.phase, JSON.stringify(permissions.error)).to.equal("review");
      const reconfirmed = resultOf(
        await call(gw, "mcp.setup.confirm", { id: permissions.id, permissions: { mode: "all" } }, profile),
      );
      expect(reconfirmed.phase).to.equal("complete");

      // A dead refresh chain shows as needs_auth; reauthorize repairs it and keeps the permissions.
      server.killRefreshChain();
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      await tools?.call("secured__echo", { text: "three" }).catch(() => undefined);
      await until(async () => {
        const list = resultOf<ConnectionsList>(await call(gw, "mcp.connections.list", {}, profile));
        return list.connections.find((c) => c.name === "secured")?.status === "needs_auth";
      });
      expect(tools?.names()).not.to.include("secured__echo");
      const reauth = await beginAndWait(
        gw,
        { name: "secured", intent: "reauthorize", redirectUri: oauthRedirectUri() },
        ["awaiting_authorization", "failed"],
        profile,
      );
      const repaired = await authorize(gw, reauth, profile);
      expect(repaired.reply.status, repaired.reply.text).to.equal(200);
      const complete = await waitForPhase(gw, reauth.id, ["complete", "failed"], profile);
      expect(complete.phase, JSON.stringify(complete.error)).to.equal("complete");
      expect(tools?.names()).to.include("secured__echo");
      const list = resultOf<ConnectionsList>(await call(gw, "mcp.connections.list", {}, profile));
      expect(list.connections.find((c) => c.name === "secured")?.status).to.equal("connected");

      const removed = resultOf(
        await call(
          gw,
          "mcp.connections.action",
          { name: "secured", requestId: `remove-${Date.now()}-secured`, action: "remove" },
          profile,
        ),
      );
      expect(removed.phase).to.equal("complete");
      const secretsFile = JSON.parse(await readFile(join(dir, "secrets.json"), "utf8"));
      expect(secretsFile.connections).not.to.have.property("secured");
    });
  }

  it("refuses a callback with the wrong state or issuer, and ends that operation", async () => {
    for (const tamper of [{ state: "x".repeat(43) }, { iss: "https://evil.example" }]) {
      const awaiting = await beginAndWait(
        gw,
        { name: "tamper", config: { url: server.url }, redirectUri: oauthRedirectUri() },
        ["awaiting_authorization"],
      );
      const redirect = await followAuthorization(awaiting.authorizationUrl ?? "");
      const callback = {
        code: redirect.searchParams.get("code") ?? "",
        state: redirect.searchParams.get("state") ?? "",
        iss: redirect.searchParams.get("iss") ?? undefined,
        ...tamper,
      };
      const refused = errorOf(await call(gw, "mcp.setup.callback", { id: awaiting.id, callback }));
      expect(refused.code).to.equal("OAUTH_INVALID");
      expect(refused.message).not.to.contain(callback.code);
      const failed = resultOf(await call(gw, "mcp.setup.status", { id: awaiting.id }));
      expect(failed.phase).to.equal("failed");
    }
  });

  it("fails clearly when the server needs OAuth and no redirectUri was given", async () => {
    const failed = await beginAndWait(gw, { name: "noredirect", config: { url: server.url } }, ["failed"]);
    expect(failed.error?.code).to.equal("OAUTH_INVALID");
    expect(failed.error?.message).to.contain("redirectUri");
  });

  it("never logs or returns a token, code or verifier", async () => {
    const everything = gw.logs.join("\n");
    for (const secret of secrets.filter((value) => value.length > 8))
      expect(everything).not.to.contain(secret);
    expect(everything).not.to.match(/eyJ[A-Za-z0-9_-]{20,}/);
    expect(everything.toLowerCase()).not.to.contain("code_verifier");
  });
});
