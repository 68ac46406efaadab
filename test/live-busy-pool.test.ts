import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createApp, eventHubOf } from '../src/app.js';
import { poolSizes, rowsOf, type Database } from '../src/db/client.js';
import { askAgain } from './support/ask-again.js';
import { postgresUrl, TEST_POOL_SIZE } from './support/database.js';
import { createMemoryAt, createStoreNamed, eventsOf, subscribeSse, useSecondPool } from './support/live.js';
import { TestClient, useTestServer } from './support/server.js';

/**
 * The live-update reader reads events, what they are about and keys on a read-only
 * connection of its own. On the pool's connections a statement waits behind those sent
 * before it once every connection is busy — writes waiting for their store's lock, slow
 * reads — and the reader's would wait with them: every stream of the instance late by as
 * long as the slowest of them. PostgreSQL only (PGlite has one connection).
 */
const server = useTestServer();

describe.skipIf(postgresUrl === undefined)('a change made while every connection that writes is busy', () => {
  const other = useSecondPool(server);

  it('reaches the streams at once: the reader does not wait behind those connections', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'busy');
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, 'subscription { memoryEvents { kind memoryId } }');

    // Every connection of the test server's pool that writes busy (cancelled at the end): a
    // statement sent there now waits behind one of them.
    const { general } = poolSizes(TEST_POOL_SIZE);
    let slept = false;
    const sleeps = Promise.all(Array.from({ length: general }, () => server.db.execute(sql`select pg_sleep(60)`).catch(() => null))).then(() => (slept = true));
    const sleeping = async () =>
      rowsOf(await other().db.execute(sql`select pid from pg_stat_activity where datname = current_database() and query = 'select pg_sleep(60)' and state = 'active'`)).map((row) => row.pid);
    expect(await askAgain(sleeping, (pids) => pids.length < general, { times: 500, everyMs: 20 })).toHaveLength(general);

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
      for (const pid of await sleeping()) await other().db.execute(sql`select pg_cancel_backend(${pid})`);
      await sleeps;
    }
  }, 30_000);

  it('reaches live streams at once while the replays\' connection is busy, and the resuming stream catches up once it is free', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'replaying');
    const open = (after?: string) =>
      subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, 'subscription($after: String) { memoryEvents(after: $after) { cursor kind memoryId } }', after ? { after } : {});
    const live = await open();
    const first = await createMemoryAt(client, storeId, 'first.md', 'before the replays are busy');
    const cursor = eventsOf(await live.waitFor(1, 5000))[0]!.cursor as string;
    const missed = await createMemoryAt(client, storeId, 'missed.md', 'after the cursor');

    // The replays' connection busy (as many streams replaying at once would keep it), cancelled below.
    const replays = (eventHubOf(server.app) as unknown as { replays: Database }).replays;
    const sleep = replays.execute(sql`select pg_sleep(60)`).catch(() => null);
    const sleeping = async () =>
      rowsOf(await other().db.execute(sql`select pid from pg_stat_activity where datname = current_database() and query = 'select pg_sleep(60)' and state = 'active'`)).map((row) => row.pid);
    expect(await askAgain(sleeping, (pids) => pids.length < 1, { times: 500, everyMs: 20 })).toHaveLength(1);
    const resumed = await open(cursor);
    let during: { id: string } = { id: '' };
    try {
      const startedAt = performance.now();
      during = await createMemoryAt(client, storeId, 'during.md', 'while a replay waits');
      expect(eventsOf(await live.waitFor(3, 3000)).map((event) => event.memoryId)).toEqual([first.id, missed.id, during.id]);
      expect(performance.now() - startedAt).toBeLessThan(2000);
      expect(resumed.results).toEqual([]);
    } finally {
      for (const pid of await sleeping()) await other().db.execute(sql`select pg_cancel_backend(${pid})`);
      await sleep;
    }
    expect(eventsOf(await resumed.waitFor(2, 5000)).map((event) => event.memoryId)).toEqual([missed.id, during.id]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(resumed.results).toHaveLength(2);
    live.close();
    resumed.close();
  }, 30_000);

  it('keeps reaching the streams when the database drops every connection, the reader\'s among them', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'dropped');
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, 'subscription { memoryEvents { kind memoryId } }');
    const second = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: other() });
    const writer = new TestClient(second, client.token, client.workspaceId);
    try {
      const before = await createMemoryAt(writer, storeId, 'before.md', 'read on the reader\'s connection');
      expect(eventsOf(await stream.waitFor(1, 5000)).map((event) => event.memoryId)).toEqual([before.id]);
      const sessions = async () =>
        rowsOf(await other().db.execute(sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`))[0]!.n as number;
      expect(await sessions()).toBeGreaterThan(1);
      // Every session of this database but the one that asks: the test server's pool, its listener, its reader.
      await other().db.execute(sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()`);
      const after = await createMemoryAt(writer, storeId, 'after.md', 'read on a new connection');
      expect(eventsOf(await stream.waitFor(2, 10_000)).map((event) => event.memoryId)).toEqual([before.id, after.id]);
    } finally {
      stream.close();
      await eventHubOf(second).close();
    }
  }, 30_000);
});
