import { isIP } from "node:net";
import { methodError } from "../errors.js";
import { type MethodContext, expectOk } from "../method-context.js";
import { canonicalJson } from "../setup/canonical.js";
import type { Draft } from "../setup/operation.js";
import { BeginParams } from "../setup/params.js";
import { isAcceptedRedirectUri } from "../setup/redirect-uri.js";
import { validateParams } from "../validate.js";

export async function beginSetup(params: Record<string, unknown>, { runtime, described }: MethodContext) {
  const input = validateParams(BeginParams, params);
  const draftCount = [
    input.catalog !== undefined,
    input.config !== undefined,
    input.chatRequestId !== undefined,
  ].filter(Boolean).length;
  if (input.intent === "connect" && draftCount !== 1) {
    throw methodError(
      "INVALID_PARAMS",
      "A connect setup needs exactly one draft: catalog, config or chatRequestId.",
    );
  }
  if (input.intent !== "connect" && draftCount !== 0) {
    throw methodError(
      "INVALID_PARAMS",
      `A ${input.intent} setup works on the configured connection; send no draft.`,
    );
  }
  if (input.catalog === false) throw methodError("INVALID_PARAMS", "params.catalog must be true when sent.");
  if (input.envValues !== undefined && input.catalog !== true) {
    throw methodError("INVALID_PARAMS", "params.envValues goes with a catalog draft.");
  }
  if (input.chatRequestId !== undefined) {
    throw methodError("UNAVAILABLE", "Chat-request drafts are not available in this build (see chatSetup).");
  }
  if (
    input.redirectUri !== undefined &&
    !isAcceptedRedirectUri(input.redirectUri, described.oauthRedirectUris)
  ) {
    throw methodError(
      "INVALID_PARAMS",
      "params.redirectUri must be http://127.0.0.1:<port>/mcp/oauth/callback/<hex> or one of oauthRedirectUris.",
    );
  }
  const { draft, secrets } = await draftOf(input, runtime);
  return expectOk(
    runtime.begin({
      requestId: input.requestId,
      name: input.name,
      intent: input.intent,
      paramsForDigest: canonicalJson(input),
      draft,
      redirectUri: input.redirectUri ?? null,
      sessionKey: input.sessionKey ?? null,
      secrets,
    }),
  );
}

async function draftOf(
  input: BeginParams,
  runtime: MethodContext["runtime"],
): Promise<{ draft: Draft; secrets: { env: Record<string, string>; headers: Record<string, string> } }> {
  if (input.catalog === true) {
    const entry = await expectOk(runtime.catalogEntry(input.name));
    const values = input.envValues ?? {};
    const declared = new Set(entry.fields.map((field) => field.name));
    const undeclared = Object.keys(values).filter((name) => !declared.has(name));
    if (undeclared.length > 0) {
      throw methodError("CONFIG_INVALID", `Fields not declared by ${entry.id}: ${undeclared.join(", ")}.`);
    }
    const missing = [...declared].filter((name) => values[name] === undefined);
    if (missing.length > 0)
      throw methodError("CONFIG_INVALID", `Missing fields of ${entry.id}: ${missing.join(", ")}.`);
    return {
      draft: { kind: "catalog", catalogId: entry.id, envKeys: Object.keys(values).sort() },
      secrets: { env: { ...values }, headers: {} },
    };
  }
  if (input.config !== undefined) {
    const { url, command, args, env, headers } = input.config;
    if ((url === undefined) === (command === undefined)) {
      throw methodError("CONFIG_INVALID", "params.config needs exactly one of url or command.");
    }
    if (url !== undefined) {
      if (args !== undefined || env !== undefined) {
        throw methodError("CONFIG_INVALID", "params.config.args and env go with command, not url.");
      }
      checkServerUrl(url);
      return {
        draft: {
          kind: "custom",
          server: { url },
          envKeys: [],
          headerKeys: Object.keys(headers ?? {}).sort(),
        },
        secrets: { env: {}, headers: { ...(headers ?? {}) } },
      };
    }
    if (headers !== undefined)
      throw methodError("CONFIG_INVALID", "params.config.headers go with url, not command.");
    return {
      draft: {
        kind: "custom",
        server: { command: command ?? "", args: args ?? [] },
        envKeys: Object.keys(env ?? {}).sort(),
        headerKeys: [],
      },
      secrets: { env: { ...(env ?? {}) }, headers: {} },
    };
  }
  return { draft: { kind: "existing" }, secrets: { env: {}, headers: {} } };
}

/** HTTPS, or plain HTTP to this machine only: credentials never cross a network in the clear. */
function checkServerUrl(text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw methodError("CONFIG_INVALID", "params.config.url is not a URL.");
  }
  if (url.username !== "" || url.password !== "") {
    throw methodError("CONFIG_INVALID", "params.config.url must not carry credentials; use headers.");
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || (isIP(host) === 4 && host.startsWith("127."));
  if (url.protocol === "https:" || (url.protocol === "http:" && loopback)) return;
  throw methodError("CONFIG_INVALID", "params.config.url must be https (plain http only to this machine).");
}
