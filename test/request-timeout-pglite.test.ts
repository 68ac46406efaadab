import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../src/app.js';
import { createDb, type DatabaseHandle } from '../src/db/client.js';
import { ensureAdminKey, generateToken } from '../src/domain/api-keys.js';
import { postgresUrl } from './support/database.js';

/**
 * PGlite runs each statement in the server's own thread and cannot cancel one. The time
 * limit still holds there: a request past it is answered 503 REQUEST_TIMEOUT, its work stops
 * at its next statement, and /healthz is answered between statements meanwhile.
 */

const TIMEOUT_MS = 300;
const VERSIONS = 100_000;
const token = generateToken();

describe.skipIf(postgresUrl !== undefined)('the time limit on PGlite', { timeout: 120_000 }, () => {
  let database: DatabaseHandle;
  let app: App;

  beforeAll(async () => {
    database = await createDb({ databaseUrl: undefined, dataDir: 'memory://' });
    await ensureAdminKey(database.db, 'slow', token, new Date(), 'key');
    await database.run(`insert into memory_stores values ('slow', 'memstore_0000000000000000slow', 'history', '', 'active', 0, 0, '{}', false, null, null, now(), now(), null)`, []);
    await database.run(
      `insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
       select 'slow', 'memver_' || lpad(g::text, 20, '0'), 'memstore_0000000000000000slow', 'mem_' || lpad((g / 10)::text, 20, '0'), 'p.md', 'c', 1, 'x', 'updated', g % 10 + 1, 'key_x',
         timestamptz '2026-01-01' + g * interval '1 second'
       from generate_series(1, ${VERSIONS}) g`,
      [],
    );
    app = createApp({ config: { nodeEnv: 'test', graphiql: false, requestTimeoutMs: TIMEOUT_MS }, database });
  });

  afterAll(async () => {
    await database?.close();
  });

  it('answers a request of many long counts 503 REQUEST_TIMEOUT near its limit, sends no statement after it, and keeps /healthz answering', async () => {
    // 19 counts over the store's history (cost 19 × (1 + COUNT_SCAN_COST): allowed), each reading thousands of rows.
    const counts = Array.from(
      { length: 19 },
      (_, index) => `c${index}: versions(first: 0, operation: UPDATED, createdAfter: "2026-01-01T00:00:${String(index).padStart(2, '0')}Z") { totalCount }`,
    ).join(' ');
    const query = `{ memoryStore(id: "memstore_0000000000000000slow") { ${counts} } }`;
    let healthiest = 0;
    let slowestHealth = 0;
    let answered = false;
    const health = (async () => {
      while (!answered) {
        const started = performance.now();
        expect((await app.fetch('http://memstore.test/healthz')).status).toBe(200);
        slowestHealth = Math.max(slowestHealth, performance.now() - started);
        healthiest += 1;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const started = performance.now();
    const response = await app.fetch('http://memstore.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query }),
    });
    const elapsed = performance.now() - started;
    // The counts not yet run when the time was up are not run at all: the database is free at once.
    const probeStarted = performance.now();
    await database.run('select 1', []);
    const probeMs = performance.now() - probeStarted;
    answered = true;
    await health;
    const body = (await response.json()) as { errors?: { extensions?: { code?: string } }[] };
    expect(response.status).toBe(503);
    expect(body.errors?.[0]?.extensions?.code).toBe('REQUEST_TIMEOUT');
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 700);
    expect(probeMs).toBeLessThan(150);
    expect(healthiest).toBeGreaterThan(0);
    expect(slowestHealth).toBeLessThan(500);
  });
});
