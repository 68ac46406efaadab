import { createHash } from 'node:crypto';
import { and, count, eq, getTableColumns, gte, lt, ne, sql, type SQL } from 'drizzle-orm';
import { anyOf } from '../db/sql.js';
import type { Database } from '../db/client.js';
import { memories, memoryStores, memoryVersions } from '../db/schema.js';
import { ConflictError, NotFoundError, PreconditionFailedError } from './errors.js';
import { isIdOfKind, newId } from './ids.js';
import { MEMORY_METADATA_MAX_KEYS } from './limits.js';
import { fetchPagesByParent, type KeysetList, type Page, type PageWindow } from './pagination.js';
import { checkContent, checkMetadata, checkPath, checkSha256, isStorableText, IssueList } from './validation.js';
import type { Writer } from './viewer.js';
import { actorColumns, versionValuesFor, type MemoryVersionRecord } from './versions.js';

export type MemoryRecord = typeof memories.$inferSelect;
/** A memory as lists load it: without its content (which `content` loads when selected). */
export type MemorySummary = Omit<MemoryRecord, 'content'> & { content?: string };

export type MemoryOrder = 'PATH_ASC' | 'PATH_DESC' | 'UPDATED_AT_DESC' | 'CREATED_AT_DESC';

const { content: _content, ...summaryColumns } = getTableColumns(memories);

/** The four orders of MemoryStore.memories; each key is unique within a store. */
export const MEMORY_LISTS: Record<MemoryOrder, KeysetList<MemorySummary>> = {
  PATH_ASC: { table: memories, columns: summaryColumns, ordering: { columns: [memories.path], direction: 'asc', keyOf: (memory) => [memory.path] } },
  PATH_DESC: { table: memories, columns: summaryColumns, ordering: { columns: [memories.path], direction: 'desc', keyOf: (memory) => [memory.path] } },
  UPDATED_AT_DESC: {
    table: memories,
    columns: summaryColumns,
    ordering: { columns: [memories.updatedAt, memories.id], direction: 'desc', keyOf: (memory) => [memory.updatedAt, memory.id] },
  },
  CREATED_AT_DESC: {
    table: memories,
    columns: summaryColumns,
    ordering: { columns: [memories.createdAt, memories.id], direction: 'desc', keyOf: (memory) => [memory.createdAt, memory.id] },
  },
};

export function sha256Hex(content: string): string {
  return createHash('sha256').update(content, 'utf8').digest('hex');
}

const inWorkspace = (workspaceId: string) => eq(memories.workspaceId, workspaceId);
const memoryById = (workspaceId: string, id: string) => and(inWorkspace(workspaceId), eq(memories.id, id));

function memoryNotFound(id: string): NotFoundError {
  return new NotFoundError(`No memory with id "${id}".`);
}

function storeNotFound(id: string): NotFoundError {
  return new NotFoundError(`No memory store with id "${id}".`);
}

// ---------------------------------------------------------------------------------------
// Reads

export async function loadMemoriesByIds(db: Database, workspaceId: string, ids: readonly string[]): Promise<MemoryRecord[]> {
  const wellFormed = ids.filter((id) => isIdOfKind(id, 'memory'));
  if (wellFormed.length === 0) return [];
  return db.select().from(memories).where(and(inWorkspace(workspaceId), anyOf(memories.id, wellFormed)));
}

/** The live memories at these (store, path) pairs, in one statement. */
export async function loadMemoriesByPath(
  db: Database,
  workspaceId: string,
  keys: readonly { memoryStoreId: string; path: string }[],
): Promise<MemoryRecord[]> {
  // NUL and lone surrogates cannot even be sent to PostgreSQL; no stored path holds them.
  const valid = keys.filter((key) => isStorableText(key.path));
  if (valid.length === 0) return [];
  return db
    .select()
    .from(memories)
    .where(
      and(
        inWorkspace(workspaceId),
        sql`(${memories.memoryStoreId}, ${memories.path}) in (select * from unnest(${sql.param(valid.map((key) => key.memoryStoreId))}::text[], ${sql.param(valid.map((key) => key.path))}::text[]))`,
      ),
    );
}

export async function loadMemoryContents(db: Database, workspaceId: string, ids: readonly string[]): Promise<Map<string, string>> {
  const rows = await db
    .select({ id: memories.id, content: memories.content })
    .from(memories)
    .where(and(inWorkspace(workspaceId), anyOf(memories.id, [...ids])));
  return new Map(rows.map((row) => [row.id, row.content]));
}

/**
 * The smallest string greater than every string that starts with `prefix`, in code-point
 * order; null when there is none. Turns a prefix into an index range.
 */
export function prefixUpperBound(prefix: string): string | null {
  const codePoints = [...prefix].map((character) => character.codePointAt(0)!);
  while (codePoints.length > 0) {
    const last = codePoints.pop()!;
    if (last < 0x10ffff) {
      codePoints.push(last + 1 === 0xd800 ? 0xe000 : last + 1);
      return String.fromCodePoint(...codePoints);
    }
  }
  return null;
}

/**
 * `pathPrefix` as a plain string prefix, written as a range on the path index. A prefix
 * no path can have (NUL, lone surrogates) matches nothing.
 */
export function pathPrefixFilter(prefix: string | undefined): SQL | undefined | false {
  if (prefix === undefined || prefix === '') return undefined;
  if (!prefix.isWellFormed() || prefix.includes('\u0000')) return false;
  const upper = prefixUpperBound(prefix);
  return upper === null ? gte(memories.path, prefix) : and(gte(memories.path, prefix), lt(memories.path, upper));
}

export interface MemoryListFilter {
  pathPrefix?: string;
}

export async function listMemoriesByStore(
  db: Database,
  workspaceId: string,
  storeIds: readonly string[],
  order: MemoryOrder,
  filter: MemoryListFilter,
  window: PageWindow,
): Promise<Map<string, Page<MemorySummary>>> {
  const prefix = pathPrefixFilter(filter.pathPrefix);
  if (prefix === false) return new Map(storeIds.map((id) => [id, { rows: [], hasNextPage: false, hasPreviousPage: false }]));
  return fetchPagesByParent(db, MEMORY_LISTS[order], memories.memoryStoreId, storeIds, window, and(inWorkspace(workspaceId), prefix));
}

/**
 * Whether a store's entryCount, kept exact with every write, is the count of this list: it
 * is without a path prefix. Resolvers, compiled reads and the cost model follow this one rule.
 */
export function isMemoryCountKept(filter: MemoryListFilter): boolean {
  return filter.pathPrefix === undefined || filter.pathPrefix === '';
}

export async function countMemoriesByStore(
  db: Database,
  workspaceId: string,
  storeIds: readonly string[],
  filter: MemoryListFilter,
): Promise<Map<string, number>> {
  const counts = new Map(storeIds.map((id) => [id, 0]));
  const prefix = pathPrefixFilter(filter.pathPrefix);
  if (prefix === false || storeIds.length === 0) return counts;
  const rows = await db
    .select({ memoryStoreId: memories.memoryStoreId, total: count() })
    .from(memories)
    .where(and(inWorkspace(workspaceId), anyOf(memories.memoryStoreId, [...storeIds]), prefix))
    .groupBy(memories.memoryStoreId);
  for (const row of rows) counts.set(row.memoryStoreId, row.total);
  return counts;
}

// ---------------------------------------------------------------------------------------
// Writes: each is one transaction that first locks the store row. Every memory write of a
// store therefore runs one after another, which keeps the store's counters, the unique
// live path and each memory's version sequence exact without retries. Once the state is
// known, a write's statements (memory, version, counters) go out together: postgres.js
// pipelines them on the transaction's connection, one round trip for all.

/** Locks the store for this transaction; refuses missing and archived stores. */
async function lockActiveStore(tx: Database, workspaceId: string, memoryStoreId: string): Promise<void> {
  const [store] = await tx
    .select({ status: memoryStores.status })
    .from(memoryStores)
    .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, memoryStoreId)))
    .for('update');
  if (!store) throw storeNotFound(memoryStoreId);
  assertStoreWritable(store.status);
}

function assertStoreWritable(status: string): void {
  if (status === 'archived') throw new ConflictError('The memory store is archived: its memories cannot be changed.');
}

async function adjustStoreCounters(tx: Database, workspaceId: string, memoryStoreId: string, entries: number, bytes: number): Promise<void> {
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
async function lockMemory(tx: Database, workspaceId: string, id: string): Promise<MemoryRecord> {
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
async function together<T extends readonly unknown[]>(statements: { [K in keyof T]: PromiseLike<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(statements as readonly PromiseLike<unknown>[]);
  const failure = settled.find((outcome) => outcome.status === 'rejected');
  if (failure) throw (failure as PromiseRejectedResult).reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/**
 * A version's time: the request's clock, but never before the memory's previous version,
 * so that each memory's history reads forward even when a request waited for the lock.
 */
function versionTime(now: Date, previous?: Date): Date {
  return previous && previous > now ? previous : now;
}

function checkMemoryMetadata(issues: IssueList, metadata: Record<string, unknown>): void {
  checkMetadata(issues, ['metadata'], metadata, { maxKeys: MEMORY_METADATA_MAX_KEYS });
}

function sameMetadata(left: Record<string, string>, right: Record<string, unknown>): boolean {
  const leftKeys = Object.keys(left);
  return leftKeys.length === Object.keys(right).length && leftKeys.every((key) => Object.hasOwn(right, key) && right[key] === left[key]);
}

/** Inserts a memory and its CREATED version into a store this transaction has locked. */
async function insertMemoryLocked(
  tx: Database,
  writer: Writer,
  memoryStoreId: string,
  fields: { path: string; content: string; metadata: Record<string, string> },
  now: Date,
): Promise<MemoryRecord> {
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
  // All three go together; a taken path inserts no memory, and the error rolls the other two back.
  const [[created]] = await together([
    tx.insert(memories).values(row).onConflictDoNothing({ target: [memories.workspaceId, memories.memoryStoreId, memories.path] }).returning(),
    tx.insert(memoryVersions).values(versionValuesFor(row, 'created', 1, writer, now)),
    adjustStoreCounters(tx, writer.workspaceId, memoryStoreId, 1, contentSizeBytes),
  ] as const);
  if (!created) throw new ConflictError(`A memory already exists at path "${fields.path}" in this store.`);
  return created;
}

function preconditionFailed(currentContentSha256: string): PreconditionFailedError {
  return new PreconditionFailedError('The memory\'s content has changed since the expected version.', currentContentSha256);
}

/**
 * Applies changes to a memory whose store this transaction has locked: writes an UPDATED
 * version with the new state, or nothing when nothing changes. A stale
 * `expectedContentSha256` fails unless the memory already is exactly as requested.
 */
async function updateMemoryLocked(
  tx: Database,
  writer: Writer,
  current: MemoryRecord,
  changes: { content?: string; path?: string; metadata?: Record<string, string> },
  expectedContentSha256: string | undefined,
  now: Date,
): Promise<MemoryRecord> {
  const next = {
    content: changes.content ?? current.content,
    path: changes.path ?? current.path,
    metadata: changes.metadata ?? current.metadata,
  };
  const unchanged = next.content === current.content && next.path === current.path && sameMetadata(current.metadata, next.metadata);
  if (expectedContentSha256 !== undefined && expectedContentSha256 !== current.contentSha256 && !unchanged) {
    throw preconditionFailed(current.contentSha256);
  }
  if (unchanged) return current;

  if (next.path !== current.path) {
    const [taken] = await tx
      .select({ id: memories.id })
      .from(memories)
      .where(and(inWorkspace(writer.workspaceId), eq(memories.memoryStoreId, current.memoryStoreId), eq(memories.path, next.path), ne(memories.id, current.id)));
    if (taken) throw new ConflictError(`A memory already exists at path "${next.path}" in this store.`);
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
  const [[updated]] = await together([
    tx.update(memories).set(state).where(memoryById(writer.workspaceId, current.id)).returning(),
    tx.insert(memoryVersions).values(versionValuesFor({ ...current, ...state }, 'updated', sequence, writer, updatedAt)),
    adjustStoreCounters(tx, writer.workspaceId, current.memoryStoreId, 0, contentSizeBytes - current.contentSizeBytes),
  ] as const);
  return updated!;
}

export interface DeletedMemory {
  deletedMemoryId: string;
  version: MemoryVersionRecord;
}

/** Deletes a memory whose store this transaction has locked, writing its DELETED version. */
async function deleteMemoryLocked(
  tx: Database,
  writer: Writer,
  current: MemoryRecord,
  expectedContentSha256: string | undefined,
  now: Date,
): Promise<DeletedMemory> {
  if (expectedContentSha256 !== undefined && expectedContentSha256 !== current.contentSha256) throw preconditionFailed(current.contentSha256);
  const deletedAt = versionTime(now, current.updatedAt);
  // The DELETED version keeps the memory's last state: path, content, size and sha.
  const [, [version]] = await together([
    tx.delete(memories).where(memoryById(writer.workspaceId, current.id)),
    tx.insert(memoryVersions).values(versionValuesFor(current, 'deleted', current.versionSequence + 1, writer, deletedAt)).returning(),
    adjustStoreCounters(tx, writer.workspaceId, current.memoryStoreId, -1, -current.contentSizeBytes),
  ] as const);
  return { deletedMemoryId: current.id, version: version! };
}

/** The live memory at a path of a store this transaction has locked. */
async function memoryAtPathLocked(tx: Database, workspaceId: string, memoryStoreId: string, path: string): Promise<MemoryRecord | undefined> {
  const [memory] = await tx
    .select()
    .from(memories)
    .where(and(inWorkspace(workspaceId), eq(memories.memoryStoreId, memoryStoreId), eq(memories.path, path)));
  return memory;
}

// ---------------------------------------------------------------------------------------
// The common writes in one statement. A new memory, and new content for a memory (with or
// without expectedContentSha256), are what agents send all day. Each is tried first as one
// statement that takes the same locks in the same order as the transactions above — the
// store's row, then the memory's, whose newest version FOR UPDATE reads after any wait —
// and writes memory, version and counters together, atomically. When that statement
// writes nothing (no such memory or store, an archived store, a taken path, a failed or
// already-met precondition, a memory changed in the future of this request's clock), the
// transaction above runs and answers exactly.
//
// Counters are computed from the store row the statement locks (FOR UPDATE returns its
// newest version after any wait), never from the target row as the statement's snapshot
// saw it: PostgreSQL checks constraints on the row computed from the snapshot before its
// read-committed recheck, so a snapshot total plus a freshly locked size could go negative
// and fail a valid write (test/write-counters-race.test.ts).

/** The columns of a memory row as memoryRecordOf reads them. */
const RECORD_COLUMNS = (alias: string) =>
  sql.raw(
    `${alias}.workspace_id, ${alias}.id, ${alias}.memory_store_id, ${alias}.path, ${alias}.content, ${alias}.content_size_bytes, ` +
      `${alias}.content_sha256, ${alias}.metadata::text as metadata, ${alias}.version_sequence, ` +
      `(extract(epoch from ${alias}.created_at) * 1000)::float8 as created_at, (extract(epoch from ${alias}.updated_at) * 1000)::float8 as updated_at`,
  );

function memoryRecordOf(row: Record<string, unknown>): MemoryRecord {
  return {
    workspaceId: row.workspace_id as string,
    id: row.id as string,
    memoryStoreId: row.memory_store_id as string,
    path: row.path as string,
    content: row.content as string,
    contentSizeBytes: Number(row.content_size_bytes),
    contentSha256: row.content_sha256 as string,
    metadata: JSON.parse(row.metadata as string) as Record<string, string>,
    versionSequence: Number(row.version_sequence),
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
  };
}

/** The rows of `db.execute` on either driver. */
function rowsOf(result: unknown): Record<string, unknown>[] {
  return (Array.isArray(result) ? result : (result as { rows: Record<string, unknown>[] }).rows) as Record<string, unknown>[];
}

async function createMemoryInOneStatement(db: Database, writer: Writer, input: CreateMemoryInput, metadata: Record<string, string>, now: Date): Promise<MemoryRecord | null> {
  const contentSizeBytes = Buffer.byteLength(input.content, 'utf8');
  const at = now.toISOString();
  const author = actorColumns(writer.actor);
  const result = await db.execute(sql`
    with store as (
      select s.id, s.entry_count, s.total_size from memory_stores s
      where s.workspace_id = ${writer.workspaceId} and s.id = ${input.memoryStoreId} and s.status = 'active' for update),
    inserted as (
      insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata, version_sequence, created_at, updated_at)
      select ${writer.workspaceId}, ${newId('memory', now.getTime())}, store.id, ${input.path}::text, ${input.content}::text, ${contentSizeBytes}::int,
        ${sha256Hex(input.content)}::text, ${JSON.stringify(metadata)}::jsonb, 1, ${at}::timestamptz, ${at}::timestamptz from store
      on conflict (workspace_id, memory_store_id, path) do nothing
      returning *),
    version as (
      insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence,
        created_by_api_key_id, created_by_session_id, created_at)
      select workspace_id, ${newId('memoryVersion', now.getTime())}, memory_store_id, id, path, content, content_size_bytes, content_sha256,
        'created'::memory_operation, 1, ${author.apiKeyId}::text, ${author.sessionId}::text, created_at from inserted),
    counters as (
      update memory_stores s set entry_count = store.entry_count + 1, total_size = store.total_size + inserted.content_size_bytes
      from inserted, store where s.workspace_id = inserted.workspace_id and s.id = inserted.memory_store_id)
    select ${RECORD_COLUMNS('inserted')} from inserted`);
  const [row] = rowsOf(result);
  return row ? memoryRecordOf(row) : null;
}

async function updateContentInOneStatement(db: Database, writer: Writer, id: string, content: string, expected: string | undefined, now: Date): Promise<MemoryRecord | null> {
  const at = now.toISOString();
  const author = actorColumns(writer.actor);
  const result = await db.execute(sql`
    with store as (
      select s.id, s.total_size from memory_stores s
      where s.workspace_id = ${writer.workspaceId} and s.status = 'active'
        and s.id = (select m.memory_store_id from memories m where m.workspace_id = ${writer.workspaceId} and m.id = ${id})
      for update),
    previous as (
      select m.* from memories m join store on store.id = m.memory_store_id
      where m.workspace_id = ${writer.workspaceId} and m.id = ${id}
      for update of m),
    updated as (
      update memories m set content = ${content}::text, content_size_bytes = ${Buffer.byteLength(content, 'utf8')}::int,
        content_sha256 = ${sha256Hex(content)}::text, version_sequence = previous.version_sequence + 1, updated_at = ${at}::timestamptz
      from previous
      where m.workspace_id = previous.workspace_id and m.id = previous.id and previous.updated_at <= ${at}::timestamptz
        and (${expected ?? null}::text is null or previous.content_sha256 = ${expected ?? null}::text)
        and previous.content <> ${content}::text
      returning m.*, previous.content_size_bytes as previous_size),
    version as (
      insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence,
        created_by_api_key_id, created_by_session_id, created_at)
      select workspace_id, ${newId('memoryVersion', now.getTime())}, memory_store_id, id, path, content, content_size_bytes, content_sha256,
        'updated'::memory_operation, version_sequence, ${author.apiKeyId}::text, ${author.sessionId}::text, updated_at from updated),
    counters as (
      update memory_stores s set total_size = store.total_size + updated.content_size_bytes - updated.previous_size
      from updated, store where s.workspace_id = updated.workspace_id and s.id = updated.memory_store_id)
    select ${RECORD_COLUMNS('updated')} from updated`);
  const [row] = rowsOf(result);
  return row ? memoryRecordOf(row) : null;
}

const nullRefused = 'must not be null: leave the field out instead';

export interface CreateMemoryInput {
  memoryStoreId: string;
  path: string;
  content: string;
  metadata?: Record<string, unknown> | null;
}

export async function createMemory(db: Database, writer: Writer, input: CreateMemoryInput, now: Date): Promise<MemoryRecord> {
  const issues = new IssueList();
  checkPath(issues, ['path'], input.path);
  checkContent(issues, ['content'], input.content);
  if (input.metadata != null) checkMemoryMetadata(issues, input.metadata);
  issues.throwIfAny();
  if (!isIdOfKind(input.memoryStoreId, 'memoryStore')) throw storeNotFound(input.memoryStoreId);

  const metadata = (input.metadata ?? {}) as Record<string, string>;
  const created = await createMemoryInOneStatement(db, writer, input, metadata, now);
  if (created) return created;
  return db.transaction(async (tx) => {
    await lockActiveStore(tx, writer.workspaceId, input.memoryStoreId);
    return insertMemoryLocked(tx, writer, input.memoryStoreId, { path: input.path, content: input.content, metadata }, now);
  });
}

export interface UpdateMemoryInput {
  id: string;
  /** undefined: keep; null: refused. */
  content?: string | null;
  metadata?: Record<string, unknown> | null;
  path?: string | null;
  expectedContentSha256?: string | null;
}

export async function updateMemory(db: Database, writer: Writer, input: UpdateMemoryInput, now: Date): Promise<MemoryRecord> {
  const issues = new IssueList();
  const fields = ['content', 'metadata', 'path'] as const;
  if (fields.every((field) => input[field] === undefined)) issues.add([], 'Give at least one of content, metadata, path.');
  for (const field of [...fields, 'expectedContentSha256'] as const) {
    if (input[field] === null) issues.add([field], nullRefused);
  }
  if (typeof input.path === 'string') checkPath(issues, ['path'], input.path);
  if (typeof input.content === 'string') checkContent(issues, ['content'], input.content);
  if (input.metadata) checkMemoryMetadata(issues, input.metadata);
  if (typeof input.expectedContentSha256 === 'string') checkSha256(issues, ['expectedContentSha256'], input.expectedContentSha256);
  issues.throwIfAny();
  if (!isIdOfKind(input.id, 'memory')) throw memoryNotFound(input.id);

  if (typeof input.content === 'string' && input.path === undefined && input.metadata === undefined) {
    const updated = await updateContentInOneStatement(db, writer, input.id, input.content, input.expectedContentSha256?.toLowerCase(), now);
    if (updated) return updated;
  }
  return db.transaction(async (tx) => {
    const current = await lockMemory(tx, writer.workspaceId, input.id);
    const changes = {
      content: input.content ?? undefined,
      path: input.path ?? undefined,
      metadata: (input.metadata ?? undefined) as Record<string, string> | undefined,
    };
    return updateMemoryLocked(tx, writer, current, changes, input.expectedContentSha256?.toLowerCase(), now);
  });
}

export interface DeleteMemoryInput {
  id: string;
  expectedContentSha256?: string | null;
}

function checkExpectedSha(issues: IssueList, expectedContentSha256: string | null | undefined): void {
  if (expectedContentSha256 === null) issues.add(['expectedContentSha256'], nullRefused);
  if (typeof expectedContentSha256 === 'string') checkSha256(issues, ['expectedContentSha256'], expectedContentSha256);
}

export async function deleteMemory(db: Database, writer: Writer, input: DeleteMemoryInput, now: Date): Promise<DeletedMemory> {
  const issues = new IssueList();
  checkExpectedSha(issues, input.expectedContentSha256);
  issues.throwIfAny();
  if (!isIdOfKind(input.id, 'memory')) throw memoryNotFound(input.id);

  return db.transaction(async (tx) => {
    const current = await lockMemory(tx, writer.workspaceId, input.id);
    return deleteMemoryLocked(tx, writer, current, input.expectedContentSha256?.toLowerCase(), now);
  });
}

// ---------------------------------------------------------------------------------------
// Writes by path (an agent's writes into its session's default store)

export interface WriteMemoryAtPathInput {
  memoryStoreId: string;
  path: string;
  content: string;
  /** Replaces the memory's metadata on every write. */
  metadata: Record<string, string>;
  expectedContentSha256?: string | null;
}

/**
 * Creates or updates the memory at `path`. With `expectedContentSha256` and no memory at
 * the path, the precondition fails with currentContentSha256 "" (there is no content).
 */
export async function writeMemoryAtPath(db: Database, writer: Writer, input: WriteMemoryAtPathInput, now: Date): Promise<MemoryRecord> {
  const issues = new IssueList();
  checkPath(issues, ['path'], input.path);
  checkContent(issues, ['content'], input.content);
  checkExpectedSha(issues, input.expectedContentSha256);
  issues.throwIfAny();
  const expected = input.expectedContentSha256?.toLowerCase();

  return db.transaction(async (tx) => {
    await lockActiveStore(tx, writer.workspaceId, input.memoryStoreId);
    const current = await memoryAtPathLocked(tx, writer.workspaceId, input.memoryStoreId, input.path);
    if (!current) {
      if (expected !== undefined) throw preconditionFailed('');
      return insertMemoryLocked(tx, writer, input.memoryStoreId, input, now);
    }
    return updateMemoryLocked(tx, writer, current, { content: input.content, metadata: input.metadata }, expected, now);
  });
}

export async function deleteMemoryAtPath(
  db: Database,
  writer: Writer,
  input: { memoryStoreId: string; path: string; expectedContentSha256?: string | null },
  now: Date,
): Promise<DeletedMemory> {
  const issues = new IssueList();
  checkPath(issues, ['path'], input.path);
  checkExpectedSha(issues, input.expectedContentSha256);
  issues.throwIfAny();

  return db.transaction(async (tx) => {
    await lockActiveStore(tx, writer.workspaceId, input.memoryStoreId);
    const current = await memoryAtPathLocked(tx, writer.workspaceId, input.memoryStoreId, input.path);
    if (!current) throw new NotFoundError(`No memory at path "${input.path}".`);
    return deleteMemoryLocked(tx, writer, current, input.expectedContentSha256?.toLowerCase(), now);
  });
}
