import { type MethodContext, expectOk } from "../method-context.js";
import { IdParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

export async function setupStatus(params: Record<string, unknown>, { runtime }: MethodContext) {
  const { id } = validateParams(IdParams, params);
  return expectOk(runtime.operation(id));
}
