import type { OAuthServerBinding, StoredClient, StoredTokens } from "../../plugin/mcp-client/types.js";
import { keepAliveFetch } from "./keep-alive-fetch.js";
import { refreshTokens } from "./mcp-client.js";
import type { LiveSpec, TokenVault } from "./types.js";

/** Refresh when a token has less than this left (or less than half its lifetime, for short-lived tokens we obtained). */
export const REFRESH_MARGIN_MS = 60_000;

/** Why no usable token could be had: the owner must authorize again, or a retry may help. */
export interface TokenError extends Error {
  code: "NEEDS_AUTH" | "REFRESH_FAILED";
}

function tokenError(code: TokenError["code"], message: string): TokenError {
  const error = new Error(message) as TokenError;
  error.name = "TokenError";
  error.code = code;
  return error;
}

export function isTokenError(value: unknown): value is TokenError {
  if (typeof value !== "object" || value === null) return false;
  const { name, code } = value as { name?: unknown; code?: unknown };
  return name === "TokenError" && (code === "NEEDS_AUTH" || code === "REFRESH_FAILED");
}

/** The refresh chain is dead (identified by code, never instanceof). */
function isDeadChain(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { code, dead } = error as { code?: unknown; dead?: unknown };
  return code === "OAUTH_INVALID" && dead === true;
}

export interface TokenKeeperDeps {
  vault: TokenVault;
  now: () => number;
  fetch?: typeof fetch;
  /** The refresh chain died (or there is none): the owner must authorize again. */
  onDead: () => void;
}

/**
 * One connection's OAuth tokens. The vault is the source of truth; refreshes are single-flight, so a
 * rotated refresh token is never spent twice, and new tokens are saved before anything uses them.
 * Lives as long as the connection's name does (across reconnects and re-applies) for the same reason.
 */
export class TokenKeeper {
  oauth: { binding: OAuthServerBinding; client: StoredClient } | null = null;
  private refreshing: Promise<StoredTokens> | null = null;
  /** Tokens received but not yet saved (the save failed): saved again before they are used. */
  private unsaved: StoredTokens | null = null;
  /** Lifetime of the access token this keeper obtained itself, to scale the margin for short-lived tokens. */
  private obtained: { accessToken: string; lifetimeMs: number } | null = null;
  /** A refresh token the authorization server declared dead: never sent again. */
  private deadRefreshToken: string | null = null;

  constructor(
    private readonly name: string,
    private readonly deps: TokenKeeperDeps,
  ) {}

  /** The stored access token, without refreshing. */
  current(): StoredTokens | null {
    return this.unsaved ?? this.deps.vault.get(this.name);
  }

  /**
   * An access token good for a connect or a call: refreshed first if it expires within the margin.
   * Null when the connection has no OAuth. Rejects with a TokenError.
   */
  async fresh(): Promise<string | null> {
    if (this.oauth === null) return null;
    if (this.refreshing) return (await this.refreshing).accessToken;
    if (this.unsaved) return (await this.flush()).accessToken;
    const tokens = this.current();
    if (tokens === null) throw this.dead();
    if (this.expiresSoon(tokens)) return (await this.refresh(tokens.accessToken)).accessToken;
    return tokens.accessToken;
  }

  /**
   * Refreshes after `staleAccessToken` was refused (or is about to expire). If another caller already
   * replaced that token, the current tokens are returned without a second grant.
   */
  refresh(staleAccessToken: string | null): Promise<StoredTokens> {
    if (this.refreshing) return this.refreshing;
    if (this.unsaved) return this.flush();
    const tokens = this.current();
    if (tokens === null) return Promise.reject(this.dead());
    if (staleAccessToken !== null && tokens.accessToken !== staleAccessToken) return Promise.resolve(tokens);
    const oauth = this.oauth;
    const refreshToken = tokens.refreshToken;
    if (oauth === null || refreshToken === null || refreshToken === this.deadRefreshToken) {
      return Promise.reject(this.dead());
    }
    return this.single(async () => {
      let received: StoredTokens;
      try {
        received = await refreshTokens(oauth.binding, oauth.client, refreshToken, {
          ...(this.deps.fetch ? { fetch: this.deps.fetch } : {}),
          now: this.deps.now,
        });
      } catch (error) {
        if (isDeadChain(error)) {
          this.deadRefreshToken = refreshToken;
          throw this.dead();
        }
        throw tokenError("REFRESH_FAILED", "The access token could not be refreshed.");
      }
      // RFC 6749 §6: without a new refresh token, the old one stays good.
      const next: StoredTokens = { ...received, refreshToken: received.refreshToken ?? refreshToken };
      if (next.expiresAt !== null) {
        this.obtained = { accessToken: next.accessToken, lifetimeMs: next.expiresAt - this.deps.now() };
      }
      this.unsaved = next;
      return this.save(next);
    });
  }

  /** Whether a refresh is running (tests and status use it; never needed for correctness). */
  get busy(): boolean {
    return this.refreshing !== null;
  }

  private expiresSoon(tokens: StoredTokens): boolean {
    if (tokens.expiresAt === null) return false;
    let margin = REFRESH_MARGIN_MS;
    if (this.obtained?.accessToken === tokens.accessToken) {
      margin = Math.min(margin, Math.max(0, this.obtained.lifetimeMs / 2));
    }
    return tokens.expiresAt - this.deps.now() < margin;
  }

  private flush(): Promise<StoredTokens> {
    const pending = this.unsaved;
    if (pending === null) return Promise.reject(tokenError("REFRESH_FAILED", "Nothing to save."));
    return this.single(() => this.save(pending));
  }

  private async save(tokens: StoredTokens): Promise<StoredTokens> {
    try {
      await this.deps.vault.save(this.name, tokens);
    } catch {
      throw tokenError("REFRESH_FAILED", "The refreshed tokens could not be stored.");
    }
    if (this.unsaved === tokens) this.unsaved = null;
    return tokens;
  }

  private single(run: () => Promise<StoredTokens>): Promise<StoredTokens> {
    const promise = run().finally(() => {
      if (this.refreshing === promise) this.refreshing = null;
    });
    this.refreshing = promise;
    return promise;
  }

  private dead(): TokenError {
    this.deps.onDead();
    return tokenError("NEEDS_AUTH", "The server needs the owner to authorize this connection again.");
  }
}

/**
 * A fetch for one OAuth connection's transport: requests to the server's own origin carry the current
 * access token (so a refresh takes effect without reconnecting), and a 401 there triggers one
 * single-flight refresh and one retry. Other origins (e.g. metadata elsewhere) never see the token.
 */
export function bearerFetch(keeper: TokenKeeper, origin: string, base: typeof fetch): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (keeper.oauth === null || !sameOrigin(url, origin)) return base(input, init);
    const send = (token: string | null): Promise<Response> => {
      const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      if (token !== null) headers.set("authorization", `Bearer ${token}`);
      return base(input, { ...init, headers });
    };
    const used = keeper.current()?.accessToken ?? null;
    const response = await send(used);
    const body = init?.body;
    const replayable = body === undefined || body === null || typeof body === "string";
    if (response.status !== 401 || !replayable) return response;
    let next: StoredTokens;
    try {
      next = await keeper.refresh(used);
    } catch {
      return response;
    }
    await response.body?.cancel().catch(() => undefined);
    return send(next.accessToken);
  };
}

/**
 * The fetch options for connectClient: the bearer-managing fetch for an OAuth HTTP server, else `base`.
 * Without an injected `base`, the transport's own MCP requests go through the keep-alive fetch, and
 * everything else (OAuth discovery after a 401) through the global fetch.
 */
export function connectFetch(
  spec: LiveSpec,
  keeper: TokenKeeper,
  base: typeof fetch | undefined,
): { fetch?: typeof fetch; transportFetch?: typeof fetch } {
  const transport =
    base === undefined && spec.target.kind === "http" ? { transportFetch: keepAliveFetch } : {};
  if (spec.oauth === null || spec.target.kind !== "http") return base ? { fetch: base } : transport;
  let origin: string;
  try {
    origin = new URL(spec.target.url).origin;
  } catch {
    return base ? { fetch: base } : {}; // connectClient reports the bad URL
  }
  if (base !== undefined) return { fetch: bearerFetch(keeper, origin, base) };
  return {
    fetch: bearerFetch(keeper, origin, (input, init) => globalThis.fetch(input, init)),
    transportFetch: bearerFetch(keeper, origin, keepAliveFetch),
  };
}

function sameOrigin(url: string, origin: string): boolean {
  try {
    return new URL(url).origin === origin;
  } catch {
    return false;
  }
}
