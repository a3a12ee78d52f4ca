/**
 * What the /mcp endpoint needs of the access-key registry (the profile runtime implements it). The
 * endpoint owns the HTTP and MCP side; the registry owns keys, their tools and their conversation.
 */
export interface AccessKey {
  id: string;
  label: string;
  sessionKey: string;
  /** The exact tool names this key allows (host conversation tools and `<connection>__<tool>`). */
  tools: readonly string[];
  expiresAt: number;
}

export interface ExternalTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** An MCP tools/call result, as the SDK's CallToolResult. */
export interface ExternalToolResult {
  content: Array<Record<string, unknown>>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}

export type AccessCallErrorCode = "UNKNOWN_TOOL" | "UNAVAILABLE" | "CANCELLED" | "CALL_FAILED" | "TOO_LARGE";

export interface AccessRegistry {
  /**
   * The key whose secret hashes (sha256, hex) to this digest, if it is active now: not expired, not revoked,
   * and its conversation still exists. Null otherwise; the gateway token never matches.
   */
  authenticate(secretDigest: string): AccessKey | null;
  /** The key's tools that can be used right now, in the key's order. */
  toolsFor(key: AccessKey): Promise<ExternalTool[]>;
  /**
   * Calls one of the key's tools in the key's conversation. Rejects with `{ code: AccessCallErrorCode,
   * message }` data: UNKNOWN_TOOL for any name outside the key (or not usable now).
   */
  callTool(
    key: AccessKey,
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ExternalToolResult>;
  /** Called with a key id when that key stops being valid (revoked, expired, conversation deleted). */
  onInvalidated(listener: (keyId: string) => void): () => void;
}
