import { type MethodContext, expectOk } from "../method-context.js";
import { ActionParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

export async function connectionAction(params: Record<string, unknown>, { runtime }: MethodContext) {
  const input = validateParams(ActionParams, params);
  return expectOk(runtime.action(input));
}
