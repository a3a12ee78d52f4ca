import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

export const GATEWAY_MAIN = fileURLToPath(new URL("../../fixtures/gateway/main.js", import.meta.url));

export interface ChildGateway {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** SIGTERM, then the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The reference gateway as a real child process, started through its CLI; resolves once it prints its URL. */
export async function startChildGateway(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ChildGateway> {
  const child = spawn(process.execPath, [GATEWAY_MAIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      const match = /(https?:\/\/(?:\[[^\]]+\]|[^\s:/]+):\d+)/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`gateway exited with ${code}: ${err}`)));
  });
  return {
    child,
    url,
    stdout: () => out,
    stderr: () => err,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode !== null) return child.exitCode;
      const exited = once(child, "exit");
      child.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

/** Runs the CLI to completion (for flag errors), returning its exit code and output. */
export async function runCli(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [GATEWAY_MAIN, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stderr };
}
