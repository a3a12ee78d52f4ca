import { type MethodContext, expectOk } from "../method-context.js";
import { PendingParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

/** Retained operations, finished ones included (each must be read by its phase). */
export async function setupPending(params: Record<string, unknown>, { runtime }: MethodContext) {
  const { sessionKey } = validateParams(PendingParams, params);
  return { operations: await expectOk(runtime.operations({ sessionKey })) };
}
