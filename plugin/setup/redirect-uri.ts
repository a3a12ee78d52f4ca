/**
 * The redirect URIs an owner app may use: a desktop loopback listener of its own
 * (http://127.0.0.1:<1024-65535>/mcp/oauth/callback/<32-64 hex>), or one the runtime advertises in
 * capabilities. Anything else could send the authorization code somewhere the owner does not control.
 */
const LOOPBACK = /^http:\/\/127\.0\.0\.1:(\d{4,5})\/mcp\/oauth\/callback\/[0-9a-f]{32,64}$/;

export function isAcceptedRedirectUri(uri: string, advertised: readonly string[]): boolean {
  if (advertised.includes(uri)) return true;
  const match = LOOPBACK.exec(uri);
  if (match === null) return false;
  const port = Number(match[1]);
  return port >= 1024 && port <= 65535;
}
