import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ANNOUNCEMENTS_APPLICATION_NAME } from '../src/db/announcements.js';
import { deleteExpiredEvents, readReplayPage, readWorkspaceChangeMark, recordEvent } from '../src/domain/events.js';
import { settledMark } from './support/ask-again.js';
import { invariantViolations } from './support/invariants.js';
import { openDatabaseAtLevel, type DatabaseAtLevel } from './support/migration-levels.js';

/**
 * Upgrades keep data: a database built at an earlier migration level and filled as the
 * server of that level did is migrated to the latest level, and every invariant holds with
 * every row that should survive still there.
 */

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const at = '2026-11-30T12:00:00.000Z';
/** A timestamptz column as RFC 3339 UTC text, the same on both drivers. */
const UTC = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const EVENT_POSITIONS = 'select id::int as id, xid::text as xid from memory_events order by xid, id';
const ONE_EVENT_STORE = 'memstore_0000000000000000000a';

/** Fills a database at an earlier level with workspace 'upgrade', one store and its creation's event; resolves with the events' positions. */
async function withOneEvent(database: DatabaseAtLevel): Promise<{ id: number; xid: string }[]> {
  await database.exec(`
    insert into workspaces values ('upgrade', '${at}');
    insert into memory_stores values ('upgrade', '${ONE_EVENT_STORE}', 'notes', '', 'active', 0, 0, '{}', false, null, null, '${at}', '${at}', null);
    insert into memory_events (workspace_id, kind, memory_store_id, occurred_at) values ('upgrade', 'store_created', '${ONE_EVENT_STORE}', '${at}');
  `);
  return database.query<{ id: number; xid: string }>(EVENT_POSITIONS);
}

/** After an upgrade: the invariants hold, the events are where they were, and the mark is the newest one's. */
async function expectEventsKept(database: DatabaseAtLevel, before: { id: number; xid: string }[]): Promise<void> {
  expect(await invariantViolations(database.db, 'upgrade')).toEqual([]);
  expect(await database.query(EVENT_POSITIONS)).toEqual(before);
  expect(await settledMark(database.db, 'upgrade')).toBe(`${before.at(-1)!.xid}.${before.at(-1)!.id}`);
}

/** What a server at 0000_initial leaves behind: a workspace with stores, memories, versions, mounts and sessions, and one deleted workspace. */
function initialLevelData(): string {
  const memory = (id: string, store: string, path: string, content: string, sequence: number) =>
    `insert into memories values ('upgrade', '${id}', '${store}', '${path}', '${content}', ${Buffer.byteLength(content)}, '${sha(content)}', '{"k":"v"}', ${sequence}, '${at}', '${at}');`;
  const version = (id: string, memoryId: string, store: string, path: string, content: string, operation: string, sequence: number) =>
    `insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
     values ('upgrade', '${id}', '${store}', '${memoryId}', '${path}', '${content}', ${Buffer.byteLength(content)}, '${sha(content)}', '${operation}', ${sequence}, 'key_00000000000000000001', '${at}');`;
  const injected = JSON.stringify([{ memoryStoreId: 'memstore_0000000000000000000b', access: 'read_write', systemManaged: true, createdAt: at }]);
  return `
    insert into workspaces values ('upgrade', '${at}'), ('gone', '${at}');
    insert into api_keys values ('upgrade', 'key_00000000000000000001', 'admin', 'admin', null, '${sha('token')}', '${at}', null);
    insert into memory_stores values
      ('upgrade', 'memstore_0000000000000000000a', 'team notes', '', 'active', 2, ${Buffer.byteLength('first v2') + Buffer.byteLength('second')}, '{"created_by":"forward"}', false, null, null, '${at}', '${at}', null),
      ('upgrade', 'memstore_0000000000000000000b', 'System Default Memory', '', 'active', 1, ${Buffer.byteLength('diary')}, '{"created_by":"forward"}', true, 'idn_bob', 'tmpl_t', '${at}', '${at}', null);
    ${memory('mem_0000000000000000000a', 'memstore_0000000000000000000a', 'a.md', 'first v2', 2)}
    ${memory('mem_0000000000000000000b', 'memstore_0000000000000000000a', 'b.md', 'second', 1)}
    ${memory('mem_0000000000000000000c', 'memstore_0000000000000000000b', 'diary.md', 'diary', 1)}
    ${version('memver_0000000000000000000a', 'mem_0000000000000000000a', 'memstore_0000000000000000000a', 'a.md', 'first', 'created', 1)}
    ${version('memver_0000000000000000000b', 'mem_0000000000000000000a', 'memstore_0000000000000000000a', 'a.md', 'first v2', 'updated', 2)}
    ${version('memver_0000000000000000000c', 'mem_0000000000000000000b', 'memstore_0000000000000000000a', 'b.md', 'second', 'created', 1)}
    ${version('memver_0000000000000000000d', 'mem_0000000000000000000c', 'memstore_0000000000000000000b', 'diary.md', 'diary', 'created', 1)}
    ${version('memver_0000000000000000000e', 'mem_0000000000000000000d', 'memstore_0000000000000000000a', 'gone.md', 'gone', 'created', 1)}
    ${version('memver_0000000000000000000f', 'mem_0000000000000000000d', 'memstore_0000000000000000000a', 'gone.md', 'gone', 'deleted', 2)}
    insert into memory_store_mounts values
      ('upgrade', 'idn_bob', 'tmpl_t', 'memstore_0000000000000000000b', 'read_write', true, '${at}'),
      ('upgrade', 'idn_bob', 'tmpl_u', 'memstore_0000000000000000000b', 'read_only', false, '${at}'),
      ('upgrade', 'idn_alice', 'tmpl_t', 'memstore_0000000000000000000b', 'read_only', false, '${at}'),
      ('upgrade', 'idn_alice', 'tmpl_t', 'memstore_0000000000000000000a', 'read_only', false, '${at}');
    insert into sessions values
      ('upgrade', 'sesn_0000000000000000000a', 'idn_bob', 'tmpl_t', 'managed', 'memstore_0000000000000000000b', true, '${injected}', '${at}'),
      ('gone', 'sesn_0000000000000000000b', 'idn_bob', 'tmpl_t', 'managed', 'memstore_0000000000000000000b', true, '${injected}', '${at}');
    delete from workspaces where id = 'gone';
  `;
}

describe('upgrading from 0000_initial', () => {
  it('keeps every store, memory, version and rightful mount, removes orphaned sessions and mounts of another identity\'s default store, and keeps the invariants', async () => {
    const database = await openDatabaseAtLevel('0000_initial');
    try {
      await database.exec(initialLevelData());
      // At that level a deleted workspace left its sessions behind.
      expect(await database.query('select id from sessions order by id')).toEqual([{ id: 'sesn_0000000000000000000a' }, { id: 'sesn_0000000000000000000b' }]);

      await database.migrateToLatest();

      expect(await invariantViolations(database.db, 'upgrade')).toEqual([]);
      expect(await database.query('select id, entry_count, total_size::int as total_size from memory_stores order by id')).toEqual([
        { id: 'memstore_0000000000000000000a', entry_count: 2, total_size: 14 },
        { id: 'memstore_0000000000000000000b', entry_count: 1, total_size: 5 },
      ]);
      expect(await database.query<{ count: number }>('select count(*)::int as count from memories')).toEqual([{ count: 3 }]);
      expect(await database.query<{ count: number }>('select count(*)::int as count from memory_versions')).toEqual([{ count: 6 }]);
      expect(await database.query('select identity_id, template_id, memory_store_id, system_managed from memory_store_mounts order by identity_id, template_id, memory_store_id')).toEqual([
        { identity_id: 'idn_alice', template_id: 'tmpl_t', memory_store_id: 'memstore_0000000000000000000a', system_managed: false },
        { identity_id: 'idn_bob', template_id: 'tmpl_t', memory_store_id: 'memstore_0000000000000000000b', system_managed: true },
        { identity_id: 'idn_bob', template_id: 'tmpl_u', memory_store_id: 'memstore_0000000000000000000b', system_managed: false },
      ]);
      expect(await database.query('select id from sessions order by id')).toEqual([{ id: 'sesn_0000000000000000000a' }]);

      // 0002_memory_events: the outbox starts empty (changes made before the upgrade are not
      // replayed); an event written after it gets its position from its transaction.
      expect(await database.query<{ count: number }>('select count(*)::int as count from memory_events')).toEqual([{ count: 0 }]);
      await recordEvent(database.db, { workspaceId: 'upgrade', kind: 'store_updated', memoryStoreId: 'memstore_0000000000000000000a', occurredAt: new Date(at) });
      expect(await database.query('select kind, xid::text::bigint > 0 as positioned from memory_events')).toEqual([{ kind: 'store_updated', positioned: true }]);

      // From now on a deleted workspace takes its sessions with it.
      await database.exec(`delete from workspaces where id = 'upgrade'`);
      expect(await database.query('select id from sessions')).toEqual([]);
    } finally {
      await database.close();
    }
  });
});

describe('upgrading from 0001_sessions_workspace_fk', () => {
  it('keeps every row and the invariants, and adds the empty request_replays table, whose rows go with their workspace', async () => {
    const database = await openDatabaseAtLevel('0001_sessions_workspace_fk');
    try {
      await database.exec(initialLevelData());
      await database.exec(`insert into idempotency_keys values ('upgrade', 'createMemoryStore', 'graphql-key', '${sha('input')}', 'memstore_0000000000000000000a', '${at}');`);
      const before = await database.query('select id, name, entry_count, total_size::int as total_size from memory_stores order by id');

      await database.migrateToLatest();

      expect(await invariantViolations(database.db, 'upgrade')).toEqual([]);
      expect(await database.query('select id, name, entry_count, total_size::int as total_size from memory_stores order by id')).toEqual(before);
      expect(await database.query<{ count: number }>('select count(*)::int as count from memory_versions')).toEqual([{ count: 6 }]);
      expect(await database.query('select key, result_id from idempotency_keys')).toEqual([{ key: 'graphql-key', result_id: 'memstore_0000000000000000000a' }]);
      expect(await database.query('select * from request_replays')).toEqual([]);

      await database.exec(`insert into request_replays values ('upgrade', 'rest-key', '${sha('request')}', '{}', '${at}');`);
      await database.exec(`delete from workspaces where id = 'upgrade'`);
      expect(await database.query('select * from request_replays')).toEqual([]);
    } finally {
      await database.close();
    }
  });
});


describe('upgrading from 0001_sessions_workspace_fk (before history and browsing)', () => {
  it('numbers stay, no version is a restore, and every folder above a stored memory gets its exact rollup and every memory its folder', async () => {
    const database = await openDatabaseAtLevel('0001_sessions_workspace_fk');
    try {
      const store = 'memstore_0000000000000000000a';
      const paths: [string, string, string][] = [
        ['mem_0000000000000000000a', 'top.md', '2026-11-30T12:00:00.000Z'],
        ['mem_0000000000000000000b', 'notes/a.md', '2026-11-30T12:00:01.000Z'],
        ['mem_0000000000000000000c', 'notes/2026/b.md', '2026-11-30T12:00:03.000Z'],
        ['mem_0000000000000000000d', 'notes/2026/c.md', '2026-11-30T12:00:02.000Z'],
        ['mem_0000000000000000000e', 'ü/ñ/deep.md', '2026-11-30T12:00:04.000Z'],
      ];
      const rows = paths.map(([id, path, time], index) => {
        const content = `content ${index}`;
        return {
          memory: `('upgrade', '${id}', '${store}', '${path}', '${content}', ${Buffer.byteLength(content)}, '${sha(content)}', '{}', 1, '${time}', '${time}')`,
          version: `('upgrade', 'memver_000000000000000000${index}0', '${store}', '${id}', '${path}', '${content}', ${Buffer.byteLength(content)}, '${sha(content)}', 'created', 1, 'key_00000000000000000001', '${time}')`,
        };
      });
      await database.exec(`
        insert into workspaces values ('upgrade', '${at}');
        insert into memory_stores values ('upgrade', '${store}', 'tree', '', 'active', ${paths.length}, ${paths.length * 9}, '{"created_by":"forward"}', false, null, null, '${at}', '${at}', null);
        insert into memories values ${rows.map((row) => row.memory).join(', ')};
        insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
          values ${rows.map((row) => row.version).join(', ')};
      `);

      await database.migrateToLatest();

      expect(await invariantViolations(database.db, 'upgrade')).toEqual([]);
      expect(await database.query(`select path, parent, name, memory_count, total_size::int as total_size, ${UTC('updated_at')} as updated_at from memory_folders order by path`)).toEqual([
        { path: 'notes/', parent: '', name: 'notes', memory_count: 3, total_size: 27, updated_at: '2026-11-30T12:00:03.000Z' },
        { path: 'notes/2026/', parent: 'notes/', name: '2026', memory_count: 2, total_size: 18, updated_at: '2026-11-30T12:00:03.000Z' },
        { path: 'ü/', parent: '', name: 'ü', memory_count: 1, total_size: 9, updated_at: '2026-11-30T12:00:04.000Z' },
        { path: 'ü/ñ/', parent: 'ü/', name: 'ñ', memory_count: 1, total_size: 9, updated_at: '2026-11-30T12:00:04.000Z' },
      ]);
      expect(await database.query('select path, folder from memories order by path')).toEqual([
        { path: 'notes/2026/b.md', folder: 'notes/2026/' },
        { path: 'notes/2026/c.md', folder: 'notes/2026/' },
        { path: 'notes/a.md', folder: 'notes/' },
        { path: 'top.md', folder: '' },
        { path: 'ü/ñ/deep.md', folder: 'ü/ñ/' },
      ]);
      expect(await database.query('select count(*)::int as count from memory_versions where restored_from_version_id is not null')).toEqual([{ count: 0 }]);
      // Stored memories are searchable at once: the generated search column is filled for them.
      expect(await database.query(`select path from memories where search_vector @@ websearch_to_tsquery('simple', 'content notes') order by path`)).toEqual([
        { path: 'notes/2026/b.md' },
        { path: 'notes/2026/c.md' },
        { path: 'notes/a.md' },
      ]);
      // The trigger keeps the backfilled rollups from here on.
      await database.exec(`delete from memories where id = 'mem_0000000000000000000c'`);
      expect(await database.query(`select path, memory_count, ${UTC('updated_at')} as updated_at from memory_folders where path like 'notes/%' order by path`)).toEqual([
        { path: 'notes/', memory_count: 2, updated_at: '2026-11-30T12:00:02.000Z' },
        { path: 'notes/2026/', memory_count: 1, updated_at: '2026-11-30T12:00:02.000Z' },
      ]);
    } finally {
      await database.close();
    }
  });
});

describe('upgrading from 0006_memory_search (before change marks)', () => {
  it('keeps every event, in order, and the newest of each workspace is its change mark', async () => {
    const database = await openDatabaseAtLevel('0006_memory_search');
    try {
      const store = 'memstore_0000000000000000000a';
      await database.exec(`
        insert into workspaces values ('upgrade', '${at}'), ('other', '${at}');
        insert into memory_stores values ('upgrade', '${store}', 'notes', '', 'active', 0, 0, '{}', false, null, null, '${at}', '${at}', null);
        insert into memory_events (workspace_id, kind, memory_store_id, occurred_at) values
          ('upgrade', 'store_created', '${store}', '${at}'), ('other', 'store_created', 'memstore_0000000000000000000b', '${at}');
      `);
      await database.exec(`insert into memory_events (workspace_id, kind, memory_store_id, occurred_at) values ('upgrade', 'store_updated', '${store}', '${at}')`);
      const before = await database.query<{ workspace_id: string; id: number; xid: string; kind: string }>('select workspace_id, id::int as id, xid::text as xid, kind::text as kind from memory_events order by xid, id');

      await database.migrateToLatest();

      expect(await invariantViolations(database.db, 'upgrade')).toEqual([]);
      expect(await database.query('select workspace_id, id::int as id, xid::text as xid, kind::text as kind from memory_events order by xid, id')).toEqual(before);
      const newest = before.filter((event) => event.workspace_id === 'upgrade').at(-1)!;
      expect(newest.kind).toBe('store_updated');
      expect(await settledMark(database.db, 'upgrade')).toBe(`${newest.xid}.${newest.id}`);
      expect(await readWorkspaceChangeMark(database.db, 'nobody')).toBe('empty');
    } finally {
      await database.close();
    }
  });
});

describe('upgrading from 0007_workspace_event_positions (before announcements after commit)', () => {
  it('keeps every event and change mark, and no trigger is left on the events table to notify inside a writing transaction', async () => {
    const database = await openDatabaseAtLevel('0007_workspace_event_positions');
    try {
      const before = await withOneEvent(database);
      const triggers = `select tgname::text as name from pg_trigger where tgrelid = 'memory_events'::regclass and not tgisinternal`;
      expect(await database.query(triggers)).toEqual([{ name: 'memory_events_notify' }]);

      await database.migrateToLatest();

      await expectEventsKept(database, before);
      expect(await database.query(triggers)).toEqual([]);
      expect(await database.query(`select proname::text from pg_proc where proname = 'memory_events_notify'`)).toEqual([]);
      // Events are still written after the upgrade.
      await recordEvent(database.db, { workspaceId: 'upgrade', kind: 'store_updated', memoryStoreId: ONE_EVENT_STORE, occurredAt: new Date(at) });
      expect(await database.query<{ count: number }>('select count(*)::int as count from memory_events')).toEqual([{ count: 2 }]);
    } finally {
      await database.close();
    }
  });
});

describe('upgrading from 0009_read_functions (before the horizon left announcements out)', () => {
  it('keeps every event and change mark, and the horizon leaves announcement sessions out', async () => {
    const database = await openDatabaseAtLevel('0009_read_functions');
    try {
      const before = await withOneEvent(database);
      const mark = await settledMark(database.db, 'upgrade');
      expect(mark).toBe(`${before[0]!.xid}.${before[0]!.id}`);

      await database.migrateToLatest();

      await expectEventsKept(database, before);
      // The function is replaced, not added beside the old one.
      const horizon = `select prosrc like '%' || $1 || '%' as leaves_out from pg_proc where proname = 'memstore_event_horizon'`;
      for (const passedOver of [ANNOUNCEMENTS_APPLICATION_NAME, 'autovacuum worker']) expect(await database.query(horizon, [passedOver])).toEqual([{ leaves_out: true }]);
      await recordEvent(database.db, { workspaceId: 'upgrade', kind: 'store_updated', memoryStoreId: ONE_EVENT_STORE, occurredAt: new Date(at) });
      const [newest] = await database.query<{ id: number; xid: string }>('select id::int as id, xid::text as xid from memory_events order by xid desc, id desc limit 1');
      expect(await settledMark(database.db, 'upgrade')).toBe(`${newest!.xid}.${newest!.id}`);
      expect(newest!.id).not.toBe(before[0]!.id);
    } finally {
      await database.close();
    }
  });
});

describe('upgrading from 0010_event_horizon_leaves_out_non_writers (before sweep marks)', () => {
  it('keeps every event and change mark, and marks each workspace with events as swept to just before its oldest: its cursors replay, an earlier position is expired, and sweeps move the mark on', async () => {
    const database = await openDatabaseAtLevel('0010_event_horizon_leaves_out_non_writers');
    try {
      const first = await withOneEvent(database);
      await database.exec(`insert into memory_events (workspace_id, kind, memory_store_id, occurred_at) values ('upgrade', 'store_updated', '${ONE_EVENT_STORE}', '${at}')`);
      await database.exec(`insert into workspaces values ('quiet', '${at}')`);
      const before = await database.query<{ id: number; xid: string }>(EVENT_POSITIONS);
      expect(before).toHaveLength(2);

      await database.migrateToLatest();

      await expectEventsKept(database, before);
      const marks = 'select workspace_id, xid::text as xid, id::int as id from memory_event_sweeps order by workspace_id';
      expect(await database.query(marks)).toEqual([{ workspace_id: 'upgrade', xid: first[0]!.xid, id: first[0]!.id - 1 }]);
      const page = (after: { xid: string; id: number }) => readReplayPage(database.db, 'upgrade', null, { xid: BigInt(after.xid), id: after.id }, 10);
      // From the oldest event's cursor, and from the next: the replay reads on.
      expect(await page(before[0]!)).toMatchObject({ swept: false, events: [{ kind: 'store_updated' }] });
      expect(await page(before[1]!)).toEqual({ swept: false, events: [] });
      // From before the oldest: what was there may have been swept.
      expect((await page({ xid: first[0]!.xid, id: first[0]!.id - 2 })).swept).toBe(true);

      // A sweep after the upgrade deletes the older event and moves the mark to it.
      expect(await deleteExpiredEvents(database.db, new Date(Date.parse(at) + 86_400_000), 100)).toBe(1);
      expect(await database.query(marks)).toEqual([{ workspace_id: 'upgrade', xid: before[0]!.xid, id: before[0]!.id }]);
      expect((await page(before[0]!)).swept).toBe(false);
      // The marks go with their workspace.
      await database.exec(`delete from workspaces where id = 'upgrade'`);
      expect(await database.query(marks)).toEqual([]);
    } finally {
      await database.close();
    }
  });
});
