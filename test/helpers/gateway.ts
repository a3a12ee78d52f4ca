import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { type GatewayConfig, type ReferenceGateway, startGateway } from "../../fixtures/gateway/gateway.js";
import { LOG_SERIALIZERS } from "../../fixtures/gateway/logging.js";
import { selfSignedPair } from "../../fixtures/gateway/tls.js";

export const TEST_TOKEN = "test-gateway-token-0123456789abcdef";

export interface TestGateway {
  gateway: ReferenceGateway;
  url: string;
  token: string;
  /** The certificate clients must trust when `tls` was asked for. */
  ca: string | undefined;
  /** Every log line the gateway wrote, raw. */
  logs: string[];
  stateDir: string;
  close(): Promise<void>;
}

export interface TestGatewayOptions extends Partial<Omit<GatewayConfig, "logger" | "tls">> {
  tls?: boolean;
}

let cachedPair: Promise<{ cert: string; key: string }> | undefined;

/** A real reference gateway on 127.0.0.1:0 with its own state directory and a log capture. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const stateDir = options.stateDir ?? (await mkdtemp(join(tmpdir(), "mcp-manage-test-")));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.length > 0) logs.push(line);
      callback();
    },
  });
  const logger = pino({ serializers: LOG_SERIALIZERS }, sink);
  cachedPair ??= selfSignedPair();
  const pair = options.tls === true ? await cachedPair : undefined;
  const { tls: _tls, ...rest } = options;
  const gateway = await startGateway({
    host: "127.0.0.1",
    port: 0,
    token: TEST_TOKEN,
    ...rest,
    stateDir,
    tls: pair,
    logger,
  });
  return {
    gateway,
    url: gateway.url,
    token: gateway.token,
    ca: pair?.cert,
    logs,
    stateDir,
    close: async () => {
      await gateway.close();
      if (options.stateDir === undefined) await rm(stateDir, { recursive: true, force: true });
    },
  };
}
