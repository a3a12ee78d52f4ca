import type { Struct, StructError } from "superstruct";
import { methodError } from "./errors.js";

/**
 * Checks params at the boundary. The message names where the input is wrong, never what it held:
 * superstruct's own messages quote the value, which may be a credential.
 */
export function validateParams<T, S>(struct: Struct<T, S>, value: unknown): T {
  const [error, valid] = struct.validate(value, { coerce: true });
  if (error === undefined) return valid as T;
  throw methodError("INVALID_PARAMS", describeFailure(error));
}

export function describeFailure(error: StructError): string {
  const failure = error.failures()[0] ?? error;
  const where = failure.path.length > 0 ? `params.${failure.path.join(".")}` : "params";
  if (failure.type === "never") return `${where} is not an accepted field.`;
  if (failure.value === undefined && failure.type !== "never") return `${where} is required.`;
  return `${where} is invalid (expected ${failure.type}).`;
}
