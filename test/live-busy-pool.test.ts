import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createApp, eventHubOf } from '../src/app.js';
import { DEFAULT_DB_POOL_SIZE, poolSizes, rowsOf } from '../src/db/client.js';
import { postgresUrl } from './support/database.js';
import { createMemoryAt, createStoreNamed, eventsOf, subscribeSse, useSecondPool } from './support/live.js';
import { TestClient, useTestServer } from './support/server.js';

/**
 * The live-update reader reads events, what they are about and keys on the connections that
 * only read (the compiled reads'), each statement alone. On the pool's other connections a
 * statement waits behind those sent before it once every connection is busy — writes waiting
 * for their store's lock, long transactions — and the reader's would wait with them: every
 * stream of the instance late by as long as the slowest of them. PostgreSQL only (PGlite has
 * one connection).
 */
const server = useTestServer();

describe.skipIf(postgresUrl === undefined)('a change made while every connection that writes is busy', () => {
  const other = useSecondPool(server);

  it('reaches the streams at once: the reader does not wait behind those connections', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'busy');
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, 'subscription { memoryEvents { kind memoryId } }');

    // Every connection of the pool that writes (DEFAULT_DB_POOL_SIZE, as the test server's)
    // busy for 4 s: a statement sent there now waits behind one of them.
    const { general } = poolSizes(DEFAULT_DB_POOL_SIZE);
    let slept = false;
    const sleeps = Promise.all(Array.from({ length: general }, () => server.db.execute(sql`select pg_sleep(4)`))).then(() => (slept = true));
    for (let tries = 0; ; tries += 1) {
      const [row] = rowsOf(await other().db.execute(sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and query = 'select pg_sleep(4)' and state = 'active'`));
      if (row!.n === general) break;
      if (tries > 100) throw new Error('the sleeps did not start');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The change comes through another instance (its own connections), as it would from another server.
    const second = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: other() });
    try {
      const startedAt = performance.now();
      const written = await createMemoryAt(new TestClient(second, client.token, client.workspaceId), storeId, 'while-busy.md', 'written while the pool is busy');
      const [event] = eventsOf(await stream.waitFor(1, 3000));
      expect(event).toEqual({ kind: 'MEMORY_CREATED', memoryId: written.id });
      expect(performance.now() - startedAt).toBeLessThan(2000);
      expect(slept).toBe(false);
    } finally {
      stream.close();
      await eventHubOf(second).close();
      await sleeps;
    }
  }, 20_000);
});
