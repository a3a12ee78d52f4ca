import type { ServerResponse } from "node:http";
import type { HostLogger } from "../contract.js";

export const MCP_PATH = "/mcp";

/**
 * Method names worth a log field. Anything else is the client's own string and may carry anything
 * (even a pasted secret), so it is logged as null.
 */
const LOGGED_METHODS = new Set([
  "initialize",
  "ping",
  "tools/list",
  "tools/call",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
  "completion/complete",
  "logging/setLevel",
  "notifications/initialized",
  "notifications/cancelled",
  "notifications/progress",
  "notifications/roots/list_changed",
]);

export function loggedMethod(method: unknown): string | null {
  return typeof method === "string" && LOGGED_METHODS.has(method) ? method : null;
}

/** What the log line of one request says: never a header, an argument or a result. */
export interface RequestRecord {
  keyId: string | null;
  method: string | null;
  /** Called, before the line is written, when the client left before its answer was finished. */
  onGone: (() => void) | null;
}

/**
 * Writes one line when the response closes. A client that left before its answer was finished is
 * logged as 499 (nginx's "client closed request"), not as the status that nobody received.
 */
export function logOnClose(res: ServerResponse, logger: HostLogger, record: RequestRecord): void {
  const started = process.hrtime.bigint();
  res.once("close", () => {
    const finished = res.writableFinished;
    if (!finished) record.onGone?.();
    logger.info(
      {
        route: MCP_PATH,
        status: finished ? res.statusCode : 499,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        keyId: record.keyId,
        method: record.method,
      },
      "mcp-manage mcp request",
    );
  });
}
