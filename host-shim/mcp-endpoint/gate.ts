import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import type { AccessKey, AccessRegistry } from "../access-contract.js";
import { hostNameOf, isLoopbackHostName } from "../origin.js";
import { isSecureTransport } from "../transport.js";
import { type Refusal, refusal } from "./replies.js";

/** A secret longer than this is not one the owner's client made; hashing it would be wasted work. */
const MAX_SECRET_LENGTH = 4096;

export type GateOutcome = { ok: true; key: AccessKey; digest: string } | { ok: false; refusal: Refusal };

/** sha256 hex of the secret: the only form in which a key's secret is ever compared or kept. */
export function secretDigest(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/**
 * The checks every /mcp request passes before any MCP work, in this order: transport, Origin, query
 * string, credential. Each refusal says what failed and nothing about the key or the registry.
 */
export function checkGate(
  req: IncomingMessage,
  registry: AccessRegistry,
  gatewayTokenHeader: string,
): GateOutcome {
  const transport = checkTransport(req);
  if (transport !== null) return { ok: false, refusal: transport };
  // /mcp is for agents, not pages: browsers send Origin on every POST and cross-origin fetch; none is served.
  if (req.headers.origin !== undefined) {
    return fail(
      refusal(
        403,
        "SECURE_TRANSPORT_REQUIRED",
        "Browser requests (with an Origin header) are not accepted on /mcp.",
      ),
    );
  }
  // A credential in a URL ends up in logs and histories, so no query string is accepted at all.
  if ((req.url ?? "").includes("?")) {
    return fail(
      refusal(
        400,
        "INVALID_REQUEST",
        "/mcp takes no query string; send the key in the Authorization header.",
        { rpcCode: -32600 },
      ),
    );
  }
  return authenticate(req, registry, gatewayTokenHeader);
}

/**
 * TLS, or a loopback peer that also names a loopback host: a loopback peer can still be a DNS-rebound
 * browser page or a local proxy relaying a remote name, and the Host header is what tells those apart.
 * Only the socket counts; Forwarded and X-Forwarded-* are never read.
 */
function checkTransport(req: IncomingMessage): Refusal | null {
  if (!isSecureTransport(req.socket)) {
    return refusal(403, "SECURE_TRANSPORT_REQUIRED", "/mcp needs TLS or a loopback connection.");
  }
  if ((req.socket as TLSSocket).encrypted === true) return null;
  const host = hostNameOf(single(req.headers.host));
  if (host === null || !isLoopbackHostName(host)) {
    return refusal(
      403,
      "SECURE_TRANSPORT_REQUIRED",
      "Over plain HTTP, /mcp answers only to a loopback host name.",
    );
  }
  return null;
}

function authenticate(
  req: IncomingMessage,
  registry: AccessRegistry,
  gatewayTokenHeader: string,
): GateOutcome {
  // Node keeps only the first of repeated Authorization headers; rawHeaders shows them all.
  const authorizations = rawHeaderValues(req, "authorization");
  if (req.headers[gatewayTokenHeader] !== undefined) {
    return unauthorized(true, "The gateway token is never accepted on /mcp; use an access key.");
  }
  if (authorizations.length === 0)
    return unauthorized(false, "An access key is required: Authorization: Bearer <key>.");
  if (authorizations.length > 1) return unauthorized(true, "Send exactly one Authorization header.");
  const match = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i.exec(authorizations[0] ?? "");
  const secret = match?.[1];
  if (secret === undefined) {
    const bearer = /^Bearer\b/i.test(authorizations[0] ?? "");
    return unauthorized(bearer, "Only Authorization: Bearer <key> is accepted.");
  }
  if (secret.length > MAX_SECRET_LENGTH) return unauthorized(true, "The access key is not valid.");
  const digest = secretDigest(secret);
  const key = registry.authenticate(digest);
  if (key === null) return unauthorized(true, "The access key is not valid (unknown, expired or revoked).");
  return { ok: true, key, digest };
}

/** RFC 6750: every 401 names the scheme; `invalid_token` only when a credential was presented. */
function unauthorized(presented: boolean, message: string): GateOutcome {
  const challenge = presented ? 'Bearer error="invalid_token"' : "Bearer";
  return fail(refusal(401, "UNAUTHORIZED", message, { headers: { "WWW-Authenticate": challenge } }));
}

function fail(answer: Refusal): GateOutcome {
  return { ok: false, refusal: answer };
}

function rawHeaderValues(req: IncomingMessage, name: string): string[] {
  const values: string[] = [];
  for (let index = 0; index + 1 < req.rawHeaders.length; index += 2) {
    if (req.rawHeaders[index]?.toLowerCase() === name) values.push(req.rawHeaders[index + 1] ?? "");
  }
  return values;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(",") : value;
}
