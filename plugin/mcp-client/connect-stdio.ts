/**
 * Connecting to a stdio server: a child process with the SDK's short list of safe gateway variables plus
 * the server's own env. A child that fails the handshake is terminated (SIGTERM, then SIGKILL) before
 * the result is returned.
 */
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import {
  type ConnectOptions,
  type ConnectResult,
  attempt,
  established,
  notOk,
  settleWithin,
} from "./connect-session.js";
import { type Failure, failed, timeoutFailure } from "./failure.js";
import { type Deadline, errorCodes } from "./observed-fetch.js";
import type { ServerTarget } from "./types.js";

/** Grace a child gets after SIGTERM before SIGKILL. */
const TERM_GRACE_MS = 1000;

/** Remembers the child's pid: the SDK forgets it as soon as it starts closing. */
class TrackedStdioTransport extends StdioClientTransport {
  childPid: number | null = null;
  override async start(): Promise<void> {
    await super.start();
    this.childPid = this.pid;
  }
}

export async function connectStdio(
  target: Extract<ServerTarget, { kind: "stdio" }>,
  options: ConnectOptions,
  deadline: Deadline,
): Promise<ConnectResult> {
  const transport = new TrackedStdioTransport({
    command: target.command,
    args: target.args,
    // Only the SDK's short safe list of the gateway's variables, then the server's own.
    env: { ...getDefaultEnvironment(), ...target.env },
    stderr: "ignore",
  });
  let badOutput = false;
  let exited = false;
  let onExit: () => void = () => {};
  const exit = new Promise<void>((resolve) => {
    onExit = resolve;
  });
  // Both kept by Client.connect, which chains handlers set before it.
  transport.onclose = () => {
    exited = true;
    onExit();
  };
  // Unparseable stdout lines arrive here, not as a rejection.
  transport.onerror = (error) => {
    if (isParseError(error)) badOutput = true;
  };

  const result = await attempt(transport, options, deadline, async () => {
    const pid = transport.childPid;
    if (pid === null || exited) return;
    // Client.close() only ended stdin; the SDK escalates on its own after seconds. Do it now.
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      try {
        process.kill(pid, signal);
      } catch {
        return;
      }
      await settleWithin(exit, TERM_GRACE_MS);
      if (exited) return;
    }
  });
  if (result.ok) return established(result.client, "stdio", transport, options);
  if (deadline.expired()) return notOk(timeoutFailure(options.timeoutMs, "The command"));
  return notOk(classifyStdio(result.error, badOutput));
}

function classifyStdio(error: unknown, badOutput: boolean): Failure {
  const codes = errorCodes(error);
  if (codes.includes("ENOENT")) return failed("spawn_failed", "The command was not found.");
  if (codes.includes("EACCES") || codes.includes("EPERM")) {
    return failed("spawn_failed", "The command could not be run (permission denied).");
  }
  if (!(error instanceof McpError) && codes.some((c) => c.startsWith("E"))) {
    return failed("spawn_failed", "The command could not be started.");
  }
  if (badOutput || isParseError(error)) return failed("not_mcp", "The command's output is not MCP.");
  if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
    return failed("spawn_failed", "The command exited before completing the MCP handshake.");
  }
  if (error instanceof McpError && error.code !== ErrorCode.RequestTimeout) {
    return failed("not_mcp", "The command refused the MCP handshake.");
  }
  return failed("not_mcp", "The command started but did not speak MCP.");
}

function isParseError(error: unknown): boolean {
  return error instanceof SyntaxError || (error instanceof Error && error.name === "ZodError");
}
