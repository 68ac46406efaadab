import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';
import { memories, memoryFolders, memoryStores, memoryVersions } from '../../src/db/schema.js';

/**
 * The invariants of API.md §6, checked against the database of one workspace: store
 * counters equal the live memories' count and byte sum, every live memory equals its
 * newest version, a memory is gone exactly when its newest version is DELETED, and sizes
 * and hashes match the content. Returns what is wrong.
 */
export async function invariantViolations(db: Database, workspaceId: string): Promise<string[]> {
  const problems: string[] = [];
  const stores = await db.select().from(memoryStores).where(eq(memoryStores.workspaceId, workspaceId));
  const live = await db.select().from(memories).where(eq(memories.workspaceId, workspaceId));
  const versions = await db.select().from(memoryVersions).where(eq(memoryVersions.workspaceId, workspaceId));

  for (const store of stores) {
    const own = live.filter((memory) => memory.memoryStoreId === store.id);
    const bytes = own.reduce((sum, memory) => sum + memory.contentSizeBytes, 0);
    if (store.entryCount !== own.length) problems.push(`${store.id}: entryCount ${store.entryCount}, live memories ${own.length}`);
    if (store.totalSize !== bytes) problems.push(`${store.id}: totalSize ${store.totalSize}, live bytes ${bytes}`);
  }

  const newest = new Map<string, (typeof versions)[number]>();
  for (const version of versions) {
    const previous = newest.get(version.memoryId);
    if (!previous || version.sequence > previous.sequence) newest.set(version.memoryId, version);
  }
  for (const memory of live) {
    const version = newest.get(memory.id);
    if (!version) {
      problems.push(`${memory.id}: no version`);
      continue;
    }
    if (version.operation === 'deleted') problems.push(`${memory.id}: live, but its newest version is DELETED`);
    if (version.sequence !== memory.versionSequence) problems.push(`${memory.id}: versionSequence ${memory.versionSequence}, newest ${version.sequence}`);
    if (version.redactedAt === null && version.content !== memory.content) problems.push(`${memory.id}: content differs from its newest version`);
    if (version.path !== memory.path || version.contentSha256 !== memory.contentSha256 || version.contentSizeBytes !== memory.contentSizeBytes) {
      problems.push(`${memory.id}: path, size or sha differs from its newest version`);
    }
    if (createHash('sha256').update(memory.content, 'utf8').digest('hex') !== memory.contentSha256) problems.push(`${memory.id}: wrong contentSha256`);
    if (Buffer.byteLength(memory.content, 'utf8') !== memory.contentSizeBytes) problems.push(`${memory.id}: wrong contentSizeBytes`);
  }

  // A delete is all or nothing too: the row goes exactly when its DELETED version arrives,
  // and only a restore's CREATED version may follow a DELETED version (a re-created path
  // gets a new memory id).
  const liveIds = new Set(live.map((memory) => memory.id));
  for (const [memoryId, version] of newest) {
    if (version.operation !== 'deleted' && !liveIds.has(memoryId)) problems.push(`${memoryId}: not live, but its newest version is ${version.operation.toUpperCase()}`);
  }
  const byPlace = new Map(versions.map((version) => [`${version.memoryId}#${version.sequence}`, version]));
  for (const version of versions) {
    const next = byPlace.get(`${version.memoryId}#${version.sequence + 1}`);
    if (version.operation === 'deleted' && next && (next.operation !== 'created' || next.restoredFromVersionId === null)) {
      problems.push(`${version.memoryId}: a ${next.operation.toUpperCase()} version that is not a restore after its DELETED version`);
    }
    if (version.sequence > 1 && version.operation === 'created' && byPlace.get(`${version.memoryId}#${version.sequence - 1}`)?.operation !== 'deleted') {
      problems.push(`${version.memoryId}: CREATED version ${version.sequence} does not follow a DELETED one`);
    }
  }

  // Every folder above a live memory has its row, counting exactly what lies below it; no other folder has one.
  const expectedFolders = new Map<string, { parent: string; name: string; memoryCount: number; totalSize: number; updatedAt: number }>();
  for (const memory of live) {
    let parent = '';
    for (let cut = memory.path.indexOf('/'); cut >= 0; cut = memory.path.indexOf('/', cut + 1)) {
      const folder = memory.path.slice(0, cut + 1);
      const key = `${memory.memoryStoreId} ${folder}`;
      const entry = expectedFolders.get(key) ?? { parent, name: folder.slice(parent.length, -1), memoryCount: 0, totalSize: 0, updatedAt: 0 };
      entry.memoryCount += 1;
      entry.totalSize += memory.contentSizeBytes;
      entry.updatedAt = Math.max(entry.updatedAt, memory.updatedAt.getTime());
      expectedFolders.set(key, entry);
      parent = folder;
    }
  }
  const folderRows = await db.select().from(memoryFolders).where(eq(memoryFolders.workspaceId, workspaceId));
  const actualFolders = new Map(
    folderRows.map((row) => [`${row.memoryStoreId} ${row.path}`, { parent: row.parent, name: row.name, memoryCount: row.memoryCount, totalSize: row.totalSize, updatedAt: row.updatedAt.getTime() }]),
  );
  for (const [key, expected] of expectedFolders) {
    const actual = actualFolders.get(key);
    if (!actual) problems.push(`folder ${key}: no row`);
    else if (JSON.stringify(actual) !== JSON.stringify(expected)) problems.push(`folder ${key}: ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
  }
  for (const key of actualFolders.keys()) if (!expectedFolders.has(key)) problems.push(`folder ${key}: a row, but no memory below it`);

  const sequences = new Map<string, number[]>();
  for (const version of versions) sequences.set(version.memoryId, [...(sequences.get(version.memoryId) ?? []), version.sequence]);
  for (const [memoryId, numbers] of sequences) {
    const sorted = [...numbers].sort((a, b) => a - b);
    if (sorted.some((number, index) => number !== index + 1)) problems.push(`${memoryId}: version sequence ${sorted.join(',')} has gaps`);
  }
  return problems;
}
