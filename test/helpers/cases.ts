import { readFileSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import {
  type Infer,
  array,
  boolean,
  enums,
  integer,
  max,
  min,
  nullable,
  object,
  optional,
  record,
  refine,
  size,
  string,
  union,
  unknown,
} from "superstruct";

/**
 * Request cases of the owner route, stored as JSON under fixtures/requests/ and replayed by
 * test/route-cases.test.ts against real gateways. A file holds one case or an array of cases.
 */

/** The gateway configurations a case may ask for; the test file maps each name to startTestGateway options. */
export const GATEWAY_NAMES = ["plain", "profiles", "allowed", "ipv6", "mapped", "external"] as const;
export type GatewayName = (typeof GATEWAY_NAMES)[number];

export const TRANSPORTS = ["plain", "tls"] as const;
export type Transport = (typeof TRANSPORTS)[number];

const MAX_GENERATED_BYTES = 8 * 1024 * 1024;

const HeaderValue = union([string(), array(string())]);

const PadBody = object({
  json: unknown(),
  toBytes: max(min(integer(), 1), MAX_GENERATED_BYTES),
});

const FillBody = object({
  byte: refine(
    size(string(), 1, 1),
    "AsciiByte",
    (value) => value.charCodeAt(0) < 0x80 || "byte must be one ASCII character",
  ),
  bytes: max(min(integer(), 0), MAX_GENERATED_BYTES),
});

const Expectation = object({
  status: max(min(integer(), 100), 599),
  /** The error code; absent for a success. */
  code: optional(string()),
  /** Response headers that must equal these values (lower-case names); null means the header must be absent. */
  headers: optional(record(string(), nullable(string()))),
  /** A partial match of `result` on success: every given key must match, recursively. */
  result: optional(unknown()),
  /** False for a request that must not reach the owner route at all (another path). Default true. */
  route: optional(boolean()),
});

const CaseStruct = object({
  name: size(string(), 1, 200),
  gateway: optional(enums(GATEWAY_NAMES)),
  transport: optional(enums(["both", "plain", "tls"] as const)),
  method: optional(size(string(), 1, 20)),
  path: optional(refine(string(), "Path", (value) => value.startsWith("/") || "path must start with /")),
  headers: optional(record(string(), HeaderValue)),
  json: optional(unknown()),
  text: optional(string()),
  base64: optional(
    refine(string(), "Base64", (value) => /^[A-Za-z0-9+/]*={0,2}$/.test(value) || "not base64"),
  ),
  pad: optional(PadBody),
  fill: optional(FillBody),
  chunked: optional(max(min(integer(), 1), MAX_GENERATED_BYTES)),
  expect: Expectation,
  /** Free text for a reader: why this case exists. */
  note: optional(string()),
});

export type RawCase = Infer<typeof CaseStruct>;

const BODY_FORMS = ["json", "text", "base64", "pad", "fill"] as const;

export interface RequestCase {
  /** The name of the file the case came from. */
  file: string;
  name: string;
  gateway: GatewayName;
  transports: Transport[];
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  /** The request body, generated bodies already built; undefined for none. */
  body: Buffer | undefined;
  chunked: number | undefined;
  expect: {
    status: number;
    code: string | undefined;
    headers: Record<string, string | null>;
    result: unknown;
    route: boolean;
  };
}

/** What a placeholder in headers or path stands for, per gateway and transport. */
export interface Target {
  token: string;
  /** host:port as in the gateway's URL (`127.0.0.1:4000`, `[::1]:4000`). */
  host: string;
  port: string;
  /** `http` or `https`. */
  scheme: string;
}

export class CaseFileError extends Error {
  constructor(file: string, detail: string) {
    super(`${file}: ${detail}`);
    this.name = "CaseFileError";
  }
}

/** Reads every *.json file of `dir` (sorted), validates each case, and builds its body. */
export function loadCases(dir: string): RequestCase[] {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort();
  const cases: RequestCase[] = [];
  const names = new Map<string, string>();
  for (const file of files) {
    const path = join(dir, file);
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      throw new CaseFileError(path, `not valid JSON (${(error as Error).message})`);
    }
    const entries = Array.isArray(parsed) ? parsed : [parsed];
    if (entries.length === 0) throw new CaseFileError(path, "holds no case");
    entries.forEach((entry, index) => {
      const requestCase = parseCase(entry, path, Array.isArray(parsed) ? index : null);
      const previous = names.get(requestCase.name);
      if (previous !== undefined) {
        throw new CaseFileError(path, `case name "${requestCase.name}" is already used in ${previous}`);
      }
      names.set(requestCase.name, file);
      cases.push(requestCase);
    });
  }
  return cases;
}

/** Validates one case as found in the file at `file` (at `index` of its array, or alone) and builds its body. */
export function parseCase(entry: unknown, file: string, index: number | null): RequestCase {
  const where = (name?: unknown) =>
    `${index === null ? "the case" : `case #${index}`}${typeof name === "string" ? ` ("${name}")` : ""}`;
  const label = where((entry as { name?: unknown } | null)?.name);
  const [error, raw] = CaseStruct.validate(entry);
  if (error !== undefined) {
    const failure = error.failures()[0] ?? error;
    const at = failure.path.length > 0 ? failure.path.join(".") : "(case)";
    const problem = failure.type === "never" ? "is not a known field" : `is invalid: ${failure.message}`;
    throw new CaseFileError(file, `${label}: ${at} ${problem}`);
  }
  const record = entry as Record<string, unknown>;
  const forms = BODY_FORMS.filter((form) => Object.hasOwn(record, form));
  if (forms.length > 1)
    throw new CaseFileError(file, `${label}: give at most one body form, not ${forms.join(" and ")}`);
  const form = forms[0];
  const transport = raw.transport ?? "both";
  const routeExpected = raw.expect.route ?? true;
  if (!routeExpected && raw.expect.code !== undefined) {
    throw new CaseFileError(
      file,
      `${label}: a case that does not reach the route cannot expect an error code`,
    );
  }
  if (raw.expect.result !== undefined && raw.expect.code !== undefined) {
    throw new CaseFileError(file, `${label}: expect either a result or an error code, not both`);
  }
  if (raw.chunked !== undefined && form === undefined) {
    throw new CaseFileError(file, `${label}: chunked needs a body`);
  }
  const headerNames = Object.keys(raw.headers ?? {}).map((name) => name.toLowerCase());
  if (new Set(headerNames).size !== headerNames.length) {
    throw new CaseFileError(
      file,
      `${label}: a header is given twice (use an array value for repeated headers)`,
    );
  }
  if (raw.chunked !== undefined && headerNames.includes("content-length")) {
    throw new CaseFileError(file, `${label}: chunked and content-length together`);
  }
  let body: Buffer | undefined;
  try {
    body = buildBody(raw, form);
  } catch (buildError) {
    throw new CaseFileError(file, `${label}: ${(buildError as Error).message}`);
  }
  return {
    file: basename(file),
    name: raw.name,
    gateway: raw.gateway ?? "plain",
    transports: transport === "both" ? ["plain", "tls"] : [transport],
    method: raw.method ?? "POST",
    path: raw.path ?? "/api/mcp/manage",
    headers: raw.headers ?? {},
    body,
    chunked: raw.chunked,
    expect: {
      status: raw.expect.status,
      code: raw.expect.code,
      headers: Object.fromEntries(
        Object.entries(raw.expect.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
      ),
      result: raw.expect.result,
      route: routeExpected,
    },
  };
}

function buildBody(raw: RawCase, form: (typeof BODY_FORMS)[number] | undefined): Buffer | undefined {
  switch (form) {
    case undefined:
      return undefined;
    case "json":
      return Buffer.from(JSON.stringify(raw.json), "utf8");
    case "text":
      return Buffer.from(raw.text ?? "", "utf8");
    case "base64":
      return Buffer.from(raw.base64 ?? "", "base64");
    case "pad": {
      const pad = raw.pad as Infer<typeof PadBody>;
      const json = Buffer.from(JSON.stringify(pad.json), "utf8");
      if (json.length > pad.toBytes)
        throw new Error(`pad: the JSON is already ${json.length} bytes, over ${pad.toBytes}`);
      return Buffer.concat([json, Buffer.alloc(pad.toBytes - json.length, 0x20)]);
    }
    case "fill": {
      const fill = raw.fill as Infer<typeof FillBody>;
      return Buffer.alloc(fill.bytes, fill.byte.charCodeAt(0));
    }
  }
}

const PLACEHOLDER = /\$([A-Z]+)/g;

/** Replaces $TOKEN, $HOST, $PORT and $SCHEME; any other $NAME is an error in the case. */
export function expandPlaceholders(value: string, target: Target): string {
  return value.replace(PLACEHOLDER, (whole, name: string) => {
    switch (name) {
      case "TOKEN":
        return target.token;
      case "HOST":
        return target.host;
      case "PORT":
        return target.port;
      case "SCHEME":
        return target.scheme;
      default:
        throw new Error(`unknown placeholder ${whole}`);
    }
  });
}

/** The request of a case for one target: placeholders expanded in the path and every header value. */
export function expandRequest(
  requestCase: RequestCase,
  target: Target,
): { path: string; headers: Record<string, string | string[]> } {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(requestCase.headers)) {
    headers[name.toLowerCase()] = Array.isArray(value)
      ? value.map((item) => expandPlaceholders(item, target))
      : expandPlaceholders(value, target);
  }
  return { path: expandPlaceholders(requestCase.path, target), headers };
}

/**
 * A partial deep match: every key of an expected object must be present and match; arrays and
 * primitives must match exactly (arrays element by element, same length). Returns a mismatch
 * description, or null.
 */
export function partialMismatch(actual: unknown, expected: unknown, path = "result"): string | null {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected an array`;
    if (actual.length !== expected.length)
      return `${path}: expected ${expected.length} items, got ${actual.length}`;
    for (let i = 0; i < expected.length; i += 1) {
      const mismatch = partialMismatch(actual[i], expected[i], `${path}[${i}]`);
      if (mismatch !== null) return mismatch;
    }
    return null;
  }
  if (typeof expected === "object" && expected !== null) {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual))
      return `${path}: expected an object`;
    for (const [key, value] of Object.entries(expected)) {
      if (!Object.hasOwn(actual, key)) return `${path}.${key}: missing`;
      const mismatch = partialMismatch((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
      if (mismatch !== null) return mismatch;
    }
    return null;
  }
  return Object.is(actual, expected)
    ? null
    : `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`;
}
