/**
 * Validating the authorization response that came back to the redirect URI: state (constant time),
 * RFC 9207 `iss`, an `error`, then the code. Messages never echo what the callback carried, except a
 * registered RFC 6749 error code.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { AUTHORIZATION_ERROR_CODES } from "./oauth-support.js";
import type { AuthorizationTransaction, OAuthCallback } from "./types.js";

export type CallbackCheck = { ok: true; code: string } | { ok: false; message: string };

const ERROR_MESSAGES: Record<string, string> = {
  access_denied: "Access was denied at the authorization server (access_denied).",
  invalid_scope: "The authorization server refused the requested scope (invalid_scope).",
  temporarily_unavailable:
    "The authorization server is temporarily unavailable (temporarily_unavailable); try again.",
  server_error: "The authorization server failed (server_error); try again.",
};

/** Equal strings, compared in time independent of where they differ (both hashed to 32 bytes first). */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash("sha256").update(a, "utf8").digest();
  const right = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(left, right);
}

export function checkCallback(tx: AuthorizationTransaction, callback: OAuthCallback): CallbackCheck {
  if (typeof callback.state !== "string" || !constantTimeEqual(tx.state, callback.state)) {
    return { ok: false, message: "The callback does not belong to this authorization (state mismatch)." };
  }

  const metadata = tx.binding.metadata;
  const issuer = typeof metadata.issuer === "string" ? metadata.issuer : null;
  if (callback.iss !== undefined) {
    if (issuer === null || callback.iss !== issuer) {
      return {
        ok: false,
        message: "The callback came from a different authorization server (iss mismatch).",
      };
    }
  } else if (metadata.authorization_response_iss_parameter_supported === true) {
    return {
      ok: false,
      message: "The callback lacks the iss parameter its authorization server promises (RFC 9207).",
    };
  }

  if (callback.error !== undefined) {
    const code = callback.error;
    if (AUTHORIZATION_ERROR_CODES.has(code)) {
      return {
        ok: false,
        message: ERROR_MESSAGES[code] ?? `The authorization server refused the request (${code}).`,
      };
    }
    return { ok: false, message: "The authorization server refused the request." };
  }

  if (typeof callback.code !== "string" || callback.code === "") {
    return { ok: false, message: "The callback carries no authorization code." };
  }
  return { ok: true, code: callback.code };
}
