import { EventEmitter } from "node:events";
import type {
  AccessKey,
  AccessRegistry,
  ExternalTool,
  ExternalToolResult,
} from "../../host-shim/access-contract.js";
import { secretDigest } from "../../host-shim/mcp-endpoint/index.js";

/** Secrets the tests present; the log checks look for each of them. */
export const SECRET_A = "mcpk-test-A-7f3a91c2e4b5d6a8f0e1d2c3b4a59687";
export const SECRET_B = "mcpk-test-B-0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f";
export const WRONG_SECRET = "mcpk-test-WRONG-99aa88bb77cc66dd55ee44ff";

/** How long `slow` waits on its own when nothing stops it; tests assert it never got that far. */
export const SLOW_TOOL_MS = 10_000;
export const BIG_RESULT_BYTES = 1024 * 1024 + 4096;

const TOOLS: Record<string, ExternalTool> = {
  echo: {
    name: "echo",
    description: "Returns its text.",
    inputSchema: { type: "object", properties: { text: { type: "string" } } },
  },
  slow: {
    name: "slow",
    description: "Waits for its signal (or, with ignoreSignal, for the test to release it).",
    inputSchema: { type: "object", properties: { ignoreSignal: { type: "boolean" } } },
  },
  big: { name: "big", description: "Returns more than the result limit.", inputSchema: { type: "object" } },
  vault__read: {
    name: "vault__read",
    description: "Key B's connection tool.",
    inputSchema: { type: "object" },
  },
};

export const KEY_A: AccessKey = {
  id: "key-a",
  label: "Agent A",
  sessionKey: "agent:main:a",
  tools: ["echo", "slow", "big"],
  expiresAt: Date.now() + 3_600_000,
};

export const KEY_B: AccessKey = {
  id: "key-b",
  label: "Agent B",
  sessionKey: "agent:main:b",
  tools: ["vault__read", "echo"],
  expiresAt: Date.now() + 3_600_000,
};

export interface SlowCall {
  signal: AbortSignal;
  /** True once the slow tool's own timer fired: the call was not stopped in time. */
  timerFired: boolean;
  release(): void;
}

/**
 * A test double of the registry's data: two keys by digest and tools implemented here. It records the
 * calls that reach it, so a test can prove the endpoint refused something without asking.
 */
export class RegistryDouble implements AccessRegistry {
  readonly calls: Array<{ keyId: string; name: string }> = [];
  readonly slowCalls: SlowCall[] = [];
  private readonly keys = new Map<string, AccessKey>([
    [secretDigest(SECRET_A), KEY_A],
    [secretDigest(SECRET_B), KEY_B],
  ]);
  private readonly revoked = new Set<string>();
  private readonly listeners = new Set<(keyId: string) => void>();
  private readonly events = new EventEmitter();

  authenticate(digest: string): AccessKey | null {
    const key = this.keys.get(digest);
    return key === undefined || this.revoked.has(key.id) ? null : key;
  }

  async toolsFor(key: AccessKey): Promise<ExternalTool[]> {
    return key.tools.flatMap((name) => (TOOLS[name] === undefined ? [] : [TOOLS[name]]));
  }

  async callTool(
    key: AccessKey,
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ExternalToolResult> {
    this.calls.push({ keyId: key.id, name });
    if (!key.tools.includes(name)) throw { code: "UNKNOWN_TOOL", message: "Unknown tool." };
    switch (name) {
      case "echo":
        return { content: [{ type: "text", text: String(args.text ?? "") }] };
      case "big":
        return { content: [{ type: "text", text: "x".repeat(BIG_RESULT_BYTES) }] };
      case "slow":
        return this.slow(signal, args.ignoreSignal === true);
      default:
        return { content: [{ type: "text", text: `${name} ran` }] };
    }
  }

  onInvalidated(listener: (keyId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  /** What the real registry does on revocation: the key stops authenticating, then listeners hear of it. */
  revoke(keyId: string): void {
    this.revoked.add(keyId);
    for (const listener of this.listeners) listener(keyId);
  }

  /** Resolves once `count` slow calls have started. */
  async waitForSlow(count: number): Promise<void> {
    while (this.slowCalls.length < count) await new Promise((resolve) => this.events.once("slow", resolve));
  }

  releaseAll(): void {
    for (const call of this.slowCalls) call.release();
  }

  private slow(signal: AbortSignal, ignoreSignal: boolean): Promise<ExternalToolResult> {
    return new Promise((resolve, reject) => {
      const done = (text: string) => resolve({ content: [{ type: "text", text }] });
      const call: SlowCall = { signal, timerFired: false, release: () => undefined };
      const timer = setTimeout(() => {
        call.timerFired = true;
        done("slow finished on its own");
      }, SLOW_TOOL_MS);
      call.release = () => {
        clearTimeout(timer);
        done("slow released");
      };
      if (!ignoreSignal) {
        signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            reject({ code: "CANCELLED", message: "The slow tool was cancelled." });
          },
          { once: true },
        );
      }
      this.slowCalls.push(call);
      this.events.emit("slow");
    });
  }
}
