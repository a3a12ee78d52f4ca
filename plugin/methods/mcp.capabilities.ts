import { object } from "superstruct";
import { BUILT_FEATURES } from "../features.js";
import { expectOk, type MethodContext } from "../method-context.js";
import { validateParams } from "../validate.js";

const CapabilitiesParams = object({});

export async function capabilities(params: Record<string, unknown>, { runtime }: MethodContext) {
  validateParams(CapabilitiesParams, params);
  const described = await expectOk(runtime.describe());
  // Setup persists operations and config, so every setup feature needs a writable store as well as code.
  const connectionSetup =
    BUILT_FEATURES.connectionSetup && described.storeWritable && described.liveConnections;
  const nativeOAuth = connectionSetup && BUILT_FEATURES.nativeOAuth;
  return {
    version: 1,
    connectionSetup,
    nativeOAuth,
    explicitPermissions: connectionSetup && BUILT_FEATURES.explicitPermissions,
    chatSetup: connectionSetup && BUILT_FEATURES.chatSetup,
    externalAgentAccess: BUILT_FEATURES.externalAgentAccess && described.storeWritable,
    oauthCallbackModes: nativeOAuth ? described.oauthCallbackModes : [],
    oauthRedirectUris: nativeOAuth ? described.oauthRedirectUris : [],
    setupTimeoutSeconds: described.setupTimeoutSeconds,
  };
}
