import { and, count, eq, getTableColumns, gt, isNull, lt, type SQL } from 'drizzle-orm';
import { anyOf } from '../db/sql.js';
import type { Database } from '../db/client.js';
import { memoryVersions } from '../db/schema.js';
import { ConflictError, NotFoundError } from './errors.js';
import { isIdOfKind, newId } from './ids.js';
import { fetchPagesByParent, type KeysetList, type Page, type PageWindow } from './pagination.js';
import type { Actor, Writer } from './viewer.js';

export type MemoryVersionRecord = typeof memoryVersions.$inferSelect;
/** A version as lists load it: without its content (which `content` loads when selected). */
export type MemoryVersionSummary = Omit<MemoryVersionRecord, 'content'> & { content?: string | null };
export type MemoryOperation = MemoryVersionRecord['operation'];

const { content: _content, ...summaryColumns } = getTableColumns(memoryVersions);

/** Memory.versions: newest first by the memory's own sequence. */
export const VERSIONS_OF_MEMORY: KeysetList<MemoryVersionSummary> = {
  table: memoryVersions,
  columns: summaryColumns,
  ordering: { columns: [memoryVersions.sequence], direction: 'desc', keyOf: (version) => [version.sequence] },
};

/** MemoryStore.versions: newest first across the store's memories; the id breaks ties. */
export const VERSIONS_OF_STORE: KeysetList<MemoryVersionSummary> = {
  table: memoryVersions,
  columns: summaryColumns,
  ordering: {
    columns: [memoryVersions.createdAt, memoryVersions.id],
    direction: 'desc',
    keyOf: (version) => [version.createdAt, version.id],
  },
};

const inWorkspace = (workspaceId: string) => eq(memoryVersions.workspaceId, workspaceId);

/** The author columns of a version (or of its redaction) for an actor. */
export function actorColumns(actor: Actor) {
  return actor.kind === 'apiKey'
    ? { apiKeyId: actor.apiKeyId, sessionId: null }
    : { apiKeyId: null, sessionId: actor.sessionId };
}

/** The row of a new version holding the memory's state as given. */
export function versionValuesFor(
  memory: { workspaceId: string; id: string; memoryStoreId: string; path: string; content: string; contentSizeBytes: number; contentSha256: string },
  operation: MemoryOperation,
  sequence: number,
  writer: Writer,
  createdAt: Date,
): typeof memoryVersions.$inferInsert {
  const author = actorColumns(writer.actor);
  return {
    workspaceId: memory.workspaceId,
    id: newId('memoryVersion', createdAt.getTime()),
    memoryStoreId: memory.memoryStoreId,
    memoryId: memory.id,
    path: memory.path,
    content: memory.content,
    contentSizeBytes: memory.contentSizeBytes,
    contentSha256: memory.contentSha256,
    operation,
    sequence,
    createdByApiKeyId: author.apiKeyId,
    createdBySessionId: author.sessionId,
    createdAt,
  };
}

// ---------------------------------------------------------------------------------------
// Reads

export async function loadVersionsByIds(db: Database, workspaceId: string, ids: readonly string[]): Promise<MemoryVersionRecord[]> {
  const wellFormed = ids.filter((id) => isIdOfKind(id, 'memoryVersion'));
  if (wellFormed.length === 0) return [];
  return db.select().from(memoryVersions).where(and(inWorkspace(workspaceId), anyOf(memoryVersions.id, wellFormed)));
}

export async function loadVersionContents(db: Database, workspaceId: string, ids: readonly string[]): Promise<Map<string, string | null>> {
  const rows = await db
    .select({ id: memoryVersions.id, content: memoryVersions.content })
    .from(memoryVersions)
    .where(and(inWorkspace(workspaceId), anyOf(memoryVersions.id, [...ids])));
  return new Map(rows.map((row) => [row.id, row.content]));
}

export interface VersionFilter {
  operation?: MemoryOperation;
  /** Store lists only. */
  memoryId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  /** Only versions written through this API key / by this session. */
  apiKeyId?: string;
  sessionId?: string;
}

function versionFilter(workspaceId: string, filter: VersionFilter): SQL {
  return and(
    inWorkspace(workspaceId),
    filter.operation === undefined ? undefined : eq(memoryVersions.operation, filter.operation),
    filter.memoryId === undefined ? undefined : eq(memoryVersions.memoryId, filter.memoryId),
    filter.createdAfter === undefined ? undefined : gt(memoryVersions.createdAt, filter.createdAfter),
    filter.createdBefore === undefined ? undefined : lt(memoryVersions.createdAt, filter.createdBefore),
    filter.apiKeyId === undefined ? undefined : eq(memoryVersions.createdByApiKeyId, filter.apiKeyId),
    filter.sessionId === undefined ? undefined : eq(memoryVersions.createdBySessionId, filter.sessionId),
  )!;
}

/**
 * Whether a memory's version sequence (its versions are numbered 1, 2, … without gaps) is
 * the count of its version list: it is without filters. Resolvers, compiled reads and the
 * cost model follow this one rule.
 */
export function isVersionCountKept(filter: Pick<VersionFilter, 'operation' | 'apiKeyId' | 'sessionId'>): boolean {
  return filter.operation === undefined && filter.apiKeyId === undefined && filter.sessionId === undefined;
}

export async function listVersionsByMemory(
  db: Database,
  workspaceId: string,
  memoryIds: readonly string[],
  filter: VersionFilter,
  window: PageWindow,
): Promise<Map<string, Page<MemoryVersionSummary>>> {
  return fetchPagesByParent(db, VERSIONS_OF_MEMORY, memoryVersions.memoryId, memoryIds, window, versionFilter(workspaceId, filter));
}

export async function listVersionsByStore(
  db: Database,
  workspaceId: string,
  storeIds: readonly string[],
  filter: VersionFilter,
  window: PageWindow,
): Promise<Map<string, Page<MemoryVersionSummary>>> {
  return fetchPagesByParent(db, VERSIONS_OF_STORE, memoryVersions.memoryStoreId, storeIds, window, versionFilter(workspaceId, filter));
}

/** How many versions each parent (a memory or a store) has under the filter, in one statement. */
export async function countVersionsByParent(
  db: Database,
  workspaceId: string,
  parent: 'memory' | 'store',
  parentIds: readonly string[],
  filter: VersionFilter,
): Promise<Map<string, number>> {
  const counts = new Map(parentIds.map((id) => [id, 0]));
  if (parentIds.length === 0) return counts;
  const parentColumn = parent === 'memory' ? memoryVersions.memoryId : memoryVersions.memoryStoreId;
  const rows = await db
    .select({ parentId: parentColumn, total: count() })
    .from(memoryVersions)
    .where(and(versionFilter(workspaceId, filter), anyOf(parentColumn, [...parentIds])))
    .groupBy(parentColumn);
  for (const row of rows) counts.set(row.parentId, row.total);
  return counts;
}

/** The newest version of each memory, in one statement. */
export async function loadLatestVersions(db: Database, workspaceId: string, memoryIds: readonly string[]): Promise<Map<string, MemoryVersionSummary>> {
  const pages = await listVersionsByMemory(db, workspaceId, memoryIds, {}, { size: 1, backward: false, after: null, before: null });
  const latest = new Map<string, MemoryVersionSummary>();
  for (const [memoryId, page] of pages) if (page.rows[0]) latest.set(memoryId, page.rows[0]);
  return latest;
}

// ---------------------------------------------------------------------------------------
// Redaction

/**
 * Removes a version's content for good: the column is set to NULL (PostgreSQL reclaims
 * the old row image at its next vacuum). Path, size, sha and operation stay; the live
 * memory is not touched. Allowed on archived stores.
 */
export async function redactMemoryVersion(db: Database, writer: Writer, id: string, now: Date): Promise<MemoryVersionRecord> {
  const notFound = () => new NotFoundError(`No memory version with id "${id}".`);
  if (!isIdOfKind(id, 'memoryVersion')) throw notFound();
  const author = actorColumns(writer.actor);
  const [redacted] = await db
    .update(memoryVersions)
    .set({ content: null, redactedAt: now, redactedByApiKeyId: author.apiKeyId, redactedBySessionId: author.sessionId })
    .where(and(inWorkspace(writer.workspaceId), eq(memoryVersions.id, id), isNull(memoryVersions.redactedAt)))
    .returning();
  if (redacted) return redacted;
  const [existing] = await db
    .select({ id: memoryVersions.id })
    .from(memoryVersions)
    .where(and(inWorkspace(writer.workspaceId), eq(memoryVersions.id, id)));
  if (!existing) throw notFound();
  throw new ConflictError('The memory version is already redacted.');
}
