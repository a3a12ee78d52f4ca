import { type IncomingHttpHeaders, type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

export interface SendOptions {
  url: string;
  path?: string;
  method?: string;
  headers?: Record<string, string | string[]>;
  /** A JSON value to send, or raw bytes. */
  json?: unknown;
  raw?: Buffer | string;
  /** Send the body with Transfer-Encoding: chunked in pieces of this many bytes. */
  chunkSize?: number;
  ca?: string | undefined;
  /** Skip certificate checks (only for a certificate generated inside a child process). */
  insecure?: boolean;
  /** Local address to bind the client socket to. */
  localAddress?: string;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: unknown;
}

/** A real HTTP(S) request to a test gateway; TLS trusts only the test's own certificate. */
export function send(options: SendOptions): Promise<Reply> {
  const target = new URL(options.path ?? "/api/mcp/manage", options.url);
  const body =
    options.raw !== undefined
      ? Buffer.from(options.raw)
      : options.json !== undefined
        ? Buffer.from(JSON.stringify(options.json))
        : undefined;
  const headers: Record<string, string | string[] | number> = { ...(options.headers ?? {}) };
  const chunked = options.chunkSize !== undefined;
  if (body !== undefined && !chunked && !hasHeader(headers, "content-length"))
    headers["content-length"] = body.length;
  if (chunked) headers["transfer-encoding"] = "chunked";
  const requestFn = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = requestFn(
      target,
      {
        method: options.method ?? "POST",
        headers,
        ca: options.ca,
        rejectUnauthorized: options.insecure !== true,
        agent: false,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      },
      (res) => readReply(res).then(resolve, reject),
    );
    // A server may answer and close before the whole body is written; the reply is what counts.
    req.on("error", reject);
    if (body === undefined) {
      req.end();
    } else if (chunked) {
      const size = options.chunkSize ?? 16384;
      for (let offset = 0; offset < body.length; offset += size)
        req.write(body.subarray(offset, offset + size));
      req.end();
    } else {
      req.end(body);
    }
  });
}

/** Collects a response whole: status, headers, text, and its JSON when it parses. */
export function readReply(res: IncomingMessage): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (chunk: Buffer) => chunks.push(chunk));
    res.on("error", reject);
    res.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
    });
  });
}

function hasHeader(headers: Record<string, unknown>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

/** The standard authenticated JSON request of the owner route. */
export function manage(
  url: string,
  token: string,
  envelope: unknown,
  extra: Partial<SendOptions> = {},
): Promise<Reply> {
  return send({
    url,
    json: envelope,
    ...extra,
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${token}`,
      ...(extra.headers ?? {}),
    },
  });
}
