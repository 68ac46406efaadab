import { GraphQLError } from 'graphql';
import type { Database } from '../db/client.js';
import type { StatementScope } from '../db/deadline.js';
import { authenticate, hashToken, isWellFormedToken } from '../domain/api-keys.js';
import { MAX_KNOWN_TOKENS } from '../domain/limits.js';
import type { Viewer } from '../domain/viewer.js';
import { rateLimited, type KeyRateLimiter, type RateLimitState } from './rate-limit.js';

/**
 * Who a request is, in the order every request meets it: credentials of the right form
 * (else 401, without a lookup), then the key's rate limit — one of its requests is spent
 * before any work, so a refused request costs at most the key lookup that tells a 429 from
 * a 401 — then the key itself (unknown or revoked: 401).
 */

export const UNAUTHENTICATED = 'UNAUTHENTICATED';

const MISSING_CREDENTIALS = 'Missing credentials: send "Authorization: Bearer <API key>".';
const INVALID_CREDENTIALS = 'Invalid credentials: the API key is unknown, malformed or revoked.';
const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function unauthenticated(message = INVALID_CREDENTIALS): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: UNAUTHENTICATED, http: { status: 401, headers: { 'WWW-Authenticate': 'Bearer' } } },
  });
}

/** A well-formed bearer token and its SHA-256 (how keys are stored and rate-limited). */
export interface Credentials {
  token: string;
  tokenSha256: string;
}

/** The token of an `Authorization: Bearer <token>` header value, if it has that form. */
export function bearerToken(authorization: string): string | undefined {
  return BEARER.exec(authorization)?.[1];
}

/** The request's credentials; a missing or malformed token is a 401 here, before anything is looked up. */
export function credentialsOf(request: Request): Credentials {
  const authorization = request.headers.get('authorization');
  if (authorization === null) throw unauthenticated(MISSING_CREDENTIALS);
  const token = bearerToken(authorization);
  if (token === undefined || !isWellFormedToken(token)) throw unauthenticated();
  return { token, tokenSha256: hashToken(token) };
}

export class Gate {
  constructor(
    private readonly db: Database,
    private readonly limiter: KeyRateLimiter | null,
  ) {}

  /**
   * Spends one of the key's requests (its bucket is keyed by the token's hash, so this needs
   * no lookup). A refused request costs one key lookup: 401 for a token no key has, else 429.
   */
  async admit(credentials: Credentials): Promise<RateLimitState | null> {
    if (!this.limiter) return null;
    const state = await this.limiter.take(credentials.tokenSha256);
    if (state.retryAfterSeconds === 0) return state;
    if (!(await authenticate(this.db, credentials.token))) throw unauthenticated();
    throw rateLimited(this.limiter.settings, state);
  }

  /** The key behind the credentials, looked up under the request's statement scope; unknown or revoked: 401. */
  async viewer(credentials: Credentials, scope?: StatementScope): Promise<Viewer> {
    const viewer = await authenticate(this.db, credentials.token, scope);
    if (!viewer) throw unauthenticated();
    return viewer;
  }
}

/** A set of the most recently added values, at most `limit` of them: the oldest goes first. */
export class RecentSet {
  private readonly values = new Set<string>();

  constructor(private readonly limit: number) {}

  has(value: string): boolean {
    return this.values.has(value);
  }

  add(value: string): void {
    this.values.delete(value);
    this.values.add(value);
    if (this.values.size > this.limit) this.values.delete(this.values.values().next().value!);
  }

  delete(value: string): void {
    this.values.delete(value);
  }
}

/**
 * Tokens (their SHA-256) that found their key lately in this process, at most
 * MAX_KNOWN_TOKENS, the least recently seen forgotten first: a compiled statement whose text
 * no key has answered yet runs for them without a key lookup first (pipeline.ts). The
 * statement still authenticates its key itself. Kept for the process, as the statement texts
 * it prepares are (read-compiler/statements.ts).
 */
export const knownTokens = new RecentSet(MAX_KNOWN_TOKENS);

/**
 * The key an `Authorization` value names, looked up now (a revoked key names none, whenever
 * it was last seen): null for a missing, malformed, unknown or revoked one. Rejects when the
 * lookup fails (the database unreachable).
 */
export async function keyNamedBy(db: Database, authorization: unknown): Promise<Viewer | null> {
  if (typeof authorization !== 'string') return null;
  const token = bearerToken(authorization);
  const viewer = token === undefined ? null : await authenticate(db, token);
  if (viewer === null) return null;
  knownTokens.add(hashToken(token!));
  return viewer;
}
