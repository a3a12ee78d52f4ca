import { methodError } from "../errors.js";
import type { Feature } from "../features.js";
import type { MethodHandler } from "../method-context.js";

/** The honest answer of a method whose feature is not built yet: its capability is false, and so is this. */
export function unavailable(feature: Feature): MethodHandler {
  return async () => {
    throw methodError("UNAVAILABLE", `This gateway does not offer ${feature} yet (see mcp.capabilities).`);
  };
}
