import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { invariantViolations } from './support/invariants.js';
import { openDatabaseAtLevel } from './support/migration-levels.js';

/**
 * Upgrades keep data: a database built at an earlier migration level and filled as the
 * server of that level did is migrated to the latest level, and every invariant holds with
 * every row that should survive still there.
 */

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const at = '2026-11-30T12:00:00.000Z';

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

      // From now on a deleted workspace takes its sessions with it.
      await database.exec(`delete from workspaces where id = 'upgrade'`);
      expect(await database.query('select id from sessions')).toEqual([]);
    } finally {
      await database.close();
    }
  });
});
