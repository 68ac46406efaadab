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
  const ids = new Map<string, string>();
  const memoryRows: (typeof memories.$inferInsert)[] = [];
  const versionRows: (typeof memoryVersions.$inferInsert)[] = [];
  const createdAt = new Date(Date.UTC(2026, 0, 1));
  let totalSize = 0;
  for (const path of paths) {
    const memoryId = newId('memory');
    ids.set(path, memoryId);
    const content = `${path} in ${memoryStoreId}`;
    const common = {
      workspaceId,
      memoryStoreId,
      path,
      content,
      contentSizeBytes: Buffer.byteLength(content),
      contentSha256: createHash('sha256').update(content).digest('hex'),
      createdAt,
    };
    totalSize += common.contentSizeBytes;
    memoryRows.push({ ...common, id: memoryId, metadata: {}, versionSequence: 1, updatedAt: createdAt });
    versionRows.push({ ...common, id: newId('memoryVersion'), memoryId, operation: 'created', sequence: 1, createdByApiKeyId: 'key_seed' });
  }
  for (let offset = 0; offset < memoryRows.length; offset += 500) await db.insert(memories).values(memoryRows.slice(offset, offset + 500));
  for (let offset = 0; offset < versionRows.length; offset += 500) await db.insert(memoryVersions).values(versionRows.slice(offset, offset + 500));
  await db
    .update(memoryStores)
    .set({ entryCount: sql`${memoryStores.entryCount} + ${paths.length}`, totalSize: sql`${memoryStores.totalSize} + ${totalSize}` })
    .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, memoryStoreId)));
  return ids;
}
