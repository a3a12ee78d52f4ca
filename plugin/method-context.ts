import type { Remote } from "./comlink.js";
import { methodError } from "./errors.js";
import type { Outcome, RuntimeApi, RuntimeDescription } from "./runtime-api.js";

/** What every method receives: its side effects come in through here, never from module scope. */
export interface MethodContext {
  runtime: Remote<RuntimeApi>;
  /** The runtime's description, sent with the task. */
  described: RuntimeDescription;
  now(): number;
}

export type MethodHandler = (params: Record<string, unknown>, context: MethodContext) => Promise<unknown>;

/** Unwraps a runtime answer, turning its error data back into a method error with the same code. */
export async function expectOk<T>(outcome: Promise<Outcome<T>>): Promise<T> {
  const answer = await outcome;
  if (answer.ok) return answer.value;
  // An unexpected failure in the runtime stays unexpected here: it must become 503, not a method's 400.
  if (!answer.expected) throw new Error("the runtime failed unexpectedly");
  throw methodError(answer.error.code, answer.error.message);
}
