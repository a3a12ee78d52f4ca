import { execFileSync } from "node:child_process";
import { constants, closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { pino } from "pino";
import sinon from "sinon";
import { GATHER_MS, WRITE_AT_CHARS, createLogDestination } from "../fixtures/gateway/log-destination.js";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Reads a non-blocking pipe until `done` holds (or about five seconds pass), letting retries run between. */
async function drain(reader: number, done: (text: string) => boolean): Promise<string> {
  // Bytes first, decoded whole: a read may end inside a multi-byte character.
  const chunks: Buffer[] = [];
  const text = () => Buffer.concat(chunks).toString("utf8");
  const buffer = Buffer.alloc(64 * 1024);
  for (let rounds = 0; rounds < 200 && !done(text()); rounds++) {
    try {
      for (;;) {
        const read = readSync(reader, buffer);
        if (read === 0) break;
        chunks.push(Buffer.from(buffer.subarray(0, read)));
      }
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).to.equal("EAGAIN");
    }
    await sleep(25);
  }
  return text();
}

describe("the reference gateway's log destination", () => {
  let dir: string;
  const fds: number[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "log-destination-"));
  });
  afterEach(() => {
    for (const fd of fds.splice(0)) closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });
  const open = (path: string, flags: number | string) => {
    const fd = openSync(path, flags);
    fds.push(fd);
    return fd;
  };

  it("gathers lines across turns and writes them together within GATHER_MS, in order, pino's lines whole", async () => {
    // The gathering timer is faked, so a slow machine cannot fire it between the turns.
    const clock = sinon.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const file = join(dir, "log");
    try {
      const destination = createLogDestination(open(file, "w"));
      const logger = pino({ base: null }, destination);
      for (let i = 0; i < 3; i++) logger.info({ i }, "line");
      await nextTurn();
      for (let i = 3; i < 5; i++) logger.info({ i }, "line");
      await nextTurn();
      clock.tick(GATHER_MS - 1);
      expect(readFileSync(file, "utf8")).to.equal("");
      clock.tick(1);
    } finally {
      clock.restore();
    }
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    expect(lines.map((line) => (JSON.parse(line) as { i: number }).i)).to.deep.equal([0, 1, 2, 3, 4]);
  });

  it("writes at once when WRITE_AT_CHARS wait, and flushSync writes what waits", () => {
    const file = join(dir, "log");
    const destination = createLogDestination(open(file, "w"));
    const line = `${"x".repeat(1023)}\n`;
    for (let i = 0; i < WRITE_AT_CHARS / 1024; i++) destination.write(line);
    expect(readFileSync(file, "utf8").length).to.equal(WRITE_AT_CHARS);
    destination.write("last\n");
    expect(readFileSync(file, "utf8").endsWith("last\n")).to.equal(false);
    destination.flushSync();
    expect(readFileSync(file, "utf8").endsWith(`${line}last\n`)).to.equal(true);
  });

  it("keeps what a full pipe refuses and writes it, in order and with multi-byte characters whole, once the reader drains it", async () => {
    const fifo = join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    // Read-write and non-blocking: the pipe needs no other writer to open and answers EAGAIN when full.
    const writer = open(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    const reader = open(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const destination = createLogDestination(writer);
    const sent: string[] = [];
    for (let i = 0; i < 3000; i++) {
      // Three-byte characters at odd offsets: a write the pipe cuts short ends inside one of them.
      const line = `${String(i).padStart(6, "0")} ${"y".repeat(i % 7)}${"€".repeat(30)}\n`;
      sent.push(line);
      destination.write(line);
      if (i % 100 === 99) await nextTurn();
    }
    await nextTurn();
    const received = await drain(reader, (text) => text.length >= sent.join("").length);
    expect(received).to.equal(sent.join(""));
    expect(destination.dropped).to.equal(0);
  });

  it("drops lines past its limit while the pipe stays full, counts them, and delivers the rest whole", async () => {
    const fifo = join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    const writer = open(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    const reader = open(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const destination = createLogDestination(writer, { maxWaitingChars: 100_000 });
    const line = `${"z".repeat(99)}\n`;
    for (let i = 0; i < 3000; i++) {
      destination.write(line);
      if (i % 100 === 99) await nextTurn();
    }
    await nextTurn();
    // The pipe holds about 64 KiB and 100,000 characters may wait: about 1,350 of the 3,000 lines are over.
    expect(destination.dropped).to.be.within(1200, 1500);
    const received = await drain(reader, (text) => text.length + destination.dropped * 100 >= 300_000);
    expect(received.length + destination.dropped * line.length).to.equal(3000 * line.length);
    expect(received).to.equal(line.repeat(received.length / line.length));
  });

  it("goes quiet instead of throwing when the file cannot be written", async () => {
    const file = join(dir, "read-only");
    execFileSync("touch", [file]);
    const destination = createLogDestination(open(file, "r"));
    const logger = pino({ base: null }, destination);
    logger.info("lost");
    await nextTurn();
    expect(() => destination.flushSync()).not.to.throw();
    logger.info("also lost");
    await nextTurn();
    expect(readFileSync(file, "utf8")).to.equal("");
  });
});
