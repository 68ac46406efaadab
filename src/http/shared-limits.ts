import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '../logger.js';
import { LocalStreamSlots, type StreamSlots } from '../subscriptions/stream-slots.js';
import type { RateLimitSettings, RateLimitState } from './rate-limit.js';

/**
 * Limits shared by every server instance, with REDIS_URL: each key's request rate
 * (rate-limiter-flexible on Redis) and its open streams (a sorted set per key in Redis).
 * Redis unreachable: each instance falls back to limits of its own (rate-limiter-flexible's
 * insurance limiter; LocalStreamSlots), logs a warning once per outage, counts the fallback
 * in `fallbacks`, and never fails a request because of it.
 */

/** Requests answered with an instance's own limits because Redis could not be reached (the metric). */
export const sharedLimitFallbacks = { rateLimit: 0, streamSlots: 0 };

export interface SharedLimits {
  rateLimiter: SharedRateLimiter | null;
  streamSlots: StreamSlots;
  close(): Promise<void>;
}

const KEY_PREFIX = 'memstore:';
/** How long Redis may take before a request goes on with this instance's limits. */
const REDIS_COMMAND_TIMEOUT_MS = 200;

export function openSharedLimits(redisUrl: string, rateLimit: RateLimitSettings | null, maxStreamsPerKey: number, logger: Logger): SharedLimits {
  const redis = new Redis(redisUrl, {
    // Commands fail at once while disconnected (rate-limiter-flexible then uses its insurance limiter).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    lazyConnect: false,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  const outage = new OutageLog(logger);
  redis.on('error', (error) => outage.down(error));
  redis.on('ready', () => outage.up());
  return {
    rateLimiter: rateLimit ? new SharedRateLimiter(redis, rateLimit, outage) : null,
    streamSlots: new RedisStreamSlots(redis, maxStreamsPerKey, outage),
    close: async () => {
      redis.disconnect();
    },
  };
}

class OutageLog {
  private isDown = false;
  constructor(private readonly logger: Logger) {}
  down(error: unknown): void {
    if (this.isDown) return;
    this.isDown = true;
    this.logger.warn('Redis is unreachable: rate limits and stream counts are this instance\'s own until it is back', { error: String((error as Error)?.message ?? error) });
  }
  up(): void {
    if (!this.isDown) return;
    this.isDown = false;
    this.logger.info('Redis is reachable again: limits are shared by every instance');
  }
}

/**
 * A key's requests across every instance: `burst` per window of burst / perSecond seconds
 * (rate-limiter-flexible's fixed window), so `perSecond` on average.
 */
export class SharedRateLimiter {
  private readonly limiter: RateLimiterRedis;
  private readonly windowSeconds: number;

  constructor(
    redis: Redis,
    readonly settings: RateLimitSettings,
    private readonly outage: OutageLog,
  ) {
    this.windowSeconds = Math.max(1, Math.round(settings.burst / settings.perSecond));
    const points = Math.max(1, Math.round(settings.perSecond * this.windowSeconds));
    const insuranceLimiter = new RateLimiterMemory({ points, duration: this.windowSeconds });
    this.limiter = new RateLimiterRedis({
      storeClient: redis,
      keyPrefix: `${KEY_PREFIX}rate`,
      points,
      duration: this.windowSeconds,
      rejectIfRedisNotReady: true,
      insuranceLimiter,
    });
    // The insurance limiter answers when Redis does not: count those answers.
    const consume = insuranceLimiter.consume.bind(insuranceLimiter);
    insuranceLimiter.consume = (key, points, options) => {
      sharedLimitFallbacks.rateLimit += 1;
      this.outage.down(new Error('Redis did not answer a rate-limit request'));
      return consume(key, points, options);
    };
  }

  async take(key: string): Promise<RateLimitState> {
    const points = this.limiter.points;
    try {
      const result = await this.limiter.consume(key);
      return { limit: points, remaining: result.remainingPoints, resetSeconds: Math.ceil(result.msBeforeNext / 1000), retryAfterSeconds: 0 };
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) {
        // Neither Redis nor the insurance limiter answered: let the request through.
        sharedLimitFallbacks.rateLimit += 1;
        return { limit: points, remaining: points, resetSeconds: 0, retryAfterSeconds: 0 };
      }
      return { limit: points, remaining: 0, resetSeconds: Math.ceil(refusal.msBeforeNext / 1000), retryAfterSeconds: Math.max(1, Math.ceil(refusal.msBeforeNext / 1000)) };
    }
  }
}

/** Removes expired members, counts, and adds the new one only below the limit: one atomic step. */
const ACQUIRE_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/** How long a stream's entry lives in Redis without being renewed (an instance that dies frees its slots by then). */
const SLOT_TTL_MS = 60_000;
const SLOT_RENEW_MS = 20_000;

/**
 * Open streams per key across every instance: each stream is a member of its key's sorted
 * set, scored by when it expires; every instance renews its own streams' entries, so the
 * slots of an instance that dies free themselves within SLOT_TTL_MS.
 */
export class RedisStreamSlots implements StreamSlots {
  private readonly local: LocalStreamSlots;
  /** This instance's streams in Redis, per key: members to renew and remove. */
  private readonly members = new Map<string, string[]>();
  /** Slots taken from the local fallback while Redis was unreachable, per key. */
  private readonly localTaken = new Map<string, number>();
  private readonly renewal: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    readonly limit: number,
    private readonly outage: OutageLog,
  ) {
    this.local = new LocalStreamSlots(limit);
    this.renewal = setInterval(() => void this.renew(), SLOT_RENEW_MS);
    this.renewal.unref();
  }

  private key(apiKeyId: string): string {
    return `${KEY_PREFIX}streams:${apiKeyId}`;
  }

  async acquire(apiKeyId: string): Promise<boolean> {
    const member = randomUUID();
    const now = Date.now();
    try {
      const taken = await this.redis.eval(ACQUIRE_SCRIPT, 1, this.key(apiKeyId), now, now + SLOT_TTL_MS, this.limit, member, SLOT_TTL_MS * 2);
      if (Number(taken) !== 1) return false;
      this.members.set(apiKeyId, [...(this.members.get(apiKeyId) ?? []), member]);
      return true;
    } catch (error) {
      sharedLimitFallbacks.streamSlots += 1;
      this.outage.down(error);
      if (!(await this.local.acquire(apiKeyId))) return false;
      this.localTaken.set(apiKeyId, (this.localTaken.get(apiKeyId) ?? 0) + 1);
      return true;
    }
  }

  release(apiKeyId: string): void {
    const fallback = this.localTaken.get(apiKeyId) ?? 0;
    if (fallback > 0) {
      this.localTaken.set(apiKeyId, fallback - 1);
      this.local.release(apiKeyId);
      return;
    }
    const members = this.members.get(apiKeyId);
    const member = members?.pop();
    if (members && members.length === 0) this.members.delete(apiKeyId);
    if (member) this.redis.zrem(this.key(apiKeyId), member).catch(() => {});
  }

  private async renew(): Promise<void> {
    const expires = Date.now() + SLOT_TTL_MS;
    for (const [apiKeyId, members] of this.members) {
      if (members.length === 0) continue;
      const entries = members.flatMap((member) => [expires, member]);
      await this.redis.zadd(this.key(apiKeyId), ...entries).catch((error) => this.outage.down(error));
    }
  }
}
