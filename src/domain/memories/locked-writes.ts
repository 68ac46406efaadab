import { and, eq, ne, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { memories, memoryStores, memoryVersions } from '../../db/schema.js';
import { ConflictError, PreconditionFailedError } from '../errors.js';
import { recordEvent } from '../events.js';
import { newId } from '../ids.js';
import { versionValuesFor, writtenVersion } from '../versions.js';
import type { Writer } from '../viewer.js';
import { memoryNotFound, sha256Hex, storeNotFound, type DeletedMemory, type MemoryRecord, type WrittenMemory } from './records.js';

const inWorkspace = (workspaceId: string) => eq(memories.workspaceId, workspaceId);
const memoryById = (workspaceId: string, id: string) => and(inWorkspace(workspaceId), eq(memories.id, id));

// Memory writes in a transaction: each first locks the store row. Every memory write of a
// store therefore runs one after another, which keeps the store's counters, the unique
// live path and each memory's version sequence exact without retries. Once the state is
// known, a write's statements (memory, version, counters) go out together: postgres.js
// pipelines them on the transaction's connection, one round trip for all.

/** Locks the store for this transaction; refuses missing and archived stores. */
export async function lockActiveStore(tx: Database, workspaceId: string, memoryStoreId: string): Promise<void> {
  const [store] = await tx
    .select({ status: memoryStores.status })
    .from(memoryStores)
    .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, memoryStoreId)))
    .for('update');
  if (!store) throw storeNotFound(memoryStoreId);
  assertStoreWritable(store.status);
}

function assertStoreWritable(status: string): void {
  if (status === 'archived') throw new ConflictError('The memory store is archived: its memories cannot be changed.', 'store_archived');
}

export async function adjustStoreCounters(tx: Database, workspaceId: string, memoryStoreId: string, entries: number, bytes: number): Promise<void> {
  if (entries === 0 && bytes === 0) return;
  await tx
    .update(memoryStores)
    .set({ entryCount: sql`${memoryStores.entryCount} + ${entries}`, totalSize: sql`${memoryStores.totalSize} + ${bytes}` })
    .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, memoryStoreId)));
}

/**
 * Locks the memory's store (found through the memory: a memory never changes stores), then
 * reads the memory under the lock, in a statement of its own: a statement that waited for
 * the lock would still see the memory as it was before the wait.
 */
export async function lockMemory(tx: Database, workspaceId: string, id: string): Promise<MemoryRecord> {
  const storeOfMemory = tx.select({ memoryStoreId: memories.memoryStoreId }).from(memories).where(memoryById(workspaceId, id));
  const [store] = await tx
    .select({ status: memoryStores.status })
    .from(memoryStores)
    .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, sql`(${storeOfMemory})`)))
    .for('update');
  // The store of an existing memory always exists: no row means no such memory.
  if (!store) throw memoryNotFound(id);
  assertStoreWritable(store.status);
  const [memory] = await tx.select().from(memories).where(memoryById(workspaceId, id));
  if (!memory) throw memoryNotFound(id);
  return memory;
}

/**
 * Runs a write's statements together (pipelined on PostgreSQL) and waits for all of them,
 * so that none is left running when the first failure rolls the transaction back.
 */
export async function together<T extends readonly unknown[]>(statements: { [K in keyof T]: PromiseLike<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(statements as readonly PromiseLike<unknown>[]);
  const failure = settled.find((outcome) => outcome.status === 'rejected');
  if (failure) throw (failure as PromiseRejectedResult).reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/**
 * A version's time: the request's clock, but never before the memory's previous version,
 * so that each memory's history reads forward even when a request waited for the lock.
 */
export function versionTime(now: Date, previous?: Date): Date {
  return previous && previous > now ? previous : now;
}

function sameMetadata(left: Record<string, string>, right: Record<string, unknown>): boolean {
  const leftKeys = Object.keys(left);
  return leftKeys.length === Object.keys(right).length && leftKeys.every((key) => Object.hasOwn(right, key) && right[key] === left[key]);
}

/** Inserts a memory and its CREATED version into a store this transaction has locked. */
export async function insertMemoryLocked(
  tx: Database,
  writer: Writer,
  memoryStoreId: string,
  fields: { path: string; content: string; metadata: Record<string, string> },
  now: Date,
): Promise<WrittenMemory> {
  const contentSizeBytes = Buffer.byteLength(fields.content, 'utf8');
  const row = {
    workspaceId: writer.workspaceId,
    id: newId('memory', now.getTime()),
    memoryStoreId,
    path: fields.path,
    content: fields.content,
    contentSizeBytes,
    contentSha256: sha256Hex(fields.content),
    metadata: fields.metadata,
    versionSequence: 1,
    createdAt: now,
    updatedAt: now,
  };
  const version = versionValuesFor(row, 'created', 1, writer, now);
  // All four go together; a taken path inserts no memory, and the error rolls the others back.
  const [[created]] = await together([
    tx.insert(memories).values(row).onConflictDoNothing({ target: [memories.workspaceId, memories.memoryStoreId, memories.path] }).returning(),
    tx.insert(memoryVersions).values(version),
    adjustStoreCounters(tx, writer.workspaceId, memoryStoreId, 1, contentSizeBytes),
    recordEvent(tx, { workspaceId: writer.workspaceId, kind: 'memory_created', memoryStoreId, memoryId: row.id, memoryVersionId: version.id, path: row.path, occurredAt: now }),
  ] as const);
  if (!created) throw new ConflictError(`A memory already exists at path "${fields.path}" in this store.`, 'path_conflict');
  return { memory: created, version: writtenVersion(version) };
}

export function preconditionFailed(currentContentSha256: string): PreconditionFailedError {
  return new PreconditionFailedError('The memory\'s content has changed since the expected version.', currentContentSha256);
}

/**
 * Applies changes to a memory whose store this transaction has locked: writes an UPDATED
 * version with the new state, or nothing when nothing changes. A stale
 * `expectedContentSha256` fails unless the memory already is exactly as requested.
 */
export async function updateMemoryLocked(
  tx: Database,
  writer: Writer,
  current: MemoryRecord,
  changes: { content?: string; path?: string; metadata?: Record<string, string> },
  expectedContentSha256: string | undefined,
  now: Date,
  /** Set by restoreMemoryVersion: the version whose content this write brings back. */
  restoredFromVersionId: string | null = null,
): Promise<WrittenMemory> {
  const next = {
    content: changes.content ?? current.content,
    path: changes.path ?? current.path,
    metadata: changes.metadata ?? current.metadata,
  };
  const unchanged = next.content === current.content && next.path === current.path && sameMetadata(current.metadata, next.metadata);
  if (expectedContentSha256 !== undefined && expectedContentSha256 !== current.contentSha256 && !unchanged) {
    throw preconditionFailed(current.contentSha256);
  }
  if (unchanged) return { memory: current, version: null };

  if (next.path !== current.path) {
    const [taken] = await tx
      .select({ id: memories.id })
      .from(memories)
      .where(and(inWorkspace(writer.workspaceId), eq(memories.memoryStoreId, current.memoryStoreId), eq(memories.path, next.path), ne(memories.id, current.id)));
    if (taken) throw new ConflictError(`A memory already exists at path "${next.path}" in this store.`, 'path_conflict');
  }
  const contentSizeBytes = Buffer.byteLength(next.content, 'utf8');
  const updatedAt = versionTime(now, current.updatedAt);
  const sequence = current.versionSequence + 1;
  const state = {
    path: next.path,
    content: next.content,
    contentSizeBytes,
    contentSha256: next.content === current.content ? current.contentSha256 : sha256Hex(next.content),
    metadata: next.metadata,
    versionSequence: sequence,
    updatedAt,
  };
  const version = versionValuesFor({ ...current, ...state }, 'updated', sequence, writer, updatedAt);
  const [[updated]] = await together([
    tx.update(memories).set(state).where(memoryById(writer.workspaceId, current.id)).returning(),
    tx.insert(memoryVersions).values({ ...version, restoredFromVersionId }),
    adjustStoreCounters(tx, writer.workspaceId, current.memoryStoreId, 0, contentSizeBytes - current.contentSizeBytes),
    recordEvent(tx, {
      workspaceId: writer.workspaceId,
      kind: 'memory_updated',
      memoryStoreId: current.memoryStoreId,
      memoryId: current.id,
      memoryVersionId: version.id,
      path: next.path,
      previousPath: next.path === current.path ? null : current.path,
      occurredAt: updatedAt,
    }),
  ] as const);
  return { memory: updated!, version: writtenVersion(version, restoredFromVersionId) };
}

/** Deletes a memory whose store this transaction has locked, writing its DELETED version. */
export async function deleteMemoryLocked(
  tx: Database,
  writer: Writer,
  current: MemoryRecord,
  expectedContentSha256: string | undefined,
  now: Date,
): Promise<DeletedMemory> {
  if (expectedContentSha256 !== undefined && expectedContentSha256 !== current.contentSha256) throw preconditionFailed(current.contentSha256);
  const deletedAt = versionTime(now, current.updatedAt);
  // The DELETED version keeps the memory's last state: path, content, size and sha.
  const values = versionValuesFor(current, 'deleted', current.versionSequence + 1, writer, deletedAt);
  const [, [version]] = await together([
    tx.delete(memories).where(memoryById(writer.workspaceId, current.id)),
    tx.insert(memoryVersions).values(values).returning(),
    adjustStoreCounters(tx, writer.workspaceId, current.memoryStoreId, -1, -current.contentSizeBytes),
    recordEvent(tx, {
      workspaceId: writer.workspaceId,
      kind: 'memory_deleted',
      memoryStoreId: current.memoryStoreId,
      memoryId: current.id,
      memoryVersionId: values.id,
      path: current.path,
      occurredAt: deletedAt,
    }),
  ] as const);
  return { deletedMemoryId: current.id, version: version! };
}

/** The live memory at a path of a store this transaction has locked. */
export async function memoryAtPathLocked(tx: Database, workspaceId: string, memoryStoreId: string, path: string): Promise<MemoryRecord | undefined> {
  const [memory] = await tx
    .select()
    .from(memories)
    .where(and(inWorkspace(workspaceId), eq(memories.memoryStoreId, memoryStoreId), eq(memories.path, path)));
  return memory;
}

