import type { AccessKey, AccessRegistry, ExternalToolResult } from "../access-contract.js";
import type { HostLogger } from "../contract.js";
import { CallAbort, type CallEnd, type InFlight } from "./in-flight.js";
import type { McpEndpointLimits } from "./limits.js";

/** What one authenticated request gives the tool handlers of its MCP server. */
export interface CallScope {
  registry: AccessRegistry;
  key: AccessKey;
  digest: string;
  limits: McpEndpointLimits;
  inFlight: InFlight;
  logger: HostLogger;
  /** True once the client went away before its answer was written. */
  gone: boolean;
  /** Set by the running call: what the endpoint calls when the client goes away. */
  onGone: (() => void) | null;
  /** Registry calls still running after their answer went out (a tool that ignores its signal). */
  lingering: Array<Promise<unknown>>;
}

const KNOWN_CODES = new Set(["UNKNOWN_TOOL", "UNAVAILABLE", "CANCELLED", "CALL_FAILED", "TOO_LARGE"]);
const MAX_ECHOED_NAME = 128;
const MAX_MESSAGE = 1000;

/**
 * One tools/call, from the key's point of view. Every outcome is a CallToolResult: failures are tool
 * errors (isError), as the SDK's McpServer answers them, so no raw exception text ever reaches the client.
 */
export async function runToolCall(
  scope: CallScope,
  name: string,
  rawArgs: Record<string, unknown> | undefined,
  protocolSignal: AbortSignal,
): Promise<ExternalToolResult> {
  const { registry, key, limits } = scope;
  // The key's list is the authority; the registry is asked only about names the key holds.
  if (!key.tools.includes(name)) return unknownTool(name);
  const args = rawArgs ?? {};
  const argumentBytes = jsonBytes(args);
  if (argumentBytes === null || argumentBytes > limits.maxArgumentBytes) {
    return toolError(
      `The tool arguments are too large: at most ${limits.maxArgumentBytes} bytes of JSON are accepted.`,
    );
  }

  const controller = new AbortController();
  const untrack = scope.inFlight.track(key.id, controller);
  const timer = setTimeout(() => controller.abort(new CallAbort("timeout")), limits.callTimeoutMs);
  const disconnected = () => controller.abort(new CallAbort("disconnected"));
  if (scope.gone) disconnected();
  else scope.onGone = disconnected;
  const detach = forward(protocolSignal, controller, "disconnected");
  try {
    // Tracked first, then checked: an invalidation that fired after this request authenticated but
    // before the controller was tracked would otherwise go unseen.
    if (registry.authenticate(scope.digest)?.id !== key.id) controller.abort(new CallAbort("revoked"));
    if (controller.signal.aborted) return stopped(controller.signal, limits);
    const call = Promise.resolve().then(() => registry.callTool(key, name, args, controller.signal));
    scope.lingering.push(call.then(noop, noop));
    const outcome = await Promise.race([
      call.then(
        (result): Outcome => ({ kind: "result", result }),
        (error: unknown): Outcome => ({ kind: "failure", error }),
      ),
      abortOf(controller.signal),
    ]);
    // A tool that rejects because its signal fired is answered with why the signal fired.
    if (controller.signal.aborted) return stopped(controller.signal, limits);
    if (outcome.kind === "failure") return failed(scope, name, outcome.error);
    if (outcome.kind === "result") return checkedResult(scope, outcome.result);
    return stopped(controller.signal, limits);
  } finally {
    clearTimeout(timer);
    scope.onGone = null;
    detach();
    untrack();
  }
}

type Outcome =
  | { kind: "result"; result: unknown }
  | { kind: "failure"; error: unknown }
  | { kind: "aborted" };

function abortOf(signal: AbortSignal): Promise<Outcome> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve({ kind: "aborted" });
    else signal.addEventListener("abort", () => resolve({ kind: "aborted" }), { once: true });
  });
}

function forward(from: AbortSignal, to: AbortController, end: CallEnd): () => void {
  if (from.aborted) {
    to.abort(new CallAbort(end));
    return noop;
  }
  const onAbort = () => to.abort(new CallAbort(end));
  from.addEventListener("abort", onAbort, { once: true });
  return () => from.removeEventListener("abort", onAbort);
}

function stopped(signal: AbortSignal, limits: McpEndpointLimits): ExternalToolResult {
  const end = signal.reason instanceof CallAbort ? signal.reason.end : "disconnected";
  switch (end) {
    case "revoked":
      return toolError("The access key was revoked or expired; the tool call was cancelled.");
    case "timeout":
      return toolError(`The tool call timed out after ${limits.callTimeoutMs} ms and was cancelled.`);
    case "shutdown":
      return toolError("The gateway is shutting down; the tool call was cancelled.");
    case "disconnected":
      return toolError("The tool call was cancelled because the client went away.");
  }
}

function failed(scope: CallScope, name: string, error: unknown): ExternalToolResult {
  if (isFailureData(error)) {
    if (error.code === "UNKNOWN_TOOL") return unknownTool(name);
    return toolError(error.message.slice(0, MAX_MESSAGE) || "The tool call failed.");
  }
  // Not the contract's rejection shape: a registry bug. Its text may hold anything, so it stays here.
  scope.logger.warn({ route: "/mcp", keyId: scope.key.id }, "mcp-manage tool call threw an unexpected error");
  return toolError("The tool call failed.");
}

function checkedResult(scope: CallScope, result: unknown): ExternalToolResult {
  if (
    typeof result !== "object" ||
    result === null ||
    !Array.isArray((result as ExternalToolResult).content)
  ) {
    scope.logger.warn({ route: "/mcp", keyId: scope.key.id }, "mcp-manage tool returned a malformed result");
    return toolError("The tool call failed.");
  }
  const { content, isError, structuredContent } = result as ExternalToolResult;
  const answer: ExternalToolResult = { content };
  if (isError === true) answer.isError = true;
  if (structuredContent !== undefined) answer.structuredContent = structuredContent;
  const bytes = jsonBytes(answer);
  if (bytes === null) return toolError("The tool call failed.");
  if (bytes > scope.limits.maxResultBytes) {
    return toolError(`Tool result too large: it exceeds ${scope.limits.maxResultBytes} bytes of JSON.`);
  }
  return answer;
}

/** The text the SDK's own McpServer gives for a tool it does not have, as a tool error. */
export function unknownTool(name: string): ExternalToolResult {
  const shown = name.length > MAX_ECHOED_NAME ? `${name.slice(0, MAX_ECHOED_NAME)}…` : name;
  return toolError(`Tool ${shown} not found`);
}

export function toolError(text: string): ExternalToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

function isFailureData(error: unknown): error is { code: string; message: string } {
  if (typeof error !== "object" || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === "string" && KNOWN_CODES.has(code) && typeof message === "string";
}

/** UTF-8 bytes of the value as JSON; null when it cannot be serialized (cycles, BigInt). */
function jsonBytes(value: unknown): number | null {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
  } catch {
    return null;
  }
}

function noop(): void {}
