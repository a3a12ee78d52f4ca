import { methodError } from "../errors.js";
import { checkCallback, exchangeCode } from "../mcp-client/oauth.js";
import { type MethodContext, expectOk } from "../method-context.js";
import { canonicalJson } from "../setup/canonical.js";
import { CallbackParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

/**
 * Delivers an OAuth callback to its operation. The transaction is single use: a callback whose state or
 * issuer does not match ends the operation; the same callback again is answered with the operation.
 */
export async function setupCallback(params: Record<string, unknown>, { runtime, now }: MethodContext) {
  const { id, callback } = validateParams(CallbackParams, params);
  const forDigest = canonicalJson(callback);
  const { operation, transaction } = await expectOk(runtime.stepInput(id));
  if (
    operation.callbackDigest !== null ||
    operation.phase !== "awaiting_authorization" ||
    transaction === null
  ) {
    // The runtime decides: a duplicate, a different callback (CONFLICT) or the wrong phase.
    await expectOk(runtime.claimCallback(id, forDigest));
    return expectOk(runtime.operation(id));
  }
  const checked = checkCallback(transaction, {
    code: callback.code,
    error: callback.error,
    errorDescription: callback.error_description,
    state: callback.state,
    iss: callback.iss,
  });
  if (!checked.ok) {
    await expectOk(runtime.fail(id, { code: "OAUTH_INVALID", message: checked.message }));
    throw methodError("OAUTH_INVALID", checked.message);
  }
  const claim = await expectOk(runtime.claimCallback(id, forDigest));
  if (claim.kind === "duplicate") return expectOk(runtime.operation(id));
  let tokens: Awaited<ReturnType<typeof exchangeCode>>;
  try {
    tokens = await exchangeCode(claim.transaction, checked.code, { now });
  } catch (error) {
    const message =
      (error as { code?: unknown }).code === "OAUTH_INVALID" && typeof (error as Error).message === "string"
        ? (error as Error).message
        : "The authorization server refused the code.";
    await expectOk(runtime.fail(id, { code: "OAUTH_INVALID", message }));
    throw methodError("OAUTH_INVALID", message);
  }
  return expectOk(runtime.afterExchange(id, { transaction: claim.transaction, tokens }));
}
