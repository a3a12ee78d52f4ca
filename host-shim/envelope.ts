import { type Infer, define, nullable, object, optional, refine, string } from "superstruct";
import type { ErrorData } from "../plugin/errors.js";
import { type MethodName, isMethodName } from "../plugin/method-names.js";

const MAX_PROFILE_CHARACTERS = 128;
/** Deeper JSON has no use here, and copying it to a worker could exhaust the stack. */
const MAX_DEPTH = 64;

/** A plain JSON object: not an array, not null, not a string. */
export const JsonObject = define<Record<string, unknown>>(
  "JsonObject",
  (value) => typeof value === "object" && value !== null && !Array.isArray(value),
);

const ProfileName = refine(string(), "ProfileName", (value) => {
  if (value.trim().length === 0) return "profile must not be blank";
  return (
    [...value].length <= MAX_PROFILE_CHARACTERS ||
    `profile is longer than ${MAX_PROFILE_CHARACTERS} characters`
  );
});

/** `object()` rejects every other key, so `jsonrpc`, `id` and `__proto__` fail here. */
const EnvelopeStruct = object({
  method: string(),
  params: optional(JsonObject),
  profile: optional(nullable(ProfileName)),
});

type EnvelopeInput = Infer<typeof EnvelopeStruct>;

export interface Envelope {
  method: MethodName;
  params: Record<string, unknown>;
  profile: string | null;
}

export type EnvelopeOutcome = { ok: true; envelope: Envelope } | { ok: false; error: ErrorData };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Content types the route accepts: JSON only, so a cross-site form post cannot reach a method. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  if (header === "application/json") return true;
  const [type, ...parameters] = header.split(";").map((part) => part.trim().toLowerCase());
  if (type !== "application/json") return false;
  return parameters.every((parameter) => parameter === "" || parameter === "charset=utf-8");
}

/**
 * Apps poll with the same few bodies (`{"method":"mcp.capabilities"}` and the like), and the envelope of
 * a body depends on its bytes alone: the outcome of a small body with no params is kept, keyed by those
 * exact bytes, so a repeated poll skips the parse and the validation. Each answer gets its own params
 * object. The memo is bounded and simply starts over when full.
 */
const MEMO_MAX_BODY_BYTES = 512;
const MEMO_MAX_ENTRIES = 256;
const memo = new Map<string, { method: MethodName; profile: string | null }>();

/** How many bodies the memo holds (for tests of its bound). */
export function envelopeMemoSize(): number {
  return memo.size;
}

export function parseEnvelope(body: Buffer): EnvelopeOutcome {
  // latin1 maps each byte to one character: two bodies share a key only when their bytes are equal.
  const key = body.length <= MEMO_MAX_BODY_BYTES ? body.toString("latin1") : null;
  if (key !== null) {
    const known = memo.get(key);
    if (known !== undefined) {
      return { ok: true, envelope: { method: known.method, params: {}, profile: known.profile } };
    }
  }
  const outcome = parseAndValidate(body);
  if (key !== null && outcome.ok && Object.keys(outcome.envelope.params).length === 0) {
    if (memo.size >= MEMO_MAX_ENTRIES) memo.clear();
    memo.set(key, { method: outcome.envelope.method, profile: outcome.envelope.profile });
  }
  return outcome;
}

function parseAndValidate(body: Buffer): EnvelopeOutcome {
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8.decode(body));
  } catch {
    return invalid("The body is not valid UTF-8 JSON.");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return invalid("The body must be a JSON object.");
  }
  if (depthExceeds(parsed, MAX_DEPTH)) return invalid(`The body nests deeper than ${MAX_DEPTH} levels.`);
  const [error, valid] = EnvelopeStruct.validate(parsed);
  if (error !== undefined) {
    const key = error.path[0];
    if (key !== "method" && key !== "params" && key !== "profile") {
      return invalid("The envelope allows only the fields method, params and profile.");
    }
    if (key === "params") return invalid("params must be a JSON object.");
    if (key === "profile")
      return invalid("profile must be a nonblank string of at most 128 characters, or null.");
    return invalid(error.value === undefined ? "method is required." : "method must be a string.");
  }
  return accept(valid);
}

function accept(valid: EnvelopeInput): EnvelopeOutcome {
  if (!isMethodName(valid.method)) {
    return {
      ok: false,
      error: { code: "UNKNOWN_METHOD", message: "The method is not one this route serves." },
    };
  }
  return {
    ok: true,
    envelope: { method: valid.method, params: valid.params ?? {}, profile: valid.profile ?? null },
  };
}

function invalid(message: string): EnvelopeOutcome {
  return { ok: false, error: { code: "INVALID_PARAMS", message } };
}

function depthExceeds(root: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (typeof value !== "object" || value === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return false;
}
