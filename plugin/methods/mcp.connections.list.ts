import { object } from "superstruct";
import { type MethodContext, expectOk } from "../method-context.js";
import { validateParams } from "../validate.js";

const ListParams = object({});

export async function listConnections(params: Record<string, unknown>, { runtime }: MethodContext) {
  validateParams(ListParams, params);
  return expectOk(runtime.listConnections());
}
