import { and, eq } from 'drizzle-orm';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { memoryStores } from '../src/db/schema.js';
import { createMemory, createStore } from './support/builders.js';
import { postgresUrl } from './support/database.js';
import { UpdateMemory } from './support/documents.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer } from './support/server.js';

/**
 * Valid concurrent writes succeed on PostgreSQL, and the store's counters stay exact: the
 * one-statement writes compute the counters from the store row they lock, never from the
 * statement's snapshot. PostgreSQL checks constraints on the row computed from the snapshot
 * before its read-committed recheck, so a snapshot total plus a freshly locked size could
 * go negative and fail a perfectly valid write.
 */

const server = useTestServer();

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
  it('an update that waited while another transaction changed the memory and the counters succeeds, with exact counters', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const memory = await createMemory(client, store.id, { path: 'race.md', content: '12345' });
    const url = server.database.url!;
    const database = new URL(url).pathname.slice(1);
    const holder = postgres(url, { max: 1, onnotice: () => {} });
    const watcher = postgres(url, { max: 1, onnotice: () => {} });
    try {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const holding = new Promise<void>((resolve) => (locked = resolve));
      // Another writer: holds the store's lock, makes the content 22 bytes and moves the counters to match.
      const other = holder.begin(async (tx) => {
        await tx`select id from memory_stores where workspace_id = ${client.workspaceId} and id = ${store.id} for update`;
        locked();
        await released;
        await tx`update memories set content = ${'x'.repeat(22)}, content_size_bytes = 22, content_sha256 = encode(sha256(${'x'.repeat(22)}::bytea), 'hex'),
          version_sequence = version_sequence + 1 where workspace_id = ${client.workspaceId} and id = ${memory.id}`;
        await tx`insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
          select workspace_id, 'memver_' || lpad(to_hex((extract(epoch from now()) * 1000)::bigint), 10, '0') || 'zzzzzzzzzz', memory_store_id, id, path, content, content_size_bytes,
            content_sha256, 'updated', version_sequence, 'key_test', now() from memories where workspace_id = ${client.workspaceId} and id = ${memory.id}`;
        await tx`update memory_stores set total_size = total_size + 17 where workspace_id = ${client.workspaceId} and id = ${store.id}`;
      });
      // The API's update to 3 bytes arrives while the other writer holds the lock, and waits.
      await holding;
      const update = client.execute(UpdateMemory, { input: { id: memory.id, content: 'abc' } });
      await untilSomeoneWaitsForALock(watcher, database);
      release();
      await other;
      const answer = await update;

      expect(answer.data?.updateMemory.__typename ?? answer.errors?.[0]?.extensions?.code).toBe('UpdateMemorySuccess');
      const [row] = await server.db
        .select({ entryCount: memoryStores.entryCount, totalSize: memoryStores.totalSize })
        .from(memoryStores)
        .where(and(eq(memoryStores.workspaceId, client.workspaceId), eq(memoryStores.id, store.id)));
      expect(row).toEqual({ entryCount: 1, totalSize: 3 });
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    } finally {
      await holder.end();
      await watcher.end();
    }
  });

  it('a create that waited while another transaction changed the counters succeeds, with exact counters', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const memory = await createMemory(client, store.id, { path: 'first.md', content: '1234567890' });
    const url = server.database.url!;
    const database = new URL(url).pathname.slice(1);
    const holder = postgres(url, { max: 1, onnotice: () => {} });
    const watcher = postgres(url, { max: 1, onnotice: () => {} });
    try {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const holding = new Promise<void>((resolve) => (locked = resolve));
      // Another writer deletes the only memory: the counters go to 0 and 0.
      const other = holder.begin(async (tx) => {
        await tx`select id from memory_stores where workspace_id = ${client.workspaceId} and id = ${store.id} for update`;
        locked();
        await released;
        await tx`insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
          select workspace_id, 'memver_' || lpad(to_hex((extract(epoch from now()) * 1000)::bigint), 10, '0') || 'zzzzzzzzzz', memory_store_id, id, path, content, content_size_bytes,
            content_sha256, 'deleted', version_sequence + 1, 'key_test', now() from memories where workspace_id = ${client.workspaceId} and id = ${memory.id}`;
        await tx`delete from memories where workspace_id = ${client.workspaceId} and id = ${memory.id}`;
        await tx`update memory_stores set entry_count = entry_count - 1, total_size = total_size - 10 where workspace_id = ${client.workspaceId} and id = ${store.id}`;
      });
      await holding;
      const create = createMemory(client, store.id, { path: 'second.md', content: 'ab' });
      await untilSomeoneWaitsForALock(watcher, database);
      release();
      await other;
      await create;

      const [row] = await server.db
        .select({ entryCount: memoryStores.entryCount, totalSize: memoryStores.totalSize })
        .from(memoryStores)
        .where(and(eq(memoryStores.workspaceId, client.workspaceId), eq(memoryStores.id, store.id)));
      expect(row).toEqual({ entryCount: 1, totalSize: 2 });
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    } finally {
      await holder.end();
      await watcher.end();
    }
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
