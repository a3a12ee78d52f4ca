/**
 * A minimal owner-app client for the setup benchmarks: JSON envelopes to the owner route over one
 * keep-alive agent (as an app polling status would hold its connection), with per-call timing.
 */
import { Agent, request } from "node:http";
import { MANAGE_PATH } from "./scenarios.js";

export interface Answer<T = Record<string, unknown>> {
  status: number;
  result: T | undefined;
  error: { code: string; message: string } | undefined;
  text: string;
}

export interface OwnerClient {
  call<T = Record<string, unknown>>(method: string, params: Record<string, unknown>): Promise<Answer<T>>;
  /** Like call, but throws unless the answer is 200 with a result. */
  result<T = Record<string, unknown>>(method: string, params: Record<string, unknown>): Promise<T>;
  close(): void;
}

export function ownerClient(url: string, token: string): OwnerClient {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const target = new URL(MANAGE_PATH, url);
  const call = <T>(method: string, params: Record<string, unknown>): Promise<Answer<T>> =>
    new Promise((resolve, reject) => {
      const body = Buffer.from(JSON.stringify({ method, params }));
      const req = request(
        target,
        {
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            "content-length": body.length,
            authorization: `Bearer ${token}`,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let json: { result?: T; error?: { code: string; message: string } } = {};
            try {
              json = JSON.parse(text) as typeof json;
            } catch {
              // reported through `text`
            }
            resolve({ status: res.statusCode ?? 0, result: json.result, error: json.error, text });
          });
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} timed out`)));
      req.on("error", reject);
      req.end(body);
    });
  return {
    call,
    result: async <T>(method: string, params: Record<string, unknown>): Promise<T> => {
      const answer = await call<T>(method, params);
      if (answer.status !== 200 || answer.result === undefined) {
        throw new Error(`${method} answered ${answer.status}: ${answer.text.slice(0, 500)}`);
      }
      return answer.result;
    },
    close: () => agent.destroy(),
  };
}

export interface OperationView {
  id: string;
  phase: string;
  saved: boolean;
  authorizationUrl: string | null;
  error: { code: string; message: string } | null;
  runtime: { applied: boolean; status: string; reason: string | null } | null;
}

/**
 * Polls mcp.setup.status every `intervalMs` until the operation is in one of `phases`; throws when it ends
 * elsewhere or takes longer than `timeoutMs`. Returns the snapshot and the number of polls.
 */
export async function pollUntil(
  client: OwnerClient,
  id: string,
  phases: readonly string[],
  intervalMs: number,
  timeoutMs = 20_000,
): Promise<{ operation: OperationView; polls: number }> {
  const deadline = performance.now() + timeoutMs;
  for (let polls = 1; ; polls += 1) {
    const operation = await client.result<OperationView>("mcp.setup.status", { id });
    if (phases.includes(operation.phase)) return { operation, polls };
    if (operation.phase !== "checking" || performance.now() > deadline) {
      throw new Error(
        `operation ${id} is ${operation.phase} (wanted ${phases.join("/")}): ${JSON.stringify(operation.error)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A fresh requestId (16-128 of [A-Za-z0-9_-]). */
let counter = 0;
export function freshRequestId(label: string): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now()}-${counter}`.padEnd(16, "x");
}
