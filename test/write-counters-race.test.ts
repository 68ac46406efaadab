import { and, eq } from 'drizzle-orm';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { memoryStores } from '../src/db/schema.js';
import { createMemory, createStore } from './support/builders.js';
import { postgresUrl } from './support/database.js';
import { UpdateMemory } from './support/documents.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer, WRITE_PATHS } from './support/server.js';

/**
 * Valid concurrent writes succeed on PostgreSQL, and the store's counters stay exact: the
 * one-statement writes compute the counters from the store row they lock, never from the
 * statement's snapshot. PostgreSQL checks constraints on the row computed from the snapshot
 * before its read-committed recheck, so a snapshot total plus a freshly locked size could
 * go negative and fail a perfectly valid write.
 */

describe.each(WRITE_PATHS)('counters under racing writes, $writes', ({ singleStatementWrites }) => {
  const server = useTestServer({ singleStatementWrites });

  /** Waits until some session of the database waits for a lock (the blocked statement has arrived). */
  async function untilSomeoneWaitsForALock(admin: postgres.Sql, database: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [row] = await admin`
        select count(*)::int as waiting from pg_stat_activity
        where datname = ${database} and wait_event_type = 'Lock'`;
      if (row!.waiting > 0) return;
      if (Date.now() > deadline) throw new Error('no statement started waiting for the lock');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  describe.skipIf(postgresUrl === undefined)('valid concurrent writes on PostgreSQL', () => {
    /**
     * Sends `request` while another transaction holds the store's row lock; once the request
     * waits for that lock, the other transaction runs `change` and commits.
     */
    async function whileAnotherWriterHoldsTheStore<T>(
      workspaceId: string,
      storeId: string,
      change: (tx: postgres.TransactionSql) => Promise<unknown>,
      request: () => Promise<T>,
    ): Promise<T> {
      const url = server.database.url!;
      const holder = postgres(url, { max: 1, onnotice: () => {} });
      const watcher = postgres(url, { max: 1, onnotice: () => {} });
      try {
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let locked!: () => void;
        const holding = new Promise<void>((resolve) => (locked = resolve));
        const other = holder.begin(async (tx) => {
          await tx`select id from memory_stores where workspace_id = ${workspaceId} and id = ${storeId} for update`;
          locked();
          await released;
          await change(tx);
        });
        await holding;
        const answer = request();
        await untilSomeoneWaitsForALock(watcher, new URL(url).pathname.slice(1));
        release();
        await other;
        return await answer;
      } finally {
        await holder.end();
        await watcher.end();
      }
    }

    async function countersOf(workspaceId: string, storeId: string) {
      const [row] = await server.db
        .select({ entryCount: memoryStores.entryCount, totalSize: memoryStores.totalSize })
        .from(memoryStores)
        .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, storeId)));
      return row;
    }

    it('an update that waited while another transaction changed the memory and the counters succeeds, with exact counters', async () => {
      const client = await server.newWorkspace();
      const store = await createStore(client);
      const memory = await createMemory(client, store.id, { path: 'race.md', content: '12345' });
      const workspaceId = client.workspaceId;
      // Another writer makes the content 22 bytes and moves the counters to match, while the
      // API's update to 3 bytes waits for the store's lock.
      const answer = await whileAnotherWriterHoldsTheStore(
        workspaceId,
        store.id,
        async (tx) => {
          await tx`update memories set content = ${'x'.repeat(22)}, content_size_bytes = 22, content_sha256 = encode(sha256(${'x'.repeat(22)}::bytea), 'hex'),
            version_sequence = version_sequence + 1 where workspace_id = ${workspaceId} and id = ${memory.id}`;
          await tx`insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
            select workspace_id, 'memver_' || lpad(to_hex((extract(epoch from now()) * 1000)::bigint), 10, '0') || 'zzzzzzzzzz', memory_store_id, id, path, content, content_size_bytes,
              content_sha256, 'updated', version_sequence, 'key_test', now() from memories where workspace_id = ${workspaceId} and id = ${memory.id}`;
          await tx`update memory_stores set total_size = total_size + 17 where workspace_id = ${workspaceId} and id = ${store.id}`;
        },
        () => client.execute(UpdateMemory, { input: { id: memory.id, content: 'abc' } }),
      );

      expect(answer.data?.updateMemory.__typename ?? answer.errors?.[0]?.extensions?.code).toBe('UpdateMemorySuccess');
      expect(await countersOf(workspaceId, store.id)).toEqual({ entryCount: 1, totalSize: 3 });
      expect(await invariantViolations(server.db, workspaceId)).toEqual([]);
    });

    it('a create that waited while another transaction changed the counters succeeds, with exact counters', async () => {
      const client = await server.newWorkspace();
      const store = await createStore(client);
      const memory = await createMemory(client, store.id, { path: 'first.md', content: '1234567890' });
      const workspaceId = client.workspaceId;
      // Another writer deletes the only memory (the counters go to 0 and 0) while the create waits.
      await whileAnotherWriterHoldsTheStore(
        workspaceId,
        store.id,
        async (tx) => {
          await tx`insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
            select workspace_id, 'memver_' || lpad(to_hex((extract(epoch from now()) * 1000)::bigint), 10, '0') || 'zzzzzzzzzz', memory_store_id, id, path, content, content_size_bytes,
              content_sha256, 'deleted', version_sequence + 1, 'key_test', now() from memories where workspace_id = ${workspaceId} and id = ${memory.id}`;
          await tx`delete from memories where workspace_id = ${workspaceId} and id = ${memory.id}`;
          await tx`update memory_stores set entry_count = entry_count - 1, total_size = total_size - 10 where workspace_id = ${workspaceId} and id = ${store.id}`;
        },
        () => createMemory(client, store.id, { path: 'second.md', content: 'ab' }),
      );

      expect(await countersOf(workspaceId, store.id)).toEqual({ entryCount: 1, totalSize: 2 });
      expect(await invariantViolations(server.db, workspaceId)).toEqual([]);
    });

    it('20 rounds of 20 parallel plain updates of one memory: every one succeeds and the counters stay exact', async () => {
      const client = await server.newWorkspace();
      const store = await createStore(client);
      const memory = await createMemory(client, store.id, { path: 'storm.md', content: 'start' });
      for (let round = 0; round < 20; round += 1) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, writer) =>
            // Sizes that go up and down, so that a stale total would cross zero.
            client.execute(UpdateMemory, { input: { id: memory.id, content: 'y'.repeat(((writer * 37 + round * 11) % 60) + 1) } }),
          ),
        );
        const outcomes = answers.map((answer) => answer.data?.updateMemory.__typename ?? answer.errors?.[0]?.extensions?.code);
        expect(outcomes, `round ${round}`).toEqual(Array(20).fill('UpdateMemorySuccess'));
        expect(await invariantViolations(server.db, client.workspaceId), `round ${round}`).toEqual([]);
      }
    });
  });
});
