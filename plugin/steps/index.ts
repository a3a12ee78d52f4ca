import type { MethodHandler } from "../method-context.js";
import { discoverStep } from "./discover.js";

/** Setup steps the runtime runs in the pool, detached from requests. Never reachable from the route. */
export const STEP_HANDLERS: ReadonlyMap<string, MethodHandler> = new Map([["discover", discoverStep]]);
