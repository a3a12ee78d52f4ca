import { createHash, randomBytes } from "node:crypto";

/** A key as an owner app makes it: the secret stays with the client, the gateway gets its digest. */
export function makeSecret(): { secret: string; digest: string } {
  const secret = `mcpk_${randomBytes(32).toString("base64url")}`;
  return { secret, digest: createHash("sha256").update(secret).digest("hex") };
}

let counter = 0;
export function keyId(label = "key"): string {
  counter += 1;
  return `${label}-${process.pid}-${counter}-${Date.now()}`;
}
