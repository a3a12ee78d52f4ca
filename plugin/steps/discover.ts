import { type ErrorData, methodError } from "../errors.js";
import { discover } from "../mcp-client/discover.js";
import { beginAuthorization } from "../mcp-client/oauth.js";
import { type MethodContext, expectOk } from "../method-context.js";
import type { StepInput } from "../runtime-api.js";

const DISCOVERY_TIMEOUT_MS = 15_000;
const RETRY_DELAY_MS = 100;

/**
 * The setup step after begin (and after an OAuth code exchange): reach the server, and either record what
 * it offers (review), start an authorization (awaiting_authorization), or fail with a reason.
 */
export async function discoverStep(params: Record<string, unknown>, { runtime }: MethodContext) {
  const id = String(params.id);
  const input = await expectOk(runtime.stepInput(id));
  const { operation } = input;
  if (operation.phase !== "checking") return null;
  if (operation.intent === "reauthorize" && input.accessToken === null)
    return authorize(input, null, runtime);
  if (input.liveDiscovery !== null) return expectOk(runtime.toReview(id, input.liveDiscovery));
  const options = { accessToken: input.accessToken, timeoutMs: DISCOVERY_TIMEOUT_MS };
  let outcome = await discover(input.target, options);
  // A connection dropped under us (a reused keep-alive socket the server had just closed, say) is not a
  // verdict on the server: one more try before telling the owner it is unreachable.
  if (outcome.kind === "failed" && outcome.reason === "unreachable") {
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
    outcome = await discover(input.target, options);
  }
  if (outcome.kind === "ok") return expectOk(runtime.toReview(id, outcome.discovery));
  if (outcome.kind === "failed") {
    return expectOk(runtime.fail(id, { code: "CONNECTION_FAILED", message: outcome.message }));
  }
  // A stored token the server refuses (expired, revoked) sends a review back through sign-in when it can.
  if (input.accessToken !== null && (operation.intent === "connect" || operation.redirectUri === null)) {
    return expectOk(
      runtime.fail(id, {
        code: "OAUTH_INVALID",
        message: "The server refused the token its authorization server issued.",
      }),
    );
  }
  return authorize(input, outcome.resourceMetadataUrl, runtime);
}

async function authorize(
  input: StepInput,
  resourceMetadataUrl: string | null,
  runtime: MethodContext["runtime"],
) {
  const { operation, target } = input;
  if (target.kind !== "http") {
    return expectOk(
      runtime.fail(operation.id, { code: "CONFIG_INVALID", message: "Only HTTP servers use OAuth." }),
    );
  }
  if (operation.redirectUri === null) {
    return expectOk(
      runtime.fail(operation.id, {
        code: "OAUTH_INVALID",
        message: "This server needs an OAuth sign-in: begin again with a redirectUri (see mcp.capabilities).",
      }),
    );
  }
  try {
    const transaction = await beginAuthorization({
      serverUrl: target.url,
      resourceMetadataUrl,
      redirectUri: operation.redirectUri,
      preRegistered: input.preRegisteredClient,
      clientName: "mcp-manage",
    });
    return expectOk(runtime.toAwaiting(operation.id, transaction));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const failure: ErrorData =
      code === "OAUTH_INVALID" || code === "CONNECTION_FAILED"
        ? { code, message: (error as Error).message }
        : { code: "OAUTH_INVALID", message: "The authorization server could not be used." };
    await expectOk(runtime.fail(operation.id, failure));
    throw methodError(failure.code, failure.message);
  }
}
