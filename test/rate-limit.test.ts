import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { recordStatements } from '../src/db/statement-count.js';
import { MAX_RATE_LIMIT_BUCKETS } from '../src/domain/limits.js';
import { RateLimiter } from '../src/http/rate-limit.js';
import { createStore } from './support/builders.js';
import { CreateStore, ListStores } from './support/documents.js';
import { TestClient, useTestServer } from './support/server.js';

const server = useTestServer();

/** An app with a rate limit and a clock the test moves by hand. */
function limitedApp(perSecond: number, burst: number) {
  const clock = { now: 0 };
  const app = createApp({
    config: { nodeEnv: 'test', graphiql: false, rateLimit: { perSecond, burst } },
    database: server.database.handle,
    clock: () => clock.now,
  });
  return { app, clock };
}

describe('rate limiting per API key', () => {
  it('lets a key send its burst at once and refuses the next request with 429 RATE_LIMITED and Retry-After', async () => {
    const { app } = limitedApp(2, 5);
    const admin = await server.newWorkspace();
    const client = new TestClient(app, admin.token, admin.workspaceId);
    for (let request = 0; request < 5; request += 1) expect((await client.execute(ListStores, {})).status).toBe(200);
    const refused = await client.execute(CreateStore, { input: { name: 'one too many' } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.data ?? null).toBeNull();
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: 1 });
    expect(refused.errors?.[0]?.message).toMatch(/5 at once, then 2 per second/);
    // The refused write did nothing.
    expect((await admin.data(ListStores, {})).memoryStores.totalCount).toBe(0);
  });

  it('refills at the configured rate', async () => {
    const { app, clock } = limitedApp(2, 1);
    const admin = await server.newWorkspace();
    const client = new TestClient(app, admin.token, admin.workspaceId);
    expect((await client.execute(ListStores, {})).status).toBe(200);
    expect((await client.execute(ListStores, {})).status).toBe(429);
    clock.now += 499;
    expect((await client.execute(ListStores, {})).status).toBe(429);
    clock.now += 1;
    expect((await client.execute(ListStores, {})).status).toBe(200);
    expect((await client.execute(ListStores, {})).status).toBe(429);
  });

  it('keeps one bucket per key: another key of the same workspace is not slowed down', async () => {
    const { app } = limitedApp(1, 1);
    const admin = await server.newWorkspace();
    const first = new TestClient(app, admin.token, admin.workspaceId);
    expect((await first.execute(ListStores, {})).status).toBe(200);
    expect((await first.execute(ListStores, {})).status).toBe(429);
    const created = await admin.send({ query: 'mutation { createApiKey(input: { name: "second", kind: ADMIN }) { __typename ... on CreateApiKeySuccess { token } } }' });
    const second = new TestClient(app, created.data.createApiKey.token, admin.workspaceId);
    expect((await second.execute(ListStores, {})).status).toBe(200);
  });

  it('refuses an over-limit key\'s read after a key lookup, without running the read itself', async () => {
    const { app, clock } = limitedApp(1, 1);
    const admin = await server.newWorkspace();
    await createStore(admin);
    const client = new TestClient(app, admin.token, admin.workspaceId);
    // A read the compiler covers (one statement that also authenticates).
    const READ = '{ memoryStores(first: 5) { totalCount edges { node { id name } } } }';
    const first = await recordStatements(() => client.send({ query: READ }));
    expect(first.result.status).toBe(200);
    expect(first.statements.map((statement) => statement.sql).join('\n')).toContain('from "memory_stores"');
    const refused = await recordStatements(() => client.send({ query: READ }));
    expect(refused.result.status).toBe(429);
    expect(refused.statements).toHaveLength(1);
    expect(refused.statements[0]!.sql).not.toContain('from "memory_stores"');
    // Once the bucket has refilled, the read runs whole again.
    clock.now += 1000;
    const again = await recordStatements(() => client.send({ query: READ }));
    expect(again.result.status).toBe(200);
    expect(again.statements.map((statement) => statement.sql).join('\n')).toContain('from "memory_stores"');
  });

  it('takes a key\'s token before any work: of 300 simultaneous reads with a burst of 100, 100 run and 200 cost one key lookup each', async () => {
    const { app } = limitedApp(1, 100);
    const admin = await server.newWorkspace();
    await createStore(admin);
    const client = new TestClient(app, admin.token, admin.workspaceId);
    const READ = '{ memoryStores(first: 5) { totalCount edges { node { id name } } } }';
    const { result: answers, statements } = await recordStatements(() => Promise.all(Array.from({ length: 300 }, () => client.send({ query: READ }))));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    expect(statuses.filter((status) => status === 429)).toHaveLength(200);
    const compiled = statements.filter((statement) => statement.sql.includes('from "memory_stores"'));
    expect(compiled).toHaveLength(100);
    expect(statements).toHaveLength(300);
  });

  it('does not limit requests without valid credentials (they are refused with 401 first)', async () => {
    const { app } = limitedApp(1, 1);
    const anonymous = new TestClient(app, null, '');
    for (let request = 0; request < 3; request += 1) expect((await anonymous.execute(ListStores, {})).status).toBe(401);
  });
});

describe('RateLimit headers', () => {
  const headersOf = (response: { headers: Headers }) => ({
    limit: response.headers.get('ratelimit-limit'),
    remaining: response.headers.get('ratelimit-remaining'),
    reset: response.headers.get('ratelimit-reset'),
  });

  it.each([
    ['the lean path', {}],
    ['Yoga', { leanPath: false }],
  ] as const)('say on %s what the key has left, moving as its requests are spent and as time passes', async (_path, options) => {
    const clock = { now: 0 };
    const app = createApp({
      config: { nodeEnv: 'test', graphiql: false, rateLimit: { perSecond: 1, burst: 3 } },
      database: server.database.handle,
      clock: () => clock.now,
      ...options,
    });
    const admin = await server.newWorkspace();
    const client = new TestClient(app, admin.token, admin.workspaceId);
    // A compiled read, a read the resolvers answer, a mutation: all the same.
    expect(headersOf(await client.execute(ListStores, {}))).toEqual({ limit: '3', remaining: '2', reset: '1' });
    expect(headersOf(await client.send({ query: '{ memoryStores { edges { cursor } } }' }))).toEqual({ limit: '3', remaining: '1', reset: '2' });
    expect(headersOf(await client.execute(CreateStore, { input: { name: 'counted' } }))).toEqual({ limit: '3', remaining: '0', reset: '3' });
    const refused = await client.execute(ListStores, {});
    expect(refused.status).toBe(429);
    expect(headersOf(refused)).toEqual({ limit: '3', remaining: '0', reset: '3' });
    clock.now += 2_000;
    expect(headersOf(await client.execute(ListStores, {}))).toEqual({ limit: '3', remaining: '1', reset: '2' });
    // A GET query carries them too.
    const get = await app.fetch(`http://memstore.test/graphql?query=${encodeURIComponent('{ memoryStores { totalCount } }')}`, {
      headers: { authorization: `Bearer ${admin.token}`, accept: 'application/json' },
    });
    expect(get.status).toBe(200);
    expect(headersOf(get)).toEqual({ limit: '3', remaining: '0', reset: '3' });
  });

  it('are not sent to a request without a key, or with a key nobody has', async () => {
    const { app } = limitedApp(1, 3);
    const anonymous = await new TestClient(app, null, '').execute(ListStores, {});
    expect(anonymous.status).toBe(401);
    expect(headersOf(anonymous)).toEqual({ limit: null, remaining: null, reset: null });
    const stranger = await new TestClient(app, `msk_${'A'.repeat(40)}`, '').execute(ListStores, {});
    expect(stranger.status).toBe(401);
    expect(headersOf(stranger)).toEqual({ limit: null, remaining: null, reset: null });
  });

  it('are not sent when rate limiting is off', async () => {
    const admin = await server.newWorkspace();
    const response = await admin.execute(ListStores, {});
    expect(response.status).toBe(200);
    expect(headersOf(response)).toEqual({ limit: null, remaining: null, reset: null });
  });
});

describe('the token bucket', () => {
  it('says how many whole seconds to wait for the next token', () => {
    let now = 0;
    const limiter = new RateLimiter({ perSecond: 0.1, burst: 2 }, () => now);
    const wait = () => limiter.take('k').retryAfterSeconds;
    expect(wait()).toBe(0);
    expect(wait()).toBe(0);
    expect(wait()).toBe(10);
    now += 4_000;
    expect(wait()).toBe(6);
    now += 6_000;
    expect(wait()).toBe(0);
  });

  it('says what the key has left and when its whole budget is back', () => {
    let now = 0;
    const limiter = new RateLimiter({ perSecond: 2, burst: 3 }, () => now);
    expect(limiter.take('k')).toEqual({ limit: 3, remaining: 2, resetSeconds: 1, retryAfterSeconds: 0 });
    expect(limiter.take('k')).toEqual({ limit: 3, remaining: 1, resetSeconds: 1, retryAfterSeconds: 0 });
    expect(limiter.take('k')).toEqual({ limit: 3, remaining: 0, resetSeconds: 2, retryAfterSeconds: 0 });
    expect(limiter.take('k')).toEqual({ limit: 3, remaining: 0, resetSeconds: 2, retryAfterSeconds: 1 });
    now += 1_000;
    expect(limiter.take('k')).toEqual({ limit: 3, remaining: 1, resetSeconds: 1, retryAfterSeconds: 0 });
  });

  it(`keeps at most ${MAX_RATE_LIMIT_BUCKETS} buckets, dropping the least recently used first`, () => {
    const limiter = new RateLimiter({ perSecond: 1, burst: 1 }, () => 0);
    expect(limiter.take('busy').retryAfterSeconds).toBe(0);
    for (let key = 0; key < MAX_RATE_LIMIT_BUCKETS; key += 1) {
      limiter.take(`flood-${key}`);
      // The busy key keeps being used, so it is never the least recently used.
      if (key % 10_000 === 0) expect(limiter.take('busy').retryAfterSeconds).toBeGreaterThan(0);
    }
    expect(limiter.size).toBe(MAX_RATE_LIMIT_BUCKETS);
    expect(limiter.take('busy').retryAfterSeconds).toBeGreaterThan(0);
  });

  it('forgets keys whose buckets have refilled, so idle keys cost no memory', () => {
    let now = 0;
    const limiter = new RateLimiter({ perSecond: 10, burst: 10 }, () => now);
    for (let key = 0; key < 1000; key += 1) limiter.take(`key-${key}`);
    expect(limiter.size).toBe(1000);
    now += 60_000;
    limiter.take('fresh');
    expect(limiter.size).toBe(1);
  });
});
