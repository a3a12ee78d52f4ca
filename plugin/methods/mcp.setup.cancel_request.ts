import { type MethodContext, expectOk } from "../method-context.js";
import { CancelRequestParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

/** Cancels by name and requestId, even when begin's answer was lost; a late begin with it is refused. */
export async function setupCancelRequest(params: Record<string, unknown>, { runtime }: MethodContext) {
  const { name, requestId } = validateParams(CancelRequestParams, params);
  return expectOk(runtime.cancelRequest(name, requestId));
}
