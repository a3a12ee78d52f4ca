import { BUILT_FEATURES, type Feature } from "./features.js";
import type { RuntimeDescription } from "./runtime-api.js";

/**
 * Whether a feature really works here: built into this package AND supported by this runtime. The
 * capabilities method reports exactly this, and a method of a feature that does not work answers
 * UNAVAILABLE — the two can never disagree.
 */
export function featureWorks(feature: Feature, described: RuntimeDescription): boolean {
  if (!BUILT_FEATURES[feature]) return false;
  switch (feature) {
    case "connectionSetup":
    case "explicitPermissions":
    case "nativeOAuth":
      // Setup persists operations and applies connections: it needs the store and the live manager.
      return described.storeWritable && described.liveConnections;
    case "chatSetup":
      return BUILT_FEATURES.connectionSetup && described.storeWritable && described.liveConnections;
    case "externalAgentAccess":
      return described.storeWritable && described.accessEndpoint;
  }
}
