/**
 * The baseline: a bare node:http hello-world server, run as its own process by the bench. It answers every
 * request with a small fixed body on a kept-alive connection and prints its URL when it listens.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { createLogDestination } from "../fixtures/gateway/log-destination.js";

const BODY = Buffer.from("hello world\n");
const args = process.argv.slice(2);
/**
 * With --pino, one pino line per request, on a destination set up as the reference gateway's: the floor of
 * any route that logs each request, for the bench's reference row (the bare baseline never logs).
 */
const destination = args.includes("--pino") ? createLogDestination(2) : null;
const logger = destination === null ? null : pino({}, destination);

/** A request with `X-Bench-Close` is answered with `Connection: close`: the cost of a connection per request. */
const server = createServer((req, res) => {
  const close = req.headers["x-bench-close"] !== undefined;
  res.writeHead(200, {
    "Content-Type": "text/plain",
    "Content-Length": BODY.length,
    ...(close ? { Connection: "close" } : {}),
  });
  res.end(BODY);
  // The line the gateway writes for an answered root request (host-shim/manage-route.ts): no null fields.
  logger?.info({ method: "mcp.capabilities", status: 200, durationMs: 0 }, "mcp-manage request");
});

const port = Number(args.find((arg) => /^\d+$/.test(arg)) ?? "0");
server.listen(port, "127.0.0.1", () => {
  const { port: bound } = server.address() as AddressInfo;
  process.stdout.write(`hello-server listening on http://127.0.0.1:${bound}\n`);
});

const stop = () => {
  destination?.flushSync();
  server.close();
  server.closeAllConnections();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
// With --exit-with-stdin the bench holds our stdin open: when it goes away (even killed outright), so do we.
if (args.includes("--exit-with-stdin")) {
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
}
