import { type MethodContext, expectOk } from "../method-context.js";
import { AccessCreateParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

/** Records a key the owner reviewed: its secret's digest, one conversation, exact tools, an expiry. */
export async function accessCreate(params: Record<string, unknown>, { runtime }: MethodContext) {
  const input = validateParams(AccessCreateParams, params);
  return expectOk(runtime.accessCreate(input));
}
