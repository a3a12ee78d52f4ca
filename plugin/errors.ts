/**
 * The one table of error codes this package answers with. docs/protocol.md documents each code and a test
 * keeps the two in step. Route codes carry their own HTTP status; a method's own error is always 400
 * (the spec's "method-specific code"), whatever its code.
 */
export const ERROR_TABLE = {
  UNAUTHORIZED: { status: 401, when: "Missing or wrong gateway token, or an empty configured token." },
  SECURE_TRANSPORT_REQUIRED: {
    status: 403,
    when: "The socket is neither TLS nor a loopback peer, or the host/origin check failed.",
  },
  METHOD_NOT_ALLOWED: { status: 405, when: "The route answers POST only." },
  TOO_LARGE: { status: 413, when: "The request body exceeds 256 KiB." },
  INVALID_PARAMS: {
    status: 400,
    when: "Invalid JSON, content type, envelope, profile selector or method parameters.",
  },
  UNKNOWN_METHOD: { status: 400, when: "The method is outside the allowlist." },
  PROFILE_NOT_FOUND: { status: 404, when: "The profile host has no profile of that name." },
  PROFILE_HOST_UNAVAILABLE: {
    status: 503,
    when: "A profile was requested but the gateway has no profile host.",
  },
  NOT_FOUND: { status: 400, when: "No operation, connection, chat request or key with that id or name." },
  CONFLICT: {
    status: 400,
    when: "The same requestId or id was used with different params, or a different decision was already made.",
  },
  BUSY: {
    status: 400,
    when: "Another live operation holds that connection name, or the operation is committing.",
  },
  CANCELLED: {
    status: 400,
    when: "The operation or requestId was cancelled; a fresh setup needs a fresh requestId.",
  },
  NOT_READY: {
    status: 400,
    when: "The operation is not in the phase this method needs (e.g. confirm before review).",
  },
  EXPIRED: { status: 400, when: "The operation passed its 600 s lifetime." },
  CONFIG_INVALID: {
    status: 400,
    when: "The draft names an unknown catalog entry, undeclared fields, or a bad config.",
  },
  CONNECTION_FAILED: { status: 400, when: "The server could not be reached or is not a usable MCP server." },
  OAUTH_INVALID: { status: 400, when: "The OAuth flow failed: bad callback, state mismatch, refused grant." },
  APPLY_FAILED: {
    status: 400,
    when: "The configuration was saved but could not be applied to the live runtime.",
  },
  APPLY_INTERRUPTED: { status: 400, when: "The operation was cancelled after its configuration was saved." },
  ACCESS_INVALID: {
    status: 400,
    when: "An access key request names a tool outside the catalog, reuses a digest, or is otherwise refused.",
  },
  LIMIT_REACHED: {
    status: 400,
    when: "A bounded store is full (e.g. 256 access keys); revoke or wait for expiry.",
  },
  UNAVAILABLE: {
    status: 503,
    when:
      "Dispatch failed unexpectedly (worker crash, timeout, out of memory, a bug); as a method error (400) " +
      "the feature is not available in this build or runtime.",
  },
} as const satisfies Record<string, { status: number; when: string }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

/** What crosses threads and the profile host: plain data, never an Error instance. */
export interface ErrorData {
  code: ErrorCode;
  message: string;
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_TABLE, value);
}

export function isErrorData(value: unknown): value is ErrorData {
  if (typeof value !== "object" || value === null) return false;
  const { code, message } = value as Record<string, unknown>;
  return isErrorCode(code) && typeof message === "string";
}

/** An error a method throws on purpose; its message is written for the owner and is safe to return. */
export class MethodError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = "MethodError";
    this.code = code;
  }
}

export function methodError(code: ErrorCode, message: string): MethodError {
  return new MethodError(code, message);
}

/** Fixed text for anything unexpected: raw exception text may carry secrets or internals. */
export const UNAVAILABLE_MESSAGE = "The request could not be completed; try again.";

/**
 * Turns anything thrown into data fit to cross a thread. Only errors that name a code from the table and
 * were marked as deliberate keep their message; everything else becomes the fixed UNAVAILABLE.
 */
export function toErrorData(error: unknown): { data: ErrorData; expected: boolean } {
  if (isErrorData(error) && (error as { name?: unknown }).name === "MethodError") {
    return { data: { code: error.code, message: error.message }, expected: true };
  }
  return { data: { code: "UNAVAILABLE", message: UNAVAILABLE_MESSAGE }, expected: false };
}
