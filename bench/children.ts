/**
 * Child processes of the bench: started from a script, ready when they print their URL, all killed when
 * the bench exits for any reason (normal end, error, Ctrl-C, SIGTERM). Also reads /proc for their memory
 * and CPU time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
/** Children the bench asked to stop: their exit is expected. */
const stopping = new WeakSet<ChildProcess>();

export interface Child {
  name: string;
  process: ChildProcess;
  pid: number;
  url: string;
  /** Everything the child printed on stdout, for diagnostics. */
  stdout: () => string;
  /** Asks it to stop (SIGTERM), waits, kills it (SIGKILL) after `graceMs`. */
  stop: (graceMs?: number) => Promise<void>;
}

export interface SpawnOptions {
  name: string;
  script: string;
  args: string[];
  /** Node flags for the child (e.g. --cpu-prof), placed before the script. */
  nodeArgs?: string[];
  /** A file that receives the child's stderr (the gateway's pino log); inherited when absent. */
  stderrFile?: string;
  /** Keep a pipe on the child's stdin (a child that exits when it closes needs it). */
  stdinPipe?: boolean;
  readyTimeoutMs?: number;
}

const URL_PATTERN = /https?:\/\/[^\s)]+/;

/** Starts `node [nodeArgs] script args` and resolves once it has printed a line with its URL. */
export function spawnServer(options: SpawnOptions): Promise<Child> {
  const stderrFd = options.stderrFile === undefined ? undefined : openSync(options.stderrFile, "a");
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.script, ...options.args], {
    stdio: [options.stdinPipe === true ? "pipe" : "ignore", "pipe", stderrFd ?? "inherit"],
    env: process.env,
  });
  if (stderrFd !== undefined) closeSync(stderrFd);
  children.add(child);
  child.once("exit", () => children.delete(child));
  let printed = "";
  return new Promise<Child>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        fail(
          new Error(`${options.name} did not print its URL within ${options.readyTimeoutMs ?? 15_000} ms`),
        ),
      options.readyTimeoutMs ?? 15_000,
    );
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(error);
    };
    child.once("error", fail);
    child.once("exit", (code, signal) => {
      const said = `${printed}${options.stderrFile === undefined ? "" : tail(options.stderrFile)}`.trim();
      fail(new Error(`${options.name} exited before it was ready (code ${code}, signal ${signal}): ${said}`));
    });
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (text: string) => {
      const before = printed;
      printed += text;
      if (URL_PATTERN.test(before)) return;
      const match = URL_PATTERN.exec(printed);
      if (match === null || child.pid === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      child.once("exit", (code, signal) => {
        children.delete(child);
        if (!stopping.has(child)) {
          process.stdout.write(
            `WARNING: ${options.name} (pid ${child.pid}) exited unexpectedly (code ${code}, signal ${signal})\n`,
          );
        }
      });
      resolve({
        name: options.name,
        process: child,
        pid: child.pid,
        url: match[0].replace(/[.,]$/, ""),
        stdout: () => printed,
        stop: (graceMs = 3_000) => stopChild(child, graceMs),
      });
    });
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, "utf8").slice(-2_000);
  } catch {
    return "";
  }
}

async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  stopping.add(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** A temp directory removed when the bench exits (set BENCH_KEEP_TMP=1 to keep it). */
export function registerTempDir(dir: string): void {
  tempDirs.add(dir);
}

function killAllNow(): void {
  for (const child of children) {
    stopping.add(child);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  if (process.env.BENCH_KEEP_TMP === "1") return;
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

/** Stops every live child politely, then forcefully. */
export async function stopAll(graceMs = 3_000): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, graceMs)));
}

/** Installs the handlers that make sure no child outlives the bench. Call once, first thing. */
export function installCleanup(): void {
  process.on("exit", killAllNow);
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    const code = signal === "SIGINT" ? 130 : 143;
    if (interrupted) process.exit(code);
    interrupted = true;
    process.stdout.write(`\n${signal}: stopping children...\n`);
    const force = setTimeout(() => process.exit(code), 2_000);
    void stopAll(1_500).finally(() => {
      clearTimeout(force);
      process.exit(code);
    });
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);
}

export interface ProcMemory {
  /** Current resident set, KiB. */
  vmRssKiB: number;
  /** Peak resident set since start or the last resetPeak, KiB. */
  vmHwmKiB: number;
}

export function readProcMemory(pid: number): ProcMemory {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status);
    if (match?.[1] === undefined) throw new Error(`/proc/${pid}/status has no ${name}`);
    return Number(match[1]);
  };
  return { vmRssKiB: field("VmRSS"), vmHwmKiB: field("VmHWM") };
}

/** Resets VmHWM to the current RSS (Linux clear_refs 5); false when the kernel refuses. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU time of a process (all its threads), or of one of its threads, in milliseconds. */
export function readProcCpuMs(pid: number, tid?: number): number {
  const stat = readFileSync(
    tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`,
    "utf8",
  );
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** Busy CPU time of the whole machine (all CPUs, all processes, kernel included), in milliseconds. */
export function readSystemBusyMs(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  const busy = [user, nice, system, irq, softirq, steal].reduce<number>(
    (sum, value) => sum + (value ?? 0),
    0,
  );
  return (busy * 1000) / CLOCK_TICKS_PER_SECOND;
}
