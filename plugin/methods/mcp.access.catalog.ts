import { type MethodContext, expectOk } from "../method-context.js";
import { AccessCatalogParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

/** The conversations a key can be bound to, and the tools a key may be given. */
export async function accessCatalog(params: Record<string, unknown>, { runtime }: MethodContext) {
  const { sessionKey } = validateParams(AccessCatalogParams, params);
  return expectOk(runtime.accessCatalog(sessionKey));
}
