export { backoffDelay, DEFAULT_BACKOFF } from "./backoff.js";
export { agentToolName, isAwaitingReview, isExposable, modeAllows } from "./exposure.js";
export { DEFAULT_TIMEOUT_MS, LiveConnections } from "./manager.js";
export { REFRESH_MARGIN_MS } from "./tokens.js";
export {
  type BackoffOptions,
  isLiveCallError,
  type LiveCallError,
  type LiveCallErrorCode,
  type LiveDeps,
  type LiveSpec,
  type LiveState,
  type LiveStatus,
  type LiveToolStatus,
  type PermissionRecord,
  type TokenVault,
} from "./types.js";
