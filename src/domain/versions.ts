import { and, count, eq, getTableColumns, gt, isNull, lt, sql, type SQL } from 'drizzle-orm';
import { anyOf } from '../db/sql.js';
import type { Database } from '../db/client.js';
import { memories, memoryStores, memoryVersions } from '../db/schema.js';
import { assertCan } from './access.js';
import { ConflictError, InvalidRequestError, NotFoundError } from './errors.js';
import { recordEvent } from './events.js';
import { isIdOfKind, newId } from './ids.js';
import { fetchPagesByParent, sortKey, type KeysetList, type Page, type PageWindow } from './pagination.js';
import { writerOf, type Actor, type Viewer, type Writer } from './viewer.js';

export type MemoryVersionRecord = typeof memoryVersions.$inferSelect;
/** A version as lists load it: without its content (which `content` loads when selected). */
export type MemoryVersionSummary = Omit<MemoryVersionRecord, 'content'> & { content?: string | null };
export type MemoryOperation = MemoryVersionRecord['operation'];

const { content: _content, ...summaryColumns } = getTableColumns(memoryVersions);

/** Memory.versions: newest first by the memory's own sequence. */
export const VERSIONS_OF_MEMORY: KeysetList<MemoryVersionSummary> = {
  table: memoryVersions,
  columns: summaryColumns,
  ordering: { name: 'memory-versions', keys: [sortKey(memoryVersions.sequence, (version) => version.sequence)], direction: 'desc' },
};

/** MemoryStore.versions: newest first across the store's memories; the id breaks ties. */
export const VERSIONS_OF_STORE: KeysetList<MemoryVersionSummary> = {
  table: memoryVersions,
  columns: summaryColumns,
  ordering: {
    name: 'store-versions',
    keys: [sortKey(memoryVersions.createdAt, (version) => version.createdAt), sortKey(memoryVersions.id, (version) => version.id)],
    direction: 'desc',
  },
};

const inWorkspace = (workspaceId: string) => eq(memoryVersions.workspaceId, workspaceId);

/** The author columns of a version (or of its redaction) for an actor. */
export function actorColumns(actor: Actor) {
  return actor.kind === 'apiKey'
    ? { apiKeyId: actor.apiKeyId, sessionId: null }
    : { apiKeyId: null, sessionId: actor.sessionId };
}

type VersionRow = typeof memoryVersions.$inferInsert;
type MemoryRow = typeof memories.$inferSelect;

/**
 * What a version copies of its memory, column by column (version column, memory column):
 * the one list every way of writing a version follows (versionValuesFor here, and the
 * one-statement writes, which copy the same columns in SQL).
 */
export const MEMORY_STATE_IN_VERSION = [
  ['workspaceId', 'workspaceId'],
  ['memoryStoreId', 'memoryStoreId'],
  ['memoryId', 'id'],
  ['path', 'path'],
  ['content', 'content'],
  ['contentSizeBytes', 'contentSizeBytes'],
  ['contentSha256', 'contentSha256'],
] as const satisfies readonly (readonly [keyof VersionRow, keyof MemoryRow])[];

export type MemoryState = Pick<MemoryRow, (typeof MEMORY_STATE_IN_VERSION)[number][1]>;

/** What a write gives a new version (the columns it does not give are null). */
export type NewVersionRow = Pick<MemoryVersionRecord, (typeof MEMORY_STATE_IN_VERSION)[number][0] | 'id' | 'operation' | 'sequence' | 'createdByApiKeyId' | 'createdBySessionId' | 'createdAt'>;

/**
 * The row of a new version holding the memory's state as given; `id` when the write chose
 * it already (a one-statement write sends it with its statement).
 */
export function versionValuesFor(
  memory: MemoryState,
  operation: MemoryOperation,
  sequence: number,
  writer: Writer,
  createdAt: Date,
  id = newId('memoryVersion', createdAt.getTime()),
): NewVersionRow {
  const author = actorColumns(writer.actor);
  const state = Object.fromEntries(MEMORY_STATE_IN_VERSION.map(([version, source]) => [version, memory[source]])) as Pick<MemoryVersionRecord, (typeof MEMORY_STATE_IN_VERSION)[number][0]>;
  return {
    ...state,
    id,
    operation,
    sequence,
    createdByApiKeyId: author.apiKeyId,
    createdBySessionId: author.sessionId,
    createdAt,
  };
}

/**
 * A version a write has just made, as the version lists and Memory.latestVersion read it
 * back (without its content, not redacted): the write's answer names it without a statement.
 */
export function writtenVersion(row: NewVersionRow, restoredFromVersionId: string | null = null): MemoryVersionSummary {
  const { content: _content, ...summary } = row;
  return { ...summary, restoredFromVersionId, redactedAt: null, redactedByApiKeyId: null, redactedBySessionId: null };
}

// ---------------------------------------------------------------------------------------
// Reads

export async function loadVersionsByIds(db: Database, viewer: Viewer, ids: readonly string[]): Promise<MemoryVersionRecord[]> {
  const wellFormed = ids.filter((id) => isIdOfKind(id, 'memoryVersion'));
  if (wellFormed.length === 0) return [];
  return db.select().from(memoryVersions).where(and(inWorkspace(viewer.workspaceId), anyOf(memoryVersions.id, wellFormed)));
}

export async function loadVersionContents(db: Database, viewer: Viewer, ids: readonly string[]): Promise<Map<string, string | null>> {
  const rows = await db
    .select({ id: memoryVersions.id, content: memoryVersions.content })
    .from(memoryVersions)
    .where(and(inWorkspace(viewer.workspaceId), anyOf(memoryVersions.id, [...ids])));
  return new Map(rows.map((row) => [row.id, row.content]));
}

/**
 * The versions at these (memory, number) places, with their content, in one statement: the
 * previous version a diff starts from.
 */
export async function loadVersionsByNumber(db: Database, viewer: Viewer, keys: readonly { memoryId: string; number: number }[]): Promise<MemoryVersionRecord[]> {
  if (keys.length === 0) return [];
  return db
    .select()
    .from(memoryVersions)
    .where(
      and(
        inWorkspace(viewer.workspaceId),
        sql`(${memoryVersions.memoryId}, ${memoryVersions.sequence}) in (select * from unnest(${sql.param(keys.map((key) => key.memoryId))}::text[], ${sql.param(keys.map((key) => key.number))}::int[]))`,
      ),
    );
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

/** The filter arguments of a version list, as a transport receives them (null: not given). */
export interface VersionFilterArguments {
  operation?: MemoryOperation | null;
  memoryId?: string | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
  apiKeyId?: string | null;
  sessionId?: string | null;
}

const FILTER_ID_KINDS = [
  ['memoryId', 'memory', 'mem_'],
  ['apiKeyId', 'apiKey', 'key_'],
  ['sessionId', 'session', 'sesn_'],
] as const;

/** A version list's filter; ids of the wrong shape are an InvalidRequestError naming the argument. */
export function versionFilterOf(args: VersionFilterArguments): VersionFilter {
  for (const [argument, kind, prefix] of FILTER_ID_KINDS) {
    const id = args[argument];
    if (id != null && !isIdOfKind(id, kind)) {
      const message = `"${argument}" must be a \`${prefix}\` id (got "${id}").`;
      throw new InvalidRequestError([{ field: [argument], message }], message);
    }
  }
  return {
    operation: args.operation ?? undefined,
    memoryId: args.memoryId ?? undefined,
    createdAfter: args.createdAfter ?? undefined,
    createdBefore: args.createdBefore ?? undefined,
    apiKeyId: args.apiKeyId ?? undefined,
    sessionId: args.sessionId ?? undefined,
  };
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
  viewer: Viewer,
  memoryIds: readonly string[],
  filter: VersionFilter,
  window: PageWindow,
): Promise<Map<string, Page<MemoryVersionSummary>>> {
  return fetchPagesByParent(db, VERSIONS_OF_MEMORY, memoryVersions.memoryId, memoryIds, window, versionFilter(viewer.workspaceId, filter));
}

export async function listVersionsByStore(
  db: Database,
  viewer: Viewer,
  storeIds: readonly string[],
  filter: VersionFilter,
  window: PageWindow,
): Promise<Map<string, Page<MemoryVersionSummary>>> {
  return fetchPagesByParent(db, VERSIONS_OF_STORE, memoryVersions.memoryStoreId, storeIds, window, versionFilter(viewer.workspaceId, filter));
}

/** How many versions each parent (a memory or a store) has under the filter, in one statement. */
export async function countVersionsByParent(
  db: Database,
  viewer: Viewer,
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
    .where(and(versionFilter(viewer.workspaceId, filter), anyOf(parentColumn, [...parentIds])))
    .groupBy(parentColumn);
  for (const row of rows) counts.set(row.parentId, row.total);
  return counts;
}

/** The newest version of each memory, in one statement. */
export async function loadLatestVersions(db: Database, viewer: Viewer, memoryIds: readonly string[]): Promise<Map<string, MemoryVersionSummary>> {
  const pages = await listVersionsByMemory(db, viewer, memoryIds, {}, { size: 1, backward: false, after: null, before: null });
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
export async function redactMemoryVersion(db: Database, viewer: Viewer, id: string, now: Date): Promise<MemoryVersionRecord> {
  assertCan(viewer, { type: 'memoryVersions.redact' });
  const writer = writerOf(viewer);
  const notFound = () => new NotFoundError(`No memory version with id "${id}".`);
  if (!isIdOfKind(id, 'memoryVersion')) throw notFound();
  const author = actorColumns(writer.actor);
  const redacted = await db.transaction(async (tx) => {
    // The store's row first, shared: the event's position then follows the store's memory
    // writes, archive and delete in commit order (events.ts).
    const storeOfVersion = tx.select({ memoryStoreId: memoryVersions.memoryStoreId }).from(memoryVersions).where(and(inWorkspace(writer.workspaceId), eq(memoryVersions.id, id)));
    await tx
      .select({ id: memoryStores.id })
      .from(memoryStores)
      .where(and(eq(memoryStores.workspaceId, writer.workspaceId), eq(memoryStores.id, sql`(${storeOfVersion})`)))
      .for('share');
    const [row] = await tx
      .update(memoryVersions)
      .set({ content: null, redactedAt: now, redactedByApiKeyId: author.apiKeyId, redactedBySessionId: author.sessionId })
      .where(and(inWorkspace(writer.workspaceId), eq(memoryVersions.id, id), isNull(memoryVersions.redactedAt)))
      .returning();
    if (row) {
      await recordEvent(tx, {
        workspaceId: writer.workspaceId,
        kind: 'version_redacted',
        memoryStoreId: row.memoryStoreId,
        memoryId: row.memoryId,
        memoryVersionId: row.id,
        path: row.path,
        occurredAt: now,
      });
    }
    return row;
  });
  if (redacted) return redacted;
  const [existing] = await db
    .select({ id: memoryVersions.id })
    .from(memoryVersions)
    .where(and(inWorkspace(writer.workspaceId), eq(memoryVersions.id, id)));
  if (!existing) throw notFound();
  throw new ConflictError('The memory version is already redacted.', 'already_redacted');
}
