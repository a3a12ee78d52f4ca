import { object } from "superstruct";
import { featureWorks } from "../capability.js";
import type { MethodContext } from "../method-context.js";
import { validateParams } from "../validate.js";

const CapabilitiesParams = object({});

export async function capabilities(params: Record<string, unknown>, { described }: MethodContext) {
  validateParams(CapabilitiesParams, params);
  const nativeOAuth = featureWorks("nativeOAuth", described);
  return {
    version: 1,
    connectionSetup: featureWorks("connectionSetup", described),
    nativeOAuth,
    explicitPermissions: featureWorks("explicitPermissions", described),
    chatSetup: featureWorks("chatSetup", described),
    externalAgentAccess: featureWorks("externalAgentAccess", described),
    oauthCallbackModes: nativeOAuth ? described.oauthCallbackModes : [],
    oauthRedirectUris: nativeOAuth ? described.oauthRedirectUris : [],
    setupTimeoutSeconds: described.setupTimeoutSeconds,
  };
}
