import { type MethodContext, expectOk } from "../method-context.js";
import { AccessRevokeParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

/** Revokes at once: the next request with the key gets 401 and calls in flight are cancelled. */
export async function accessRevoke(params: Record<string, unknown>, { runtime }: MethodContext) {
  const { id } = validateParams(AccessRevokeParams, params);
  return expectOk(runtime.accessRevoke(id));
}
