import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { pino } from "pino";
import { GatewayInstance, ReferenceGateway } from "../fixtures/gateway/gateway.js";
import type { GatewayHost } from "../host-shim/contract.js";
import { register } from "../host-shim/index.js";

/** Every member of the host contract (host-shim/contract.ts); the plugin may touch these and nothing else. */
const CONTRACT = new Set([
  "stateDir",
  "getGatewayToken",
  "tokenHeader",
  "allowedHosts",
  "registerHttpRoute",
  "servesHttpRoutes",
  "registerGatewayMethod",
  "profiles",
  "conversations",
  "conversationTools",
  "localBaseUrl",
  "tools",
  "logger",
]);

describe("the plugin stays within the host contract", () => {
  it("touches no host member outside the contract while it registers, serves and closes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "mcp-manage-contract-"));
    const gateway = new ReferenceGateway({
      host: "127.0.0.1",
      port: 0,
      stateDir: dir,
      token: "t",
      logger: pino({ level: "silent" }),
    });
    const instance = new GatewayInstance(null, join(dir, "root"));
    const touched = new Set<string>();
    const real = instance.hostFor(gateway, undefined) as unknown as Record<string | symbol, unknown>;
    // A host with extra, tempting members: a plugin that reached for them would show up here.
    const tempting: Record<string | symbol, unknown> = {
      ...real,
      server: {},
      config: { token: "t" },
      env: process.env,
      profilesRpcRaw: () => undefined,
    };
    const host = new Proxy(tempting, {
      get(target, key) {
        if (typeof key === "string") touched.add(key);
        return target[key];
      },
    }) as unknown as GatewayHost;
    const handle = await register(host, { pool: { maxThreads: 1 } });
    try {
      const { frame } = await handle.invoke("mcp.capabilities", {});
      expect(frame.status).to.equal(200);
      const listed = await handle.invoke("mcp.connections.list", {});
      expect(listed.frame.status).to.equal(200);
    } finally {
      await handle.close();
      await rm(dir, { recursive: true, force: true });
    }
    const outside = [...touched].filter((key) => !CONTRACT.has(key));
    expect(outside).to.deep.equal([]);
    expect(touched.has("stateDir")).to.equal(true);
  });
});
