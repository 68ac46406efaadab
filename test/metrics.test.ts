import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createApp, type App, type AppOptions } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { recordStatements } from '../src/db/statement-count.js';
import { memoryStores } from '../src/db/schema.js';
import { MAX_METRIC_OPERATION_NAMES, METRIC_OPERATION_NAME_MAX_CHARACTERS } from '../src/domain/limits.js';
import { Registry } from 'prom-client';
import { CounterFamily, HistogramFamily } from '../src/http/metric-families.js';
import { subscribeSse } from './support/live.js';
import { Scrape } from './support/prometheus.js';
import { TestClient, useTestServer } from './support/server.js';

const server = useTestServer();

const LIST = 'query MetricsStores { memoryStores(first: 5) { totalCount edges { node { id name } } } }';
const CREATE = 'mutation MetricsCreate($name: String!) { createMemoryStore(input: { name: $name }) { __typename ... on CreateMemoryStoreSuccess { memoryStore { id } } } }';

/** An app with /metrics open (as outside production without a token), on the file's database. */
function metricsApp(options: Partial<AppOptions> = {}) {
  const clock = { now: 0 };
  const app = createApp({
    ...options,
    config: options.config ?? { nodeEnv: 'test', graphiql: false, metrics: { token: null } },
    database: server.database.handle,
    clock: () => clock.now,
  });
  return { app, clock };
}

async function scrape(app: App, headers: Record<string, string> = {}): Promise<Scrape> {
  const response = await app.fetch('http://memstore.test/metrics', { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return new Scrape(await response.text());
}

const statementCount = (metrics: Scrape) => metrics.histograms('memstore_db_statement_duration_seconds').reduce((sum, series) => sum + series.count, 0);

describe('GET /metrics', () => {
  it('holds requests by operation and outcome, latencies, statement timings, the pool, refusals and process metrics after a few requests', async () => {
    const { app } = metricsApp({ config: { nodeEnv: 'test', graphiql: false, metrics: { token: null }, rateLimit: { perSecond: 1, burst: 5 } } });
    const admin = await server.newWorkspace();
    const client = new TestClient(app, admin.token, admin.workspaceId);

    const created = await client.send({ query: CREATE, variables: { name: 'counted store' } });
    expect(created.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
    for (let index = 0; index < 2; index += 1) expect((await client.send({ query: LIST })).data.memoryStores.totalCount).toBe(1);
    // Through Yoga (GET), counted under the same operation.
    const viaGet = await app.fetch(`http://memstore.test/graphql?query=${encodeURIComponent(LIST)}`, { headers: { authorization: `Bearer ${admin.token}` } });
    expect(viaGet.status).toBe(200);
    expect((await client.send({ query: '{ memoryStores { totalCount } }' })).status).toBe(200);
    expect((await new TestClient(app, 'msk_' + 'x'.repeat(40), '').send({ query: LIST })).status).toBe(401);
    expect((await client.send({ query: '{ nope }' })).status).toBe(400);
    // The burst of 5 is spent (create, 2 lists, GET, anonymous query; the invalid one was refused before): refused.
    const refused = await client.send({ query: LIST });
    expect(refused.status).toBe(429);

    const metrics = await scrape(app);
    const requests = 'memstore_graphql_requests_total';
    expect(metrics.family(requests).type).toBe('counter');
    expect(metrics.value(requests, { operation: 'MetricsCreate', type: 'mutation', outcome: 'ok' })).toBe(1);
    expect(metrics.value(requests, { operation: 'MetricsStores', type: 'query', outcome: 'ok' })).toBe(3);
    expect(metrics.value(requests, { operation: '(anonymous)', type: 'query', outcome: 'ok' })).toBe(1);
    expect(metrics.value(requests, { operation: 'MetricsStores', type: 'query', outcome: 'UNAUTHENTICATED' })).toBe(1);
    // Refused before their operation was chosen: the operation is not known.
    expect(metrics.value(requests, { operation: '(unknown)', type: '(unknown)', outcome: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(metrics.value(requests, { operation: '(unknown)', type: '(unknown)', outcome: 'RATE_LIMITED' })).toBe(1);
    expect(metrics.value('memstore_rate_limit_refusals_total')).toBe(1);

    const latency = metrics.histogram('memstore_graphql_request_duration_seconds', { operation: 'MetricsStores', type: 'query' });
    // Latency is by operation, whatever the outcome: the three answers and the 401.
    expect(latency.count).toBe(4);
    expect(latency.sum).toBeGreaterThan(0);
    expect(latency.sum).toBeLessThan(30);
    const counts = latency.buckets.map(([, count]) => count);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(latency.buckets.at(-1)).toEqual([Infinity, 4]);

    expect(metrics.value('memstore_http_responses_total', { route: '/graphql', status: '200' })).toBe(5);
    expect(metrics.value('memstore_http_responses_total', { route: '/graphql', status: '401' })).toBe(1);
    expect(metrics.value('memstore_http_responses_total', { route: '/graphql', status: '429' })).toBe(1);

    // The write's insert and the reads' statements were timed.
    expect(metrics.histogram('memstore_db_statement_duration_seconds', { command: 'insert' }).count + metrics.histogram('memstore_db_statement_duration_seconds', { command: 'with' }).count).toBeGreaterThanOrEqual(1);
    expect(statementCount(metrics)).toBeGreaterThanOrEqual(5);
    for (const series of metrics.histograms('memstore_db_statement_duration_seconds')) {
      expect(series.sum).toBeGreaterThanOrEqual(0);
      expect(series.sum).toBeLessThan(30);
      expect(series.buckets.at(-1)).toEqual([Infinity, series.count]);
    }

    // The test database's pool of 10: 3 connections for compiled reads, 7 for the rest (poolSizes).
    const parts = server.database.handle.kind === 'pglite' ? { all: 1 } : { reads: 3, general: 7 };
    for (const [part, size] of Object.entries(parts)) {
      expect(metrics.value('memstore_db_pool_size', { part })).toBe(size);
      expect(metrics.value('memstore_db_pool_connections_in_use', { part })).toBe(0);
      expect(metrics.value('memstore_db_pool_waiting', { part })).toBe(0);
    }
    expect(metrics.family('memstore_db_pool_size').samples.map((sample) => sample.labels.part).sort()).toEqual(Object.keys(parts).sort());

    expect(metrics.value('process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(metrics.value('process_resident_memory_bytes')).toBeGreaterThan(1024 * 1024);
    expect(metrics.family('nodejs_eventloop_lag_seconds').type).toBe('gauge');

    // The store behind the counted write exists, once.
    const rows = await server.db.select().from(memoryStores).where(eq(memoryStores.workspaceId, admin.workspaceId));
    expect(rows.map((row) => row.name)).toEqual(['counted store']);
  });

  it('times every statement a request sends, on the lean path and through Yoga alike', async () => {
    for (const leanPath of [true, false]) {
      const { app } = metricsApp({ leanPath });
      const admin = await server.newWorkspace();
      const client = new TestClient(app, admin.token, admin.workspaceId);
      await client.send({ query: CREATE, variables: { name: `store ${leanPath}` } });
      const before = statementCount(await scrape(app));
      const { result, statements } = await recordStatements(async () => {
        await client.send({ query: CREATE, variables: { name: `second ${leanPath}` } });
        return client.send({ query: LIST });
      });
      expect(result.data.memoryStores.totalCount).toBe(2);
      const after = await scrape(app);
      expect(statementCount(after) - before, `lean path ${leanPath}`).toBe(statements.length);
      expect(after.value('memstore_graphql_requests_total', { operation: 'MetricsCreate', type: 'mutation', outcome: 'ok' })).toBe(2);
      expect(after.value('memstore_graphql_requests_total', { operation: 'MetricsStores', type: 'query', outcome: 'ok' })).toBe(1);
    }
  });

  it('counts at most MAX_METRIC_OPERATION_NAMES operation names; later and overlong names are (other)', async () => {
    const { app } = metricsApp();
    const admin = await server.newWorkspace();
    const client = new TestClient(app, admin.token, admin.workspaceId);
    const longest = `Q${'x'.repeat(METRIC_OPERATION_NAME_MAX_CHARACTERS - 1)}`;
    expect((await client.send({ query: `query ${longest} { __typename }` })).status).toBe(200);
    expect((await client.send({ query: `query ${longest}y { __typename }` })).status).toBe(200);
    for (let index = 0; index < MAX_METRIC_OPERATION_NAMES + 4; index += 1) {
      expect((await client.send({ query: `query Name${index} { __typename }` })).status).toBe(200);
    }
    const metrics = await scrape(app);
    const names = new Set(metrics.series('memstore_graphql_requests_total').map((series) => series.labels!.operation));
    expect(names.size).toBe(MAX_METRIC_OPERATION_NAMES + 1);
    expect(names.has(longest)).toBe(true);
    expect(names.has(`Name${MAX_METRIC_OPERATION_NAMES - 2}`)).toBe(true);
    expect(names.has(`Name${MAX_METRIC_OPERATION_NAMES - 1}`)).toBe(false);
    // The overlong name and the five past the bound.
    expect(metrics.value('memstore_graphql_requests_total', { operation: '(other)', type: 'query', outcome: 'ok' })).toBe(6);
  });

  it('reports connections held and waiting while transactions hold every connection', async () => {
    const { app } = metricsApp();
    const handle = server.database.handle;
    // Transactions take the general part of the pool on PostgreSQL; PGlite's one connection serves all.
    const part = handle.kind === 'pglite' ? 'all' : 'general';
    const size = (await scrape(app)).value('memstore_db_pool_size', { part });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inside = 0;
    const transactions = Array.from({ length: size + 1 }, () =>
      handle.db.transaction(async (tx) => {
        await tx.execute('select 1');
        inside += 1;
        await held;
      }),
    );
    for (let waited = 0; inside < size && waited < 10_000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(inside).toBe(size);
    const busy = await scrape(app);
    expect(busy.value('memstore_db_pool_connections_in_use', { part })).toBe(size);
    expect(busy.value('memstore_db_pool_waiting', { part })).toBe(1);
    release();
    await Promise.all(transactions);
    expect(inside).toBe(size + 1);
    const idle = await scrape(app);
    expect(idle.value('memstore_db_pool_connections_in_use', { part })).toBe(0);
    expect(idle.value('memstore_db_pool_waiting', { part })).toBe(0);
  });
});

describe('the live updates\' gauges', () => {
  it('count the streams open on the instance, and what its replays hold and wait for (nothing, with no replay)', async () => {
    const { app } = metricsApp();
    const admin = await server.newWorkspace();
    const live = (metrics: Scrape) => ['memstore_live_streams_open', 'memstore_live_replay_bytes', 'memstore_live_replays_waiting'].map((name) => metrics.value(name));
    for (const name of ['memstore_live_streams_open', 'memstore_live_replay_bytes', 'memstore_live_replays_waiting']) expect((await scrape(app)).family(name).type).toBe('gauge');
    expect(live(await scrape(app))).toEqual([0, 0, 0]);
    const stream = await subscribeSse((url, init) => Promise.resolve(app.fetch(url, init)), 'http://memstore.test/graphql', admin.token, 'subscription { memoryEvents { cursor } }');
    try {
      expect(stream.status).toBe(200);
      for (let waited = 0; live(await scrape(app))[0] === 0 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(live(await scrape(app))).toEqual([1, 0, 0]);
    } finally {
      stream.close();
    }
    for (let waited = 0; live(await scrape(app))[0] === 1 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(live(await scrape(app))).toEqual([0, 0, 0]);
  });
});

describe('the per-request metric families', () => {
  it('write Prometheus text that a scraper reads back: cumulative buckets with le inclusive, sum, count, label values escaped', async () => {
    const registry = new Registry();
    const histogram = new HistogramFamily('t_seconds', 'A test histogram.', ['operation'], registry, [1, 2]);
    const counter = new CounterFamily('t_total', 'A test counter.', ['operation', 'outcome'], registry);
    for (const value of [1, 1.5, 3]) histogram.observe(value, 'A');
    histogram.observe(0.5, 'quote"back\\slash\nline');
    counter.inc('A', 'ok');
    counter.inc('A', 'ok');
    counter.inc('A', 'RATE_LIMITED');
    const scrape = new Scrape(await registry.metrics());
    expect(scrape.histogram('t_seconds', { operation: 'A' })).toEqual({ labels: { operation: 'A' }, buckets: [[1, 1], [2, 2], [Infinity, 3]], count: 3, sum: 5.5 });
    expect(scrape.histogram('t_seconds', { operation: 'quote"back\\slash\nline' }).count).toBe(1);
    expect(scrape.value('t_total', { operation: 'A', outcome: 'ok' })).toBe(2);
    expect(scrape.value('t_total', { operation: 'A', outcome: 'RATE_LIMITED' })).toBe(1);
    expect(scrape.family('t_total')).toMatchObject({ type: 'counter', help: 'A test counter.' });
  });
});

describe('who may read /metrics', () => {
  const TOKEN = 'metrics-token-0123456789';

  it('with MEMSTORE_METRICS_TOKEN: only that bearer token, else 401 with nothing of the metrics', async () => {
    const config = loadConfig({ NODE_ENV: 'production', MEMSTORE_METRICS_TOKEN: TOKEN });
    const app = createApp({ config, database: server.database.handle });
    const admin = await server.newWorkspace();
    for (const headers of [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Bearer ${admin.token}` }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }] as Record<string, string>[]) {
      const refused = await app.fetch('http://memstore.test/metrics', { headers });
      expect(refused.status, JSON.stringify(headers)).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await refused.text()).not.toContain('memstore_');
    }
    const metrics = await scrape(app, { authorization: `Bearer ${TOKEN}` });
    expect(metrics.family('memstore_graphql_requests_total').type).toBe('counter');
    const posted = await app.fetch('http://memstore.test/metrics', { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(posted.status).toBe(405);
  });

  it('without a token: open outside production, 404 in production', async () => {
    const open = createApp({ config: loadConfig({ NODE_ENV: 'development' }), database: server.database.handle });
    expect((await open.fetch('http://memstore.test/metrics')).status).toBe(200);
    const production = createApp({ config: loadConfig({ NODE_ENV: 'production' }), database: server.database.handle });
    const hidden = await production.fetch('http://memstore.test/metrics');
    expect(hidden.status).toBe(404);
    expect(await hidden.text()).not.toContain('memstore_');
  });
});
