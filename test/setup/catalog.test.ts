import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "chai";
import { followAuthorization, startOAuthServer } from "../../fixtures/servers/oauth.js";
import { STDIO_SERVER_PATH } from "../../fixtures/servers/stdio-path.js";
import { type TestGateway, startTestGateway } from "../helpers/gateway.js";
import { beginAndWait, call, errorOf, oauthRedirectUri, resultOf, waitForPhase } from "../helpers/setup.js";

type OAuthServer = Awaited<ReturnType<typeof startOAuthServer>>;

/** Registers a client at the fixture's authorization server out of band, as a catalog publisher would. */
async function preRegister(server: OAuthServer): Promise<string> {
  const metadata = (await (
    await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)
  ).json()) as {
    registration_endpoint: string;
  };
  const response = await fetch(metadata.registration_endpoint, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      redirect_uris: [oauthRedirectUri()],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      scope: server.scope,
    }),
  });
  const client = (await response.json()) as { client_id?: string };
  if (client.client_id === undefined) throw new Error(`pre-registration failed: ${response.status}`);
  return client.client_id;
}

describe("catalog drafts", function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let server: OAuthServer;
  let clientId: string;

  before(async () => {
    server = await startOAuthServer();
    clientId = await preRegister(server);
    const catalogFile = join(
      await import("node:os").then((os) => os.tmpdir()),
      `catalog-${process.pid}.json`,
    );
    await writeFile(
      catalogFile,
      JSON.stringify({
        version: 1,
        entries: [
          {
            id: "local-tools",
            title: "Local tools",
            command: process.execPath,
            args: [STDIO_SERVER_PATH],
            fields: [{ name: "FIXTURE_API_KEY", label: "API key" }],
          },
          { id: "secured", title: "Secured", url: server.url, fields: [], oauthClient: { clientId } },
        ],
      }),
    );
    gw = await startTestGateway({ pluginOptions: { catalogFile } });
  });
  after(async () => {
    await gw.close();
    await server.close();
  });

  it("lists the catalog, and connects an entry with its declared field", async () => {
    const list = resultOf<{
      catalog: Array<{ id: string; configured: boolean; fields: Array<{ name: string }> }>;
    }>(await call(gw, "mcp.connections.list", {}));
    expect(list.catalog.map((entry) => entry.id)).to.deep.equal(["local-tools", "secured"]);
    expect(list.catalog[0]?.fields.map((field) => field.name)).to.deep.equal(["FIXTURE_API_KEY"]);

    const secret = "catalog-field-secret-31337";
    const review = await beginAndWait(
      gw,
      { name: "local-tools", catalog: true, envValues: { FIXTURE_API_KEY: secret } },
      ["review", "failed"],
    );
    expect(review.phase, JSON.stringify(review.error)).to.equal("review");
    const done = resultOf(
      await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }),
    );
    expect(done.runtime?.status).to.equal("connected");
    const echoed = (await gw.gateway.root.tools.call("local-tools__env_echo", {
      name: "FIXTURE_API_KEY",
    })) as {
      content: Array<{ text: string }>;
    };
    expect(echoed.content[0]?.text).to.contain(secret);
    const after = resultOf<{ catalog: Array<{ id: string; configured: boolean }> }>(
      await call(gw, "mcp.connections.list", {}),
    );
    expect(after.catalog.find((entry) => entry.id === "local-tools")?.configured).to.equal(true);
    // Only an entry not yet configured can be set up from the catalog.
    const again = errorOf(
      await call(gw, "mcp.setup.begin", {
        name: "local-tools",
        requestId: "again-0123456789abcdef",
        catalog: true,
        envValues: { FIXTURE_API_KEY: "x" },
      }),
    );
    expect(again.code).to.equal("CONFIG_INVALID");
    expect(gw.logs.join("\n")).not.to.contain(secret);
  });

  it("uses the catalog's pre-registered OAuth client instead of registering one", async () => {
    const registrations = server.counts().registrations;
    const awaiting = await beginAndWait(
      gw,
      { name: "secured", catalog: true, redirectUri: oauthRedirectUri() },
      ["awaiting_authorization", "failed"],
    );
    expect(awaiting.phase, JSON.stringify(awaiting.error)).to.equal("awaiting_authorization");
    expect(new URL(awaiting.authorizationUrl ?? "").searchParams.get("client_id")).to.equal(clientId);
    const redirect = await followAuthorization(awaiting.authorizationUrl ?? "");
    const reply = await call(gw, "mcp.setup.callback", {
      id: awaiting.id,
      callback: {
        code: redirect.searchParams.get("code") ?? "",
        state: redirect.searchParams.get("state") ?? "",
        iss: redirect.searchParams.get("iss") ?? undefined,
      },
    });
    expect(reply.status, reply.text).to.equal(200);
    const review = await waitForPhase(gw, awaiting.id, ["review", "failed"]);
    expect(review.phase, JSON.stringify(review.error)).to.equal("review");
    const done = resultOf(
      await call(gw, "mcp.setup.confirm", { id: review.id, permissions: { mode: "all" } }),
    );
    expect(done.runtime?.status).to.equal("connected");
    expect(server.counts().registrations).to.equal(registrations);
  });
});
