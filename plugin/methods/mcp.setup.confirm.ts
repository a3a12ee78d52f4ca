import { methodError } from "../errors.js";
import { type MethodContext, expectOk } from "../method-context.js";
import { approve } from "../setup/approval.js";
import { ConfirmParams } from "../setup/params.js";
import { validateParams } from "../validate.js";

/** Publishes the owner's explicit permissions, then applies them; `saved` and `runtime` report each. */
export async function setupConfirm(params: Record<string, unknown>, { runtime }: MethodContext) {
  const { id, permissions } = validateParams(ConfirmParams, params);
  const { operation } = await expectOk(runtime.stepInput(id));
  if (operation.discovery === null) {
    if (operation.phase === "expired" || operation.phase === "cancelled")
      return expectOk(runtime.confirm(id, permissions, {}));
    throw methodError("NOT_READY", `The operation is ${operation.phase}; confirm needs review.`);
  }
  const approved = approve(permissions, operation.discovery);
  return expectOk(runtime.confirm(id, permissions, approved));
}
