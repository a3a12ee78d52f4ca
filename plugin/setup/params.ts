import {
  type Infer,
  array,
  boolean,
  defaulted,
  enums,
  nonempty,
  number,
  object,
  optional,
  pattern,
  record,
  refine,
  size,
  string,
} from "superstruct";

/** Spec limits: 1–64 of letters, digits, hyphens, underscores. */
export const ConnectionName = pattern(string(), /^[A-Za-z0-9_-]{1,64}$/);
/** Spec limits: caller-generated, 16–128 of letters, digits, hyphens, underscores. */
export const RequestId = pattern(string(), /^[A-Za-z0-9_-]{16,128}$/);
export const OperationId = pattern(string(), /^op_[a-f0-9]{32}$/);
export const SessionKey = refine(size(string(), 1, 512), "SessionKey", (value) => value.includes(":"));

const MAX_FIELD_BYTES = 16 * 1024;
/** A credential or config value: non-empty, at most 16 KiB. */
export const FieldValue = refine(
  nonempty(string()),
  "FieldValue",
  (value) => Buffer.byteLength(value) <= MAX_FIELD_BYTES,
);
const FieldName = pattern(string(), /^[A-Za-z_][A-Za-z0-9_]{0,127}$/);
const HeaderName = pattern(string(), /^[A-Za-z0-9-]{1,128}$/);

const Fields = refine(record(FieldName, FieldValue), "Fields", (value) => Object.keys(value).length <= 64);
const Headers = refine(record(HeaderName, FieldValue), "Headers", (value) => Object.keys(value).length <= 32);

export const CustomConfig = object({
  url: optional(size(string(), 1, 2048)),
  command: optional(size(string(), 1, 1024)),
  args: optional(size(array(size(string(), 0, 4096)), 0, 64)),
  env: optional(Fields),
  headers: optional(Headers),
});

export const BeginParams = object({
  name: ConnectionName,
  requestId: RequestId,
  intent: defaulted(enums(["connect", "reauthorize", "permissions"]), "connect"),
  catalog: optional(boolean()),
  envValues: optional(Fields),
  config: optional(CustomConfig),
  chatRequestId: optional(size(string(), 1, 128)),
  redirectUri: optional(size(string(), 1, 2048)),
  sessionKey: optional(SessionKey),
});
export type BeginParams = Infer<typeof BeginParams>;

const ToolNames = size(array(size(string(), 1, 256)), 0, 1024);

export const PermissionsInput = object({
  mode: enums(["all", "selected", "none"]),
  include: defaulted(ToolNames, []),
  exclude: defaulted(ToolNames, []),
  resources: defaulted(boolean(), false),
  prompts: defaulted(boolean(), false),
});
export type PermissionsInput = Infer<typeof PermissionsInput>;

export const ConfirmParams = object({ id: OperationId, permissions: PermissionsInput });

const CallbackString = size(string(), 1, 8192);
export const CallbackParams = object({
  id: OperationId,
  callback: object({
    code: optional(CallbackString),
    error: optional(CallbackString),
    error_description: optional(CallbackString),
    state: CallbackString,
    iss: optional(CallbackString),
  }),
});

export const IdParams = object({ id: OperationId });
export const PendingParams = object({ sessionKey: optional(SessionKey) });
export const CancelRequestParams = object({ name: ConnectionName, requestId: RequestId });
export const ActionParams = object({
  name: ConnectionName,
  requestId: RequestId,
  action: enums(["enable", "disable", "retry", "remove"]),
});

export const AccessCatalogParams = object({ sessionKey: optional(SessionKey) });
export const AccessListParams = object({});
export const AccessRevokeParams = object({ id: pattern(string(), /^[A-Za-z0-9_-]{8,128}$/) });
export const AccessCreateParams = object({
  /** Chosen by the client, so a retried create returns the same record. */
  id: pattern(string(), /^[A-Za-z0-9_-]{8,128}$/),
  label: size(string(), 1, 128),
  sessionKey: SessionKey,
  tools: size(array(size(string(), 1, 256)), 1, 64),
  /** sha256 (hex) of a secret the client made; the gateway never sees the secret itself. */
  tokenDigest: pattern(string(), /^[0-9a-f]{64}$/),
  /** 60 s to 90 days. */
  ttlSeconds: refine(
    number(),
    "TtlSeconds",
    (value) => Number.isInteger(value) && value >= 60 && value <= 7_776_000,
  ),
});
