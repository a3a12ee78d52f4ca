/**
 * The baseline: a bare node:http hello-world server, run as its own process by the bench. It answers every
 * request with a small fixed body on a kept-alive connection and prints its URL when it listens.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const BODY = Buffer.from("hello world\n");

/** A request with `X-Bench-Close` is answered with `Connection: close`: the cost of a connection per request. */
const server = createServer((req, res) => {
  const close = req.headers["x-bench-close"] !== undefined;
  res.writeHead(200, {
    "Content-Type": "text/plain",
    "Content-Length": BODY.length,
    ...(close ? { Connection: "close" } : {}),
  });
  res.end(BODY);
});

const args = process.argv.slice(2);
const port = Number(args.find((arg) => /^\d+$/.test(arg)) ?? "0");
server.listen(port, "127.0.0.1", () => {
  const { port: bound } = server.address() as AddressInfo;
  process.stdout.write(`hello-server listening on http://127.0.0.1:${bound}\n`);
});

const stop = () => {
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
