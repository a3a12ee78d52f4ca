import { type MethodContext, expectOk } from "../method-context.js";
import { AccessListParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

export async function accessList(params: Record<string, unknown>, { runtime }: MethodContext) {
  validateParams(AccessListParams, params);
  return expectOk(runtime.accessList());
}
