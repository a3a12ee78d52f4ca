import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { startFailingServer } from "../../fixtures/servers/failing.js";
import { type OAuthServer, followAuthorization, startOAuthServer } from "../../fixtures/servers/oauth.js";
import { startPlainServer } from "../../fixtures/servers/plain.js";
import { toErrorData } from "../../plugin/errors.js";
import { discover } from "../../plugin/mcp-client/discover.js";
import {
  beginAuthorization,
  checkCallback,
  exchangeCode,
  isDeadChain,
  refreshTokens,
} from "../../plugin/mcp-client/oauth.js";
import type { OAuthCallback } from "../../plugin/mcp-client/types.js";

const redirectUri = `http://127.0.0.1:9/mcp/oauth/callback/${randomBytes(16).toString("hex")}`;
const TTL_SECONDS = 2;

async function rejection(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(Error);
    return error as Error & Record<string, unknown>;
  }
  return expect.fail("expected a rejection");
}

function callbackOf(url: URL): OAuthCallback {
  const get = (name: string) => url.searchParams.get(name) ?? undefined;
  return { code: get("code"), error: get("error"), state: get("state") ?? "", iss: get("iss") };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe("mcp-client OAuth", () => {
  let server: OAuthServer;
  /** Every message this suite saw from the OAuth code, checked for secrets at the end. */
  const messages: string[] = [];
  const secrets: string[] = [];
  const begin = (overrides: Partial<Parameters<typeof beginAuthorization>[0]> = {}) =>
    beginAuthorization({
      serverUrl: server.url,
      resourceMetadataUrl: server.resourceMetadataUrl,
      redirectUri,
      preRegistered: null,
      clientName: "mcp-manage tests",
      ...overrides,
    });

  before(async () => {
    server = await startOAuthServer({ accessTokenTtlSeconds: TTL_SECONDS });
  });
  after(async () => {
    await server.close();
  });

  it("runs the whole flow: DCR, PKCE, state, resource, iss, code exchange, refresh with rotation, dead chain", async () => {
    const tx = await begin();
    const url = new URL(tx.authorizationUrl);
    expect(url.origin).to.equal(server.issuer);
    expect(tx.state).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(Object.fromEntries(url.searchParams)).to.include({
      response_type: "code",
      client_id: tx.client.clientId,
      code_challenge_method: "S256",
      redirect_uri: redirectUri,
      state: tx.state,
      scope: server.scope,
      resource: server.url,
    });
    expect(tx.binding).to.include({
      authorizationServerUrl: server.issuer,
      resource: server.url,
      scope: server.scope,
    });
    expect(tx.client.clientSecret).to.equal(null);
    expect(server.counts().registrations).to.equal(1);
    secrets.push(tx.codeVerifier, tx.state);

    const back = await followAuthorization(tx.authorizationUrl);
    const callback = callbackOf(back);
    const checked = checkCallback(tx, callback);
    if (!checked.ok) expect.fail(checked.message);
    secrets.push(checked.code);

    const now = () => 1_000_000;
    const tokens = await exchangeCode(tx, checked.code, { now });
    expect(tokens.tokenType).to.equal("Bearer");
    expect(tokens.expiresAt).to.equal(1_000_000 + TTL_SECONDS * 1000);
    expect(tokens.refreshToken).to.be.a("string");
    secrets.push(tokens.accessToken, tokens.refreshToken ?? "");

    const target = { kind: "http" as const, url: server.url, headers: {} };
    const first = await discover(target, { timeoutMs: 5000, accessToken: tokens.accessToken });
    expect(first.kind, JSON.stringify(first)).to.equal("ok");

    await sleep(TTL_SECONDS * 1000 + 100);
    const expired = await discover(target, { timeoutMs: 5000, accessToken: tokens.accessToken });
    expect(expired).to.deep.equal({ kind: "auth_required", resourceMetadataUrl: server.resourceMetadataUrl });

    const refreshed = await refreshTokens(tx.binding, tx.client, tokens.refreshToken ?? "", {
      now: () => 2_000_000,
    });
    secrets.push(refreshed.accessToken, refreshed.refreshToken ?? "");
    expect(refreshed.accessToken).to.not.equal(tokens.accessToken);
    expect(refreshed.refreshToken).to.be.a("string").and.not.equal(tokens.refreshToken);
    expect(refreshed.expiresAt).to.equal(2_000_000 + TTL_SECONDS * 1000);
    const again = await discover(target, { timeoutMs: 5000, accessToken: refreshed.accessToken });
    expect(again.kind).to.equal("ok");
    expect(server.counts().grants).to.deep.equal({ authorization_code: 1, refresh_token: 1 });

    expect(server.killRefreshChain()).to.equal(1);
    const dead = await rejection(refreshTokens(tx.binding, tx.client, refreshed.refreshToken ?? "", { now }));
    expect(dead).to.include({ name: "MethodError", code: "OAUTH_INVALID", dead: true });
    expect(isDeadChain(dead)).to.equal(true);
    expect(toErrorData(dead)).to.deep.equal({
      data: { code: "OAUTH_INVALID", message: dead.message },
      expected: true,
    });
    messages.push(dead.message);
    expect(server.serverErrors).to.deep.equal([]);

    // A code is single use (and oidc-provider revokes what it issued on reuse, so this comes last).
    const reused = await rejection(exchangeCode(tx, checked.code, { now }));
    expect(reused).to.include({ code: "OAUTH_INVALID" });
    expect(isDeadChain(reused)).to.equal(false);
    expect(reused.message).to.include("invalid_grant");
    messages.push(reused.message);

    // Callback checks, on the real transaction.
    const refusals: Array<[string, OAuthCallback]> = [
      [
        "state mismatch",
        { ...callback, state: `${tx.state.slice(0, -1)}${tx.state.endsWith("A") ? "B" : "A"}` },
      ],
      ["state mismatch", { ...callback, state: "short" }],
      ["iss mismatch", { ...callback, iss: `${server.issuer}/` }],
      ["RFC 9207", { ...callback, iss: undefined }],
      [
        "access_denied",
        { state: tx.state, iss: server.issuer, error: "access_denied", errorDescription: "nope" },
      ],
      [
        "refused the request.",
        { state: tx.state, iss: server.issuer, error: "weird_error", errorDescription: "x" },
      ],
      ["no authorization code", { state: tx.state, iss: server.issuer }],
    ];
    for (const [expected, bad] of refusals) {
      const result = checkCallback(tx, bad);
      if (result.ok) expect.fail(`accepted a callback that should fail with ${expected}`);
      expect(result.message).to.include(expected);
      expect(result.message).to.not.include("weird_error");
      messages.push(result.message);
    }
  });

  it("reuses a pre-registered client, finds metadata at the well-known location, and sends back a denial", async () => {
    const first = await begin();
    const registrations = server.counts().registrations;
    const tx = await begin({ preRegistered: first.client, resourceMetadataUrl: null, scope: "mcp:tools" });
    expect(server.counts().registrations).to.equal(registrations);
    expect(tx.client).to.deep.equal(first.client);
    expect(tx.state).to.not.equal(first.state);
    const back = await followAuthorization(tx.authorizationUrl, { deny: true });
    const result = checkCallback(tx, callbackOf(back));
    expect(result).to.deep.equal({
      ok: false,
      message: "Access was denied at the authorization server (access_denied).",
    });
  });

  it("uses the injected randomBytes for state", async () => {
    const tx = await begin({ randomBytes: (n) => Buffer.alloc(n, 7) });
    expect(tx.state).to.equal(Buffer.alloc(32, 7).toString("base64url"));
    expect(tx.state).to.have.length(43);
  });

  it("refuses metadata for a different resource, a server without OAuth, and an unreachable one", async () => {
    const other = await rejection(begin({ serverUrl: server.url.replace(/\/mcp$/, "/elsewhere") }));
    expect(other).to.include({ code: "OAUTH_INVALID" });
    expect(other.message).to.include("different resource");

    const plain = await startPlainServer();
    try {
      const none = await rejection(begin({ serverUrl: plain.url, resourceMetadataUrl: null }));
      expect(none).to.include({ code: "OAUTH_INVALID" });
      messages.push(none.message);
    } finally {
      await plain.close();
    }

    const unreachable = await rejection(
      begin({ serverUrl: "http://127.0.0.1:9/mcp", resourceMetadataUrl: null }),
    );
    expect(unreachable).to.include({ code: "CONNECTION_FAILED" });
    messages.push(other.message, unreachable.message);

    const hang = await startFailingServer("hang");
    try {
      const started = Date.now();
      const slow = await rejection(begin({ serverUrl: hang.url, resourceMetadataUrl: null, timeoutMs: 300 }));
      expect(slow).to.include({ code: "CONNECTION_FAILED" });
      expect(slow.message).to.include("timed out");
      expect(Date.now() - started).to.be.lessThan(2000);
    } finally {
      await hang.close();
    }
  });

  it("never puts a code, verifier, state or token in a message", () => {
    expect(secrets.filter((s) => s.length > 0)).to.have.length.greaterThan(5);
    expect(messages).to.have.length.greaterThan(8);
    for (const message of messages) {
      for (const secret of secrets) if (secret) expect(message).to.not.include(secret);
    }
  });
});
