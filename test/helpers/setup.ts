import { expect } from "chai";
import type { TestGateway } from "./gateway.js";
import { type Reply, manage } from "./http.js";

export interface Snapshot {
  id: string;
  requestId: string;
  name: string;
  phase: string;
  createdAt: string;
  expiresAt: string;
  authorizationUrl: string | null;
  tools: Array<{ name: string; description: string }>;
  capabilities: { resources: boolean; prompts: boolean } | null;
  error: { code: string; message: string } | null;
  saved: boolean;
  runtime: { applied: boolean; status: string; reason: string | null } | null;
  permissions: unknown;
}

let counter = 0;
/** A fresh requestId per call (16–128 of letters, digits, hyphens, underscores). */
export function requestId(label = "req"): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now()}-${counter}`.padEnd(16, "x");
}

export async function call(
  gw: TestGateway,
  method: string,
  params: Record<string, unknown>,
  profile: string | null = null,
) {
  return manage(gw.url, gw.token, { method, params, profile }, gw.ca === undefined ? {} : { ca: gw.ca });
}

export function resultOf<T = Snapshot>(reply: Reply): T {
  expect(reply.status, reply.text).to.equal(200);
  return (reply.json as { result: T }).result;
}

export function errorOf(reply: Reply): { code: string; message: string } {
  expect(reply.status, reply.text).to.be.oneOf([400, 404, 503]);
  return (reply.json as { error: { code: string; message: string } }).error;
}

/** Polls mcp.setup.status until the operation reaches one of `phases` (status polling, as an owner app does). */
export async function waitForPhase(
  gw: TestGateway,
  id: string,
  phases: string[],
  profile: string | null = null,
  timeoutMs = 20_000,
): Promise<Snapshot> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const snapshot = resultOf(await call(gw, "mcp.setup.status", { id }, profile));
    if (phases.includes(snapshot.phase)) return snapshot;
    if (Date.now() > deadline)
      throw new Error(`operation stayed ${snapshot.phase}: ${JSON.stringify(snapshot.error)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function beginAndWait(
  gw: TestGateway,
  params: Record<string, unknown>,
  phases: string[],
  profile: string | null = null,
): Promise<Snapshot> {
  const begun = resultOf(await call(gw, "mcp.setup.begin", { requestId: requestId(), ...params }, profile));
  return waitForPhase(gw, begun.id, phases, profile);
}

export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export function oauthRedirectUri(): string {
  return `http://127.0.0.1:45678/mcp/oauth/callback/${"ab".repeat(16)}`;
}
