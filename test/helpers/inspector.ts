import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
/** The inspector's build directory: `cli.js --cli` spawns `node build/index.js`, the real CLI client. */
const INSPECTOR_BUILD = join(
  dirname(require.resolve("@modelcontextprotocol/inspector-cli/package.json")),
  "build",
);
export const CLI_TIMEOUT_MS = 20_000;

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the MCP Inspector in CLI mode against the endpoint. Its cwd must be the build directory: the CLI
 * reads "../package.json" relative to the working directory to name itself. It needs no network beyond
 * the loopback URL it is given.
 */
export function inspector(url: string, secret: string, args: string[]): Promise<CliRun> {
  const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}` };
  const argv = [
    "cli.js",
    "--cli",
    url,
    "--transport",
    "http",
    "--header",
    `Authorization: Bearer ${secret}`,
    ...args,
  ];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      argv,
      { cwd: INSPECTOR_BUILD, env, timeout: CLI_TIMEOUT_MS },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
