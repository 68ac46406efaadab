import { GraphQLError } from 'graphql';
import { MAX_RATE_LIMIT_BUCKETS } from '../domain/limits.js';

export const RATE_LIMITED = 'RATE_LIMITED';

export interface RateLimitSettings {
  /** Tokens added to a key's bucket per second. */
  perSecond: number;
  /** The bucket's size: requests a key may send at once after being idle. */
  burst: number;
}

/** A key's budget after one of its requests: what the RateLimit-* response headers say. */
export interface RateLimitState {
  /** The requests a key may send at once (the bucket's size). */
  limit: number;
  /** The requests it may still send at once. */
  remaining: number;
  /** Seconds until its whole budget is back. */
  resetSeconds: number;
  /** 0 when this request may go ahead, else the seconds to wait before the next one. */
  retryAfterSeconds: number;
}

/** The RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers of a state. */
export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return { 'RateLimit-Limit': String(state.limit), 'RateLimit-Remaining': String(state.remaining), 'RateLimit-Reset': String(state.resetSeconds) };
}

/** What the request gate asks of a limiter: this process's buckets, or limits shared through Redis (shared-limits.ts). */
export interface KeyRateLimiter {
  readonly settings: RateLimitSettings;
  take(key: string): RateLimitState | Promise<RateLimitState>;
}

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (milliseconds of the limiter's clock). */
  updatedAt: number;
}

/** How often idle buckets are dropped, in milliseconds. */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * A token bucket per key (by its token's hash), in this process: a key may send `burst`
 * requests at once, then `perSecond` requests per second. Several server instances each
 * keep their own buckets (see the README). At most MAX_RATE_LIMIT_BUCKETS are kept: idle
 * ones are swept, and past the bound the least recently used go first (a key that loses
 * its bucket starts again from a full one).
 */
export class RateLimiter implements KeyRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep: number;

  constructor(
    readonly settings: RateLimitSettings,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.lastSweep = clock();
  }

  /** Takes one token for `key`: whether the request may go ahead, and what the key has left. */
  take(key: string): RateLimitState {
    const now = this.clock();
    this.sweep(now);
    const { perSecond, burst } = this.settings;
    const bucket = this.buckets.get(key) ?? { tokens: burst, updatedAt: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.updatedAt) / 1000) * perSecond);
    bucket.updatedAt = now;
    // Most recently used last, so that the first is the one to drop.
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > MAX_RATE_LIMIT_BUCKETS) this.buckets.delete(this.buckets.keys().next().value!);
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    return {
      limit: burst,
      remaining: Math.floor(bucket.tokens),
      resetSeconds: Math.ceil((burst - bucket.tokens) / perSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond)),
    };
  }

  /** Buckets that have refilled completely hold no information: drop them. */
  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    const refillMs = (this.settings.burst / this.settings.perSecond) * 1000;
    for (const [key, bucket] of this.buckets) {
      if (now - bucket.updatedAt >= refillMs) this.buckets.delete(key);
    }
  }

  /** Keys currently tracked (for tests). */
  get size(): number {
    return this.buckets.size;
  }
}

/** The top-level error of a refused request: HTTP 429 with Retry-After. */
export function rateLimited(settings: RateLimitSettings, state: RateLimitState): GraphQLError {
  const { retryAfterSeconds } = state;
  return new GraphQLError(
    `Too many requests for this API key: it may send ${settings.burst} at once, then ${settings.perSecond} per second. ` +
      `Retry after ${retryAfterSeconds} s.`,
    {
      extensions: {
        code: RATE_LIMITED,
        retryAfterSeconds,
        http: { status: 429, headers: { 'Retry-After': String(retryAfterSeconds), ...rateLimitHeaders(state) } },
      },
    },
  );
}
