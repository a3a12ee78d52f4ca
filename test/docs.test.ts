import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { defaulted, object, string } from "superstruct";
import { FLAG_ENV } from "../fixtures/gateway/cli.js";
import { PluginOptionsStruct } from "../host-shim/options.js";
import { ERROR_TABLE, isErrorData, methodError } from "../plugin/errors.js";
import type { MethodContext, MethodHandler } from "../plugin/method-context.js";
import { METHOD_NAMES } from "../plugin/method-names.js";
import { METHOD_HANDLERS } from "../plugin/methods/index.js";
import { unavailable } from "../plugin/methods/unavailable.js";

/**
 * The docs against the code: README.md and docs/protocol.md are checked against the error table, the
 * method allowlist, the reference gateway's flags, the plugin options and what each handler really does.
 * Each check is a function that returns its problems. Every "catches" test feeds it a doc with a
 * realistic drift and expects a problem, so no check passes vacuously.
 */

const README = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
const PROTOCOL = readFileSync(fileURLToPath(new URL("../../docs/protocol.md", import.meta.url)), "utf8");

// ---------------------------------------------------------------------------------------------------------
// A small markdown reader: headings and tables outside code fences.

interface Heading {
  level: number;
  text: string;
  /** Index into the document's lines. */
  line: number;
}

interface Table {
  header: string[];
  rows: string[][];
}

function splitLines(markdown: string): string[] {
  return markdown.split(/\r?\n/);
}

/** For each line, whether it is inside a fenced code block (fence lines themselves count as inside). */
function fenceMask(lines: readonly string[]): boolean[] {
  let open: string | null = null;
  return lines.map((line) => {
    const fence = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (open === null) open = fence[0] ?? null;
      else if (fence[0] === open) open = null;
      return true;
    }
    return open !== null;
  });
}

function headingsOf(markdown: string): Heading[] {
  const lines = splitLines(markdown);
  const fenced = fenceMask(lines);
  const headings: Heading[] = [];
  lines.forEach((line, index) => {
    if (fenced[index]) return;
    const match = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (match?.[1] !== undefined && match[2] !== undefined) {
      headings.push({ level: match[1].length, text: match[2], line: index });
    }
  });
  return headings;
}

/** The body of the level-2 section titled `title`, up to the next heading of level 1 or 2; null if absent. */
function sectionOf(markdown: string, title: string): string | null {
  const lines = splitLines(markdown);
  const headings = headingsOf(markdown);
  const start = headings.find((heading) => heading.level === 2 && heading.text === title);
  if (start === undefined) return null;
  const end = headings.find((heading) => heading.line > start.line && heading.level <= 2);
  return lines.slice(start.line + 1, end?.line ?? lines.length).join("\n");
}

function cellsOf(line: string): string[] {
  const inner = line
    .trim()
    .replace(/^\|/, "")
    .replace(/(?<!\\)\|$/, "");
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim());
}

function tablesOf(markdown: string): Table[] {
  const lines = splitLines(markdown);
  const fenced = fenceMask(lines);
  const tables: Table[] = [];
  let block: string[] = [];
  const flush = () => {
    const [head, separator, ...rest] = block;
    block = [];
    if (head === undefined || separator === undefined) return;
    if (!cellsOf(separator).every((cell) => /^:?-{3,}:?$/.test(cell))) return;
    tables.push({ header: cellsOf(head), rows: rest.map(cellsOf) });
  };
  lines.forEach((line, index) => {
    if (!fenced[index] && line.trim().startsWith("|")) block.push(line);
    else flush();
  });
  flush();
  return tables;
}

/** The text of a cell that is exactly one code span, e.g. "`UNAUTHORIZED`"; null otherwise. */
function codeSpan(cell: string | undefined): string | null {
  return /^`([^`]+)`$/.exec(cell ?? "")?.[1] ?? null;
}

function duplicates(values: readonly string[]): string[] {
  return values.filter((value, index) => values.indexOf(value) !== index);
}

// ---------------------------------------------------------------------------------------------------------
// The checks. Each returns a list of problems; an empty list means the doc agrees with the code.

type StatusTable = Readonly<Record<string, { status: number }>>;

/** (a) The Error codes table of docs/protocol.md lists exactly the codes of ERROR_TABLE, with their status. */
function errorTableProblems(protocol: string, table: StatusTable): string[] {
  const section = sectionOf(protocol, "Error codes");
  if (section === null) return ['docs/protocol.md has no "## Error codes" section'];
  const tables = tablesOf(section).filter((candidate) => candidate.header[0] === "Code");
  if (tables.length !== 1)
    return [`"Error codes" should hold one table headed "Code", found ${tables.length}`];
  const [codesTable] = tables as [Table];
  const statusColumn = codesTable.header.indexOf("HTTP status");
  if (statusColumn < 0) return ['the error codes table has no "HTTP status" column'];
  const problems: string[] = [];
  const documented: string[] = [];
  for (const row of codesTable.rows) {
    const code = codeSpan(row[0]);
    if (code === null) {
      problems.push(`error table row without a code in backticks: ${row.join(" | ")}`);
      continue;
    }
    documented.push(code);
    const entry = Object.hasOwn(table, code) ? table[code] : undefined;
    if (entry === undefined) {
      problems.push(`documented code ${code} is not in ERROR_TABLE`);
      continue;
    }
    const statuses: string[] = (row[statusColumn] ?? "").match(/\b\d{3}\b/g) ?? [];
    if (!statuses.includes(String(entry.status))) {
      problems.push(`${code}: HTTP status column "${row[statusColumn]}" does not give ${entry.status}`);
    }
  }
  for (const code of duplicates(documented)) problems.push(`code ${code} has more than one row`);
  for (const code of Object.keys(table)) {
    if (!documented.includes(code)) problems.push(`ERROR_TABLE code ${code} has no row in docs/protocol.md`);
  }
  return problems;
}

/** A heading that names a method-like dotted identifier, e.g. "`mcp.setup.begin`" or "chat.send". */
function isMethodLikeHeading(text: string): boolean {
  const bare = text.replace(/`/g, "").trim();
  return /^[A-Za-z_][\w-]*(\.[\w/-]+)+$/.test(bare) || /`mcp\.[^`]*`/.test(text);
}

/** (b) docs/protocol.md has one "### `name`" heading per method, under "## Methods", and no other. */
function methodHeadingProblems(protocol: string, names: readonly string[]): string[] {
  const headings = headingsOf(protocol);
  const methods = headings.find((heading) => heading.level === 2 && heading.text === "Methods");
  if (methods === undefined) return ['docs/protocol.md has no "## Methods" section'];
  const end =
    headings.find((heading) => heading.line > methods.line && heading.level <= 2)?.line ??
    Number.POSITIVE_INFINITY;
  const problems: string[] = [];
  const found: string[] = [];
  for (const heading of headings.filter((candidate) => isMethodLikeHeading(candidate.text))) {
    const name = codeSpan(heading.text);
    if (name === null || !names.includes(name)) {
      problems.push(`heading "${heading.text}" names no allowlisted method`);
      continue;
    }
    if (heading.level !== 3 || heading.line < methods.line || heading.line >= end) {
      problems.push(`method heading "${heading.text}" should be a level-3 heading inside "## Methods"`);
    }
    found.push(name);
  }
  for (const name of duplicates(found)) problems.push(`method ${name} has more than one heading`);
  for (const name of names) {
    if (!found.includes(name)) problems.push(`method ${name} has no "### \`${name}\`" heading`);
  }
  return problems;
}

/** (c) README's flag table pairs every flag of FLAG_ENV with its environment variable, and lists no other. */
function flagProblems(readme: string, flagEnv: Readonly<Record<string, string>>): string[] {
  const tables = tablesOf(readme).filter(
    (table) => table.header[0] === "Flag" && table.header[1] === "Environment variable",
  );
  if (tables.length !== 1)
    return [`README should hold one "Flag | Environment variable" table, found ${tables.length}`];
  const [flagTable] = tables as [Table];
  const problems: string[] = [];
  const documented: string[] = [];
  for (const row of flagTable.rows) {
    const flag = /^`--([a-z][a-z0-9-]*)(?: [^`]*)?`$/.exec(row[0] ?? "")?.[1];
    if (flag === undefined) {
      problems.push(`flag table row without a \`--flag\` in its first cell: ${row.join(" | ")}`);
      continue;
    }
    documented.push(flag);
    const env = /`([A-Z][A-Z0-9_]*)`/.exec(row[1] ?? "")?.[1];
    const expected = Object.hasOwn(flagEnv, flag) ? flagEnv[flag] : undefined;
    if (expected === undefined) problems.push(`README documents --${flag}, which cli.ts does not have`);
    else if (env !== expected)
      problems.push(`--${flag}: README gives ${env ?? "no variable"}, cli.ts ${expected}`);
  }
  for (const flag of duplicates(documented)) problems.push(`--${flag} has more than one row`);
  for (const flag of Object.keys(flagEnv)) {
    if (!documented.includes(flag)) problems.push(`flag --${flag} (${flagEnv[flag]}) is not in README`);
  }
  return problems;
}

interface SchemaNode {
  type: string;
  schema: unknown;
}

/** Every option key of a superstruct object schema, nested objects as dotted paths ("pool.minThreads"). */
function optionPaths(struct: SchemaNode, prefix = ""): string[] {
  if (struct.type !== "object" || typeof struct.schema !== "object" || struct.schema === null) return [];
  return Object.entries(struct.schema as Record<string, SchemaNode>).flatMap(([key, child]) => [
    `${prefix}${key}`,
    ...optionPaths(child, `${prefix}${key}.`),
  ]);
}

/** (d) README's options table lists exactly the option keys of the schema, each as "`path`". */
function optionProblems(readme: string, paths: readonly string[]): string[] {
  const tables = tablesOf(readme).filter((table) => table.header[0] === "Option");
  if (tables.length !== 1) return [`README should hold one table headed "Option", found ${tables.length}`];
  const [optionTable] = tables as [Table];
  const documented = optionTable.rows.map((row) => codeSpan(row[0]) ?? `(not a code span: ${row[0]})`);
  const problems = duplicates(documented).map((path) => `option ${path} has more than one row`);
  for (const path of paths) {
    if (!documented.includes(path)) problems.push(`plugin option ${path} is not in README's options table`);
  }
  for (const path of documented) {
    if (!paths.includes(path))
      problems.push(`README documents option ${path}, which options.ts does not have`);
  }
  return problems;
}

type Today = "works" | "unavailable";

/** The README's "Method | ... | Today" table as [name, Today cell] rows, or a problem. */
function todayColumn(markdown: string): [string, string][] | string {
  const tables = tablesOf(markdown).filter(
    (table) => table.header[0] === "Method" && table.header.includes("Today"),
  );
  if (tables.length !== 1) return `expected one "Method ... Today" table, found ${tables.length}`;
  const [methodTable] = tables as [Table];
  const column = methodTable.header.indexOf("Today");
  return methodTable.rows.map((row) => [codeSpan(row[0]) ?? String(row[0]), row[column] ?? ""]);
}

/** (e) README says "works" exactly for the methods that work and "unavailable" for the rest. */
function todayProblems(readme: string, actual: ReadonlyMap<string, Today>): string[] {
  const rows = todayColumn(readme);
  if (typeof rows === "string") return [rows];
  const documented = new Map(rows);
  const problems = duplicates(rows.map(([name]) => name)).map((name) => `method ${name} has two rows`);
  for (const [name, today] of actual) {
    const said = documented.get(name);
    if (said === undefined) problems.push(`method ${name} has no row in README's methods table`);
    else if (said !== today)
      problems.push(
        `README says ${name} "${said}", but it ${today === "works" ? "works" : "answers UNAVAILABLE"}`,
      );
  }
  for (const name of documented.keys()) {
    if (!actual.has(name)) problems.push(`README's methods table lists ${name}, which is not a method`);
  }
  return problems;
}

/** docs/protocol.md's "**Today:**" line in each method section agrees with what the method does. */
function protocolTodayProblems(protocol: string, actual: ReadonlyMap<string, Today>): string[] {
  const lines = splitLines(protocol);
  const headings = headingsOf(protocol);
  const problems: string[] = [];
  for (const [name, today] of actual) {
    const heading = headings.find((candidate) => candidate.text === `\`${name}\``);
    if (heading === undefined) {
      problems.push(`no section for ${name}`);
      continue;
    }
    const next = headings.find((candidate) => candidate.line > heading.line)?.line ?? lines.length;
    const body = lines.slice(heading.line + 1, next).join("\n");
    const said = /\*\*Today:\*\*\s*(works|unavailable)\b/.exec(body)?.[1];
    if (said !== today) problems.push(`protocol.md says ${name} is "${said ?? "?"}", but it ${today}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------
// What each method really does today: call its handler with invalid params and a fake runtime that answers
// every runtime call.

/** Params no method accepts: every params struct is a closed object, so an unknown key is refused. */
const PROBE_PARAMS: Record<string, unknown> = { docsProbe: "not a param of any method" };

/**
 * Answers describe and listConnections with success (a runtime that has everything: writable store, live
 * connections), and every other runtime call, whatever its name, with an expected NOT_FOUND. A handler that
 * reaches the runtime before checking its params therefore still answers without touching real state.
 * Deliberately not typed as RuntimeApi: the runtime API grows as features land, and this fake need not.
 */
/** A runtime on which every feature works: the table's "Today" is about the build, not this runtime. */
const DESCRIBED = {
  profile: null,
  storeWritable: true,
  liveConnections: true,
  accessEndpoint: true,
  setupTimeoutSeconds: 600,
  oauthCallbackModes: ["loopback"],
  oauthRedirectUris: [],
  now: Date.now(),
};

const ANSWERS: Record<string, () => Promise<unknown>> = {
  describe: async () => ({ ok: true, value: DESCRIBED }),
  listConnections: async () => ({ ok: true, value: { connections: [], catalog: [] } }),
};

const fakeRuntime = new Proxy(
  {},
  {
    get(_target, key) {
      // Not a thenable: an awaited runtime must not look like a promise.
      if (typeof key !== "string" || key === "then") return undefined;
      return (
        (Object.hasOwn(ANSWERS, key) ? ANSWERS[key] : undefined) ??
        (async () => ({
          ok: false,
          error: { code: "NOT_FOUND", message: "The docs test's fake runtime has nothing." },
          expected: true,
        }))
      );
    },
  },
);

const fakeContext: MethodContext = {
  runtime: fakeRuntime as unknown as MethodContext["runtime"],
  described: DESCRIBED,
  now: () => Date.now(),
};

/**
 * "unavailable" when the handler throws UNAVAILABLE for invalid params; "works" when it does anything else:
 * answers, or rejects the params, or fails with NOT_FOUND from the fake runtime, or fails any other way.
 * An implemented handler checks its params; only an unbuilt one answers UNAVAILABLE whatever they are.
 */
async function classify(handler: MethodHandler): Promise<Today> {
  try {
    await handler({ ...PROBE_PARAMS }, fakeContext);
    return "works";
  } catch (error) {
    return isErrorData(error) && error.code === "UNAVAILABLE" ? "unavailable" : "works";
  }
}

async function todayOf(name: string): Promise<Today> {
  const handler = METHOD_HANDLERS.get(name);
  if (handler === undefined) throw new Error(`METHOD_HANDLERS has no handler for ${name}`);
  return classify(handler);
}

async function actualToday(): Promise<Map<string, Today>> {
  const entries = await Promise.all(METHOD_NAMES.map(async (name) => [name, await todayOf(name)] as const));
  return new Map(entries);
}

/** Replaces exactly one occurrence, so a mutation that silently does nothing fails the test instead. */
function mutate(text: string, from: string | RegExp, to: string): string {
  const next = text.replace(from, to);
  if (next === text) throw new Error(`mutation found nothing to replace: ${String(from)}`);
  return next;
}

// ---------------------------------------------------------------------------------------------------------

describe("docs agree with the code", () => {
  describe("(a) the Error codes table of docs/protocol.md is ERROR_TABLE", () => {
    it("has one row per code of ERROR_TABLE, with its status, and no other code", () => {
      expect(errorTableProblems(PROTOCOL, ERROR_TABLE)).to.deep.equal([]);
    });

    it("catches a missing row, an unknown code, a wrong status and a code only mentioned outside the table", () => {
      const missing = mutate(PROTOCOL, /^\| `TOO_LARGE`\s*\|.*\n/m, "");
      expect(errorTableProblems(missing, ERROR_TABLE)).to.include(
        "ERROR_TABLE code TOO_LARGE has no row in docs/protocol.md",
      );
      const extra = mutate(
        PROTOCOL,
        /^(\| `TOO_LARGE`\s*\|.*\n)/m,
        "$1| `DOCS_PROBE_CODE` | 418 | Not a code |\n",
      );
      expect(errorTableProblems(extra, ERROR_TABLE)).to.include(
        "documented code DOCS_PROBE_CODE is not in ERROR_TABLE",
      );
      const status = mutate(PROTOCOL, /^\| `TOO_LARGE`\s*\|\s*413\s*\|/m, "| `TOO_LARGE` | 400 |");
      expect(errorTableProblems(status, ERROR_TABLE)).to.have.length(1);
      // Only the table counts: the code written elsewhere in the file does not stand in for its row.
      const prose = `${missing}\n\nSee \`TOO_LARGE\` (413).\n`;
      expect(errorTableProblems(prose, ERROR_TABLE)).to.not.deep.equal([]);
      // A code added to ERROR_TABLE without a row is caught.
      expect(errorTableProblems(PROTOCOL, { ...ERROR_TABLE, DOCS_PROBE_CODE: { status: 400 } })).to.include(
        "ERROR_TABLE code DOCS_PROBE_CODE has no row in docs/protocol.md",
      );
    });
  });

  describe("(b) docs/protocol.md has one section heading per method", () => {
    it("has a level-3 heading for each of the 16 methods under Methods, and no other method heading", () => {
      expect(METHOD_NAMES).to.have.length(16);
      expect(methodHeadingProblems(PROTOCOL, METHOD_NAMES)).to.deep.equal([]);
    });

    it("catches a missing heading, a stray method heading and a duplicate", () => {
      const missing = mutate(PROTOCOL, "### `mcp.setup.cancel_request`", "### Cancel by request");
      expect(methodHeadingProblems(missing, METHOD_NAMES)).to.include(
        'method mcp.setup.cancel_request has no "### `mcp.setup.cancel_request`" heading',
      );
      const stray = `${PROTOCOL}\n### \`mcp.setup.frobnicate\`\n\nNot a method.\n`;
      expect(methodHeadingProblems(stray, METHOD_NAMES)).to.not.deep.equal([]);
      const bare = mutate(PROTOCOL, "## Error codes", "### chat.send\n\nRejected.\n\n## Error codes");
      expect(methodHeadingProblems(bare, METHOD_NAMES)).to.not.deep.equal([]);
      const twice = `${PROTOCOL}\n### \`mcp.capabilities\`\n`;
      expect(methodHeadingProblems(twice, METHOD_NAMES)).to.include(
        "method mcp.capabilities has more than one heading",
      );
      // A heading in a code block is not a heading.
      const fenced = mutate(PROTOCOL, "### `mcp.chat.cancel`", "```\n### `mcp.chat.cancel`\n```");
      expect(methodHeadingProblems(fenced, METHOD_NAMES)).to.not.deep.equal([]);
    });
  });

  describe("(c) README documents every reference-gateway flag with its environment variable", () => {
    it("pairs each flag of FLAG_ENV with its variable in the flags table", () => {
      expect(Object.keys(FLAG_ENV)).to.not.be.empty;
      expect(flagProblems(README, FLAG_ENV)).to.deep.equal([]);
      for (const [flag, env] of Object.entries(FLAG_ENV)) {
        expect(README).to.contain(`--${flag}`);
        expect(README).to.contain(env);
      }
    });

    it("catches a missing flag, a wrong variable and a flag cli.ts does not have", () => {
      expect(flagProblems(README, { ...FLAG_ENV, "log-level": "MCP_GATEWAY_LOG_LEVEL" })).to.include(
        "flag --log-level (MCP_GATEWAY_LOG_LEVEL) is not in README",
      );
      const wrong = mutate(README, "`MCP_GATEWAY_PORT`", "`MCP_GATEWAY_LISTEN_PORT`");
      expect(flagProblems(wrong, FLAG_ENV)).to.have.length(1);
      const removed = Object.fromEntries(Object.entries(FLAG_ENV).filter(([flag]) => flag !== "profiles"));
      expect(flagProblems(README, removed)).to.include(
        "README documents --profiles, which cli.ts does not have",
      );
    });
  });

  describe("(d) README documents every plugin option", () => {
    const paths = optionPaths(PluginOptionsStruct as unknown as SchemaNode);

    it("walks nested superstruct schemas, through defaulted() too", () => {
      const nested = object({ outer: defaulted(object({ inner: string() }), {}), flat: string() });
      expect(optionPaths(nested as unknown as SchemaNode)).to.deep.equal(["outer", "outer.inner", "flat"]);
    });

    it("lists exactly the option keys of PluginOptionsStruct in the options table", () => {
      expect(paths.some((path) => path.includes("."))).to.equal(true, "no nested option found");
      expect(optionProblems(README, paths)).to.deep.equal([]);
    });

    it("catches an undocumented option and a documented option that does not exist", () => {
      expect(optionProblems(README, [...paths, "pool.idleTimeoutMs"])).to.include(
        "plugin option pool.idleTimeoutMs is not in README's options table",
      );
      const gone = paths.filter((path) => path !== "oauthRedirectUris");
      expect(optionProblems(README, gone)).to.include(
        "README documents option oauthRedirectUris, which options.ts does not have",
      );
    });
  });

  describe("(e) README's methods table says which methods work today", () => {
    let actual: Map<string, Today>;
    before(async () => {
      actual = await actualToday();
    });

    it("calls every handler: each either answers or throws UNAVAILABLE", () => {
      expect([...actual.keys()]).to.deep.equal([...METHOD_NAMES]);
      expect([...actual.values()]).to.include("works");
      expect([...actual.values()]).to.include("unavailable");
    });

    it("classifies only UNAVAILABLE as unavailable: a params error or a runtime NOT_FOUND still works", async () => {
      expect(await classify(unavailable("chatSetup"))).to.equal("unavailable");
      const notFound: MethodHandler = async (_params, { runtime }) => {
        const answer = await (
          runtime as unknown as Record<string, () => Promise<{ ok: boolean }>>
        ).operation?.();
        if (answer?.ok !== true) throw methodError("NOT_FOUND", "No operation with that id.");
        return answer;
      };
      expect(await classify(notFound)).to.equal("works");
      expect(
        await classify(async () => Promise.reject(methodError("INVALID_PARAMS", "params.x is invalid."))),
      ).to.equal("works");
      expect(
        await classify(async () => Promise.reject(new TypeError("runtime.x is not a function"))),
      ).to.equal("works");
      expect(await classify(async () => ({ answered: true }))).to.equal("works");
      // The real handlers: a built setup method rejects the probe's params, an unbuilt one is UNAVAILABLE.
      for (const name of ["mcp.setup.begin", "mcp.setup.confirm", "mcp.connections.action"]) {
        const handler = METHOD_HANDLERS.get(name) as MethodHandler;
        const error = await handler({ ...PROBE_PARAMS }, fakeContext).then(
          () => null,
          (caught: unknown) => caught,
        );
        expect(isErrorData(error) ? error.code : error, name).to.equal("INVALID_PARAMS");
      }
    });

    it('says "works" exactly for the methods whose handler is implemented', () => {
      expect(todayProblems(README, actual)).to.deep.equal([]);
    });

    it("agrees with the Today line of each method in docs/protocol.md", () => {
      expect(protocolTodayProblems(PROTOCOL, actual)).to.deep.equal([]);
    });

    it("catches a method claimed to work, or not to, a missing row and a method that starts working", () => {
      const claimed = mutate(
        README,
        /^(\| `mcp\.chat\.pending`\s*\|.*\|\s*)unavailable(\s*\|)$/m,
        "$1works$2",
      );
      expect(todayProblems(claimed, actual)).to.have.length(1);
      const denied = mutate(README, /^(\| `mcp\.setup\.begin`\s*\|.*\|\s*)works(\s*\|)$/m, "$1unavailable$2");
      expect(todayProblems(denied, actual)).to.include(
        'README says mcp.setup.begin "unavailable", but it works',
      );
      const protocolDenied = mutate(
        PROTOCOL,
        /(### `mcp\.setup\.confirm`[\s\S]*?\*\*Today:\*\* )works/,
        "$1unavailable",
      );
      expect(protocolTodayProblems(protocolDenied, actual)).to.include(
        'protocol.md says mcp.setup.confirm is "unavailable", but it works',
      );
      const missing = mutate(README, /^\| `mcp\.chat\.cancel`\s*\|.*\n/m, "");
      expect(todayProblems(missing, actual)).to.include(
        "method mcp.chat.cancel has no row in README's methods table",
      );
      const built = new Map(actual).set("mcp.chat.cancel", "works");
      expect(todayProblems(README, built)).to.have.length(1);
      expect(protocolTodayProblems(PROTOCOL, built)).to.have.length(1);
    });
  });
});
