import { GraphQLError } from 'graphql';
import type { RateLimitSettings } from '../config.js';
import { MAX_RATE_LIMIT_BUCKETS } from '../domain/limits.js';

export const RATE_LIMITED = 'RATE_LIMITED';

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
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep: number;

  constructor(
    readonly settings: RateLimitSettings,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.lastSweep = clock();
  }

  /** Takes one token for `key`: 0 when the request may go ahead, else the seconds to wait. */
  take(key: string): number {
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
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
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
export function rateLimited(settings: RateLimitSettings, retryAfterSeconds: number): GraphQLError {
  return new GraphQLError(
    `Too many requests for this API key: it may send ${settings.burst} at once, then ${settings.perSecond} per second. ` +
      `Retry after ${retryAfterSeconds} s.`,
    {
      extensions: {
        code: RATE_LIMITED,
        retryAfterSeconds,
        http: { status: 429, headers: { 'Retry-After': String(retryAfterSeconds) } },
      },
    },
  );
}
