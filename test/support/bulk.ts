import { createHash } from 'node:crypto';
import { and, eq, sql } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';
import { memories, memoryStores, memoryVersions } from '../../src/db/schema.js';
import { newId } from '../../src/domain/ids.js';

/**
 * Writes stores × memories × versions straight into the database (consistent counters and
 * histories), for tests that need volume rather than the write path.
 */
export async function seedStores(
  db: Database,
  workspaceId: string,
  shape: { stores: number; memoriesPerStore: number; versionsPerMemory: number },
): Promise<string[]> {
  const storeIds: string[] = [];
  const base = Date.UTC(2026, 0, 1);
  for (let storeIndex = 0; storeIndex < shape.stores; storeIndex += 1) {
    const storeId = newId('memoryStore');
    storeIds.push(storeId);
    const memoryRows: (typeof memories.$inferInsert)[] = [];
    const versionRows: (typeof memoryVersions.$inferInsert)[] = [];
    let totalSize = 0;
    for (let memoryIndex = 0; memoryIndex < shape.memoriesPerStore; memoryIndex += 1) {
      const memoryId = newId('memory');
      const path = `notes/${String(memoryIndex).padStart(4, '0')}.md`;
      let content = '';
      for (let sequence = 1; sequence <= shape.versionsPerMemory; sequence += 1) {
        content = `memory ${memoryIndex} of store ${storeIndex}, version ${sequence}`;
        versionRows.push({
          workspaceId,
          id: newId('memoryVersion'),
          memoryStoreId: storeId,
          memoryId,
          path,
          content,
          contentSizeBytes: Buffer.byteLength(content),
          contentSha256: createHash('sha256').update(content).digest('hex'),
          operation: sequence === 1 ? 'created' : 'updated',
          sequence,
          createdByApiKeyId: 'key_seed',
          createdAt: new Date(base + sequence * 1000 + memoryIndex),
        });
      }
      totalSize += Buffer.byteLength(content);
      memoryRows.push({
        workspaceId,
        id: memoryId,
        memoryStoreId: storeId,
        path,
        content,
        contentSizeBytes: Buffer.byteLength(content),
        contentSha256: createHash('sha256').update(content).digest('hex'),
        metadata: {},
        versionSequence: shape.versionsPerMemory,
        createdAt: new Date(base + 1000 + memoryIndex),
        updatedAt: new Date(base + shape.versionsPerMemory * 1000 + memoryIndex),
      });
    }
    const now = new Date(base + storeIndex);
    await db.insert(memoryStores).values({
      workspaceId,
      id: storeId,
      name: `store ${storeIndex}`,
      description: '',
      status: 'active',
      entryCount: shape.memoriesPerStore,
      totalSize,
      metadata: { created_by: 'forward' },
      systemManaged: false,
      createdAt: now,
      updatedAt: now,
    });
    for (let offset = 0; offset < memoryRows.length; offset += 500) await db.insert(memories).values(memoryRows.slice(offset, offset + 500));
    for (let offset = 0; offset < versionRows.length; offset += 500) await db.insert(memoryVersions).values(versionRows.slice(offset, offset + 500));
  }
  return storeIds;
}

/**
 * Writes one memory at each path into an existing store, each with its one CREATED version,
 * and raises the store's counters to match, straight into the database. Returns the new
 * memory ids by path.
 */
export async function seedMemoriesAtPaths(db: Database, workspaceId: string, memoryStoreId: string, paths: readonly string[]): Promise<Map<string, string>> {
  const ids = new Map(paths.map((path) => [path, newId('memory')]));
  const memoryIds = paths.map((path) => ids.get(path)!);
  const versionIds = paths.map(() => newId('memoryVersion'));
  const createdAt = new Date(Date.UTC(2026, 0, 1)).toISOString();
  // Whole arrays as single parameters, content and hashes computed by the database: one
  // statement per table, however many memories.
  await db.execute(sql`
    insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata, version_sequence, created_at, updated_at)
    select ${workspaceId}, seeded.id, ${memoryStoreId}, seeded.path, seeded.content, octet_length(seeded.content),
           encode(sha256(convert_to(seeded.content, 'UTF8')), 'hex'), '{}'::jsonb, 1, ${createdAt}::timestamptz, ${createdAt}::timestamptz
    from (select id, path, path || ' in ' || ${memoryStoreId} as content
          from unnest(${sql.param(memoryIds)}::text[], ${sql.param([...paths])}::text[]) as input(id, path)) seeded`);
  await db.execute(sql`
    insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
    select m.workspace_id, v.id, m.memory_store_id, m.id, m.path, m.content, m.content_size_bytes, m.content_sha256, 'created', 1, 'key_seed', m.created_at
    from unnest(${sql.param(memoryIds)}::text[], ${sql.param(versionIds)}::text[]) as v(memory_id, id)
    join memories m on m.workspace_id = ${workspaceId} and m.id = v.memory_id`);
  await db
    .update(memoryStores)
    .set({
      entryCount: sql`${memoryStores.entryCount} + ${paths.length}`,
      totalSize: sql`${memoryStores.totalSize} + (select coalesce(sum(content_size_bytes), 0) from memories where workspace_id = ${workspaceId} and id = any(${sql.param(memoryIds)}::text[]))`,
    })
    .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, memoryStoreId)));
  return ids;
}
