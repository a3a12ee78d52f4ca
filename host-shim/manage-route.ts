import type { IncomingMessage, ServerResponse } from "node:http";
import type { ErrorCode } from "../plugin/errors.js";
import { ERROR_TABLE, UNAVAILABLE_MESSAGE } from "../plugin/errors.js";
import { presentedToken, tokenMatches } from "./auth.js";
import { type BodyOutcome, drainAndLingerClose, mustCloseForUnreadBody, readBoundedBody } from "./body.js";
import type { GatewayHost } from "./contract.js";
import { type LocalInvoke, dispatch } from "./dispatch.js";
import { type Envelope, isJsonContentType, parseEnvelope } from "./envelope.js";
import { type Frame, errorFrame, fixedFrame, writeFrame } from "./framing.js";
import { passesOriginCheck } from "./origin.js";
import type { DispatchFault } from "./pool.js";
import { isSecureTransport } from "./transport.js";

export const MANAGE_PATH = "/api/mcp/manage";

/** The refusals, serialized once: a refused request costs the route as little as it can. */
const REFUSALS = {
  SECURE_TRANSPORT_REQUIRED: refusal(
    "SECURE_TRANSPORT_REQUIRED",
    "This route needs TLS or a loopback connection, from a page of this gateway.",
  ),
  UNAUTHORIZED: refusal("UNAUTHORIZED", "A valid gateway token is required."),
  METHOD_NOT_ALLOWED: refusal("METHOD_NOT_ALLOWED", "This route answers POST only."),
  TOO_LARGE: refusal("TOO_LARGE", "The request body exceeds 256 KiB."),
};
const NOT_JSON = fixedFrame(400, "INVALID_PARAMS", "Content-Type must be application/json.");
const CUT_SHORT = fixedFrame(400, "INVALID_PARAMS", "The request body was cut short.");
const UNAVAILABLE = fixedFrame(503, "UNAVAILABLE", UNAVAILABLE_MESSAGE);

interface RequestRecord {
  method: string | null;
  profile: string | null;
  fault: DispatchFault | null;
}

/**
 * The owner route, checked in the spec's order: transport, host/origin, token, body, envelope, then
 * dispatch. Every response leaves through writeFrame; one log line per request names no header or body.
 * The checks before the body are synchronous, so a refused request is answered in the tick it arrived.
 */
export function createManageHandler(host: GatewayHost, invoke: LocalInvoke) {
  const tokenHeader = (host.tokenHeader ?? "x-service-token").toLowerCase();
  const allowedHosts = new Set((host.allowedHosts ?? []).map((name) => name.toLowerCase()));

  return function handleManage(req: IncomingMessage, res: ServerResponse): Promise<void> | undefined {
    const started = performance.now();
    const record: RequestRecord = { method: null, profile: null, fault: null };
    const refusal = refuseBeforeBody(req);
    if (refusal !== null) {
      respond(req, res, refusal, record, started);
      return undefined;
    }
    // Promises chained by hand rather than awaited in nested async functions: on a busy route each await
    // and each async return is another turn of the microtask queue per request.
    const crash = () => {
      record.fault = "crash";
      respond(req, res, UNAVAILABLE, record, started);
    };
    return readBoundedBody(req)
      .then((body) => {
        const checked = checkBody(body, record);
        if (!("method" in checked)) return respond(req, res, checked, record, started);
        return dispatch(checked, host, invoke).then((run) => {
          record.profile = run.reachedProfile;
          record.fault = run.fault;
          respond(req, res, run.frame, record, started);
        });
      })
      .catch(crash);
  };

  function respond(
    req: IncomingMessage,
    res: ServerResponse,
    frame: Frame,
    record: RequestRecord,
    started: number,
  ): void {
    const unread = mustCloseForUnreadBody(req);
    if (unread) drainAndLingerClose(req);
    writeFrame(res, frame, { close: unread, allow: frame.status === 405 ? "POST" : undefined });
    // Logged once the response is handed to the socket: a 'finish' listener per request costs more.
    host.logger.info(
      {
        route: MANAGE_PATH,
        method: record.method,
        status: res.statusCode,
        durationMs: performance.now() - started,
        profile: record.profile,
        fault: record.fault,
      },
      "mcp-manage request",
    );
  }

  function refuseBeforeBody(req: IncomingMessage): Frame | null {
    if (!isSecureTransport(req.socket)) return REFUSALS.SECURE_TRANSPORT_REQUIRED;
    if (!passesOriginCheck(single(req.headers.origin), req.headers.host, allowedHosts)) {
      return REFUSALS.SECURE_TRANSPORT_REQUIRED;
    }
    if (!tokenMatches(presentedToken(req.headers, tokenHeader), host.getGatewayToken())) {
      return REFUSALS.UNAUTHORIZED;
    }
    if (req.method !== "POST") return REFUSALS.METHOD_NOT_ALLOWED;
    if (!isJsonContentType(req.headers["content-type"])) {
      return NOT_JSON;
    }
    return null;
  }

  /** The body's refusal, or its envelope (the method is recorded for the log line). */
  function checkBody(body: BodyOutcome, record: RequestRecord): Frame | Envelope {
    if (body.kind === "too_large") return REFUSALS.TOO_LARGE;
    if (body.kind === "aborted") return CUT_SHORT;
    const parsed = parseEnvelope(body.body);
    if (!parsed.ok)
      return errorFrame(ERROR_TABLE[parsed.error.code].status, parsed.error.code, parsed.error.message);
    record.method = parsed.envelope.method;
    return parsed.envelope;
  }
}

function refusal(code: ErrorCode, message: string): Frame {
  return fixedFrame(ERROR_TABLE[code].status, code, message);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(",") : value;
}
