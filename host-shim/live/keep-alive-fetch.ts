/**
 * The fetch a live connection's Streamable HTTP transport sends its MCP requests with: undici's `request`
 * over its own keep-alive Agent instead of the global fetch, whose per-request machinery (Request and
 * Response objects, body streams, abort plumbing) costs several times more CPU than the request itself on
 * a fast server (measured: ~650-820 us per call against ~150-250 us). It keeps what the transport relies
 * on from fetch:
 *
 * - the signal is honoured: an abort before or during the request or its body rejects (or errors the
 *   body) with the signal's reason, and the request is torn down;
 * - redirects are never followed (the SDK asks for `redirect: "manual"` and follows same-origin ones
 *   itself); the 3xx answer is returned as it is;
 * - a JSON answer is read whole, up to MAX_BUFFERED_BYTES; anything else (the SSE answers and the GET
 *   stream), and a JSON answer beyond that, is streamed, never buffered;
 * - a failure below HTTP rejects like fetch: a TypeError "fetch failed" whose `cause` is undici's error,
 *   with its `code` (ECONNREFUSED, ENOTFOUND, the TLS codes, UND_ERR_*), which the failure
 *   classification reads;
 * - TLS is verified as Node does by default (system CAs, NODE_EXTRA_CA_CERTS, host name);
 * - gzip, deflate and br answers are decoded, as fetch does; like fetch (undici's defaults), it waits at
 *   most 300 s for headers and 300 s between body chunks.
 *
 * Anything outside that (a Request object, a body that is not a string, another redirect mode or
 * method) goes to the global fetch unchanged.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { Agent, type Dispatcher, request } from "undici";

/** A JSON answer up to this size is read whole; a larger one is streamed like any other body. */
export const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const METHODS = new Set(["GET", "POST", "DELETE"]);
/** Statuses whose Response must have a null body. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** Keep-alive connections per origin; undici's default timeouts are fetch's. */
const agent = new Agent();

export const keepAliveFetch: typeof fetch = (input, init) => {
  const method = (init?.method ?? "GET").toUpperCase();
  const body = init?.body;
  if (
    !(typeof input === "string" || input instanceof URL) ||
    init?.redirect !== "manual" ||
    !METHODS.has(method) ||
    !(body === undefined || body === null || typeof body === "string")
  ) {
    return globalThis.fetch(input, init);
  }
  const target = typeof input === "string" ? new URL(input) : input;
  if (target.protocol !== "http:" && target.protocol !== "https:") return globalThis.fetch(input, init);
  return send(target, method, init, body ?? null);
};

async function send(target: URL, method: string, init: RequestInit, body: string | null): Promise<Response> {
  const signal = init.signal ?? null;
  if (signal?.aborted) throw signal.reason;
  // undici gets a signal of this request alone: it listens on it per request, and the transport's own
  // signal lives as long as the connection.
  const controller = signal === null ? null : new AbortController();
  const detach =
    signal === null || controller === null ? noop : watch(signal, () => controller.abort(signal.reason));
  const failure = (error: unknown): unknown => {
    detach();
    return controller?.signal.aborted
      ? controller.signal.reason
      : new TypeError("fetch failed", { cause: error });
  };
  let data: Dispatcher.ResponseData;
  try {
    data = await request(target, {
      method: method as Dispatcher.HttpMethod,
      headers: requestHeaders(init.headers),
      body,
      signal: controller?.signal,
      dispatcher: agent,
    });
  } catch (error) {
    throw failure(error);
  }
  data.body.once("close", detach);
  try {
    return await answer(data);
  } catch (error) {
    data.body.destroy();
    throw failure(error);
  }
}

/**
 * One abort listener per signal, whatever the number of requests: a transport passes the same long-lived
 * signal with every request, and an EventTarget listener per request would cost more than this Set.
 */
const watchers = new WeakMap<AbortSignal, Set<() => void>>();

function watch(signal: AbortSignal, onAbort: () => void): () => void {
  let waiting = watchers.get(signal);
  if (waiting === undefined) {
    const set = new Set<() => void>();
    waiting = set;
    watchers.set(signal, set);
    signal.addEventListener(
      "abort",
      () => {
        for (const abort of [...set]) abort();
        set.clear();
      },
      { once: true },
    );
  }
  const set = waiting;
  set.add(onAbort);
  return () => set.delete(onAbort);
}

function noop(): void {}

function requestHeaders(input: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = { "accept-encoding": "gzip, deflate, br", "user-agent": "node" };
  if (input === undefined) return out;
  const headers = input instanceof Headers ? input : new Headers(input);
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

async function answer(data: Dispatcher.ResponseData): Promise<Response> {
  const status = data.statusCode;
  const headers = responseHeaders(data.headers);
  const init = { status, statusText: data.statusText ?? "", headers };
  const res = data.body;
  if (NULL_BODY.has(status) || data.headers["content-length"] === "0") {
    res.resume();
    return new Response(NULL_BODY.has(status) ? null : "", init);
  }
  const decoded = decode(res, headers.get("content-encoding"));
  if (decoded !== res) {
    // The decoded length is not the announced one.
    headers.delete("content-encoding");
    headers.delete("content-length");
  }
  if (!isJson(headers.get("content-type"))) return new Response(webStream(decoded), init);
  const chunks: Buffer[] = [];
  let size = 0;
  return new Promise<Response>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size <= MAX_BUFFERED_BYTES) return;
      // Too big to hold: hand over what was read and stream the rest.
      decoded.off("data", onData);
      decoded.off("end", onEnd);
      decoded.off("error", reject);
      decoded.off("close", onClose);
      decoded.pause();
      decoded.unshift(Buffer.concat(chunks, size));
      resolve(new Response(webStream(decoded), init));
    };
    const onEnd = () => {
      decoded.off("error", reject);
      decoded.off("close", onClose);
      resolve(new BufferedResponse(Buffer.concat(chunks, size).toString("utf8"), init));
    };
    // A connection that ends before the body did, without an error of its own.
    const onClose = () =>
      reject(Object.assign(new Error("The answer was cut short."), { code: "ECONNRESET" }));
    decoded.on("data", onData);
    decoded.once("end", onEnd);
    decoded.once("error", reject);
    decoded.once("close", onClose);
  });
}

/** The answer's body as fetch gives it: decoded when the server used gzip, deflate or br. */
function decode(res: Readable, encoding: string | null): Readable {
  const codings = (encoding ?? "").toLowerCase().trim();
  const decoder =
    codings === "gzip" || codings === "x-gzip"
      ? createGunzip()
      : codings === "deflate"
        ? createInflate()
        : codings === "br"
          ? createBrotliDecompress()
          : null;
  if (decoder === null) return res;
  res.once("error", (error) => decoder.destroy(error));
  // Ending or cancelling the decoded body ends the answer's own (harmless once it has all arrived).
  decoder.once("close", () => res.destroy());
  return res.pipe(decoder);
}

/**
 * A JSON answer read whole. It is a real Response (status, headers, ok, type, instanceof), but text() and
 * json() answer from the held text, without the web stream that a Response with a string body builds and
 * reads through. Everything else that touches the body (body, bodyUsed once streamed, arrayBuffer, blob,
 * bytes, formData, clone) is served by an ordinary Response made from the same text when first needed,
 * and from then on every read goes to it; one made after text() or json() comes already read.
 */
export class BufferedResponse extends Response {
  readonly #text: string;
  readonly #init: ResponseInit;
  #read = false;
  #ordinary: Response | undefined;

  constructor(text: string, init: ResponseInit) {
    super(null, init);
    this.#text = text;
    this.#init = init;
  }

  static {
    const ordinary = (response: BufferedResponse): Response => {
      if (response.#ordinary === undefined) {
        response.#ordinary = new Response(response.#text, response.#init);
        if (response.#read) void response.#ordinary.text();
      }
      return response.#ordinary;
    };
    function text(this: BufferedResponse): Promise<string> {
      if (this.#ordinary !== undefined) return this.#ordinary.text();
      if (this.#read) return Promise.reject(new TypeError("Body is unusable: Body has already been read"));
      this.#read = true;
      return Promise.resolve(this.#text);
    }
    // Response's type declares its members as properties; they are on its prototype, and so are these.
    const members: Record<string, PropertyDescriptor> = {
      text: { value: text },
      json: {
        async value(this: BufferedResponse) {
          return JSON.parse(await text.call(this));
        },
      },
      body: {
        get(this: BufferedResponse) {
          return ordinary(this).body;
        },
      },
      bodyUsed: {
        get(this: BufferedResponse) {
          return this.#ordinary?.bodyUsed ?? this.#read;
        },
      },
    };
    for (const name of ["arrayBuffer", "blob", "bytes", "formData", "clone"]) {
      members[name] = {
        value(this: BufferedResponse) {
          const target = ordinary(this) as unknown as Record<string, () => unknown>;
          return target[name]?.call(target);
        },
      };
    }
    for (const [name, member] of Object.entries(members)) {
      const writable = "value" in member ? { writable: true } : {};
      Object.defineProperty(BufferedResponse.prototype, name, { ...member, ...writable, configurable: true });
    }
  }
}

/**
 * The body as a web stream, read as the consumer pulls. Cancelling it destroys the body: undici has
 * released the connection of an answer that fully arrived, and tears down one still arriving, as fetch
 * does.
 */
function webStream(body: Readable): ReadableStream<Uint8Array> {
  /** Set once the stream is closed, errored or cancelled: the controller then takes nothing more. */
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      body.on("data", (chunk: Buffer) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 0) <= 0) body.pause();
      });
      body.once("end", () => {
        if (done) return;
        done = true;
        controller.close();
      });
      body.once("error", (error) => {
        if (done) return;
        done = true;
        controller.error(error);
      });
      body.once("close", () => {
        if (done) return;
        done = true;
        controller.error(cutShort());
      });
      body.pause();
    },
    pull() {
      body.resume();
    },
    cancel() {
      done = true;
      body.destroy();
    },
  });
}

function cutShort(): Error {
  return Object.assign(new Error("The answer was cut short."), { code: "ECONNRESET" });
}

function responseHeaders(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.append(name, value);
  }
  return headers;
}

function isJson(contentType: string | null): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "application/json";
}
