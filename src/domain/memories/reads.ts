import { and, count, desc, eq, gte, lt, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { memories, memoryVersions } from '../../db/schema.js';
import { anyOf } from '../../db/sql.js';
import { isIdOfKind } from '../ids.js';
import { fetchPagesByParent, type Page, type PageWindow } from '../pagination.js';
import { PATH_MAX_BYTES } from '../limits.js';
import { isStorableText, utf8Bytes } from '../validation.js';
import type { Viewer } from '../viewer.js';
import { MEMORY_LISTS, type MemoryOrder, type MemoryRecord, type MemorySummary } from './records.js';

const inWorkspace = (viewer: Viewer) => eq(memories.workspaceId, viewer.workspaceId);

export async function loadMemoriesByIds(db: Database, viewer: Viewer, ids: readonly string[]): Promise<MemoryRecord[]> {
  const wellFormed = ids.filter((id) => isIdOfKind(id, 'memory'));
  if (wellFormed.length === 0) return [];
  return db.select().from(memories).where(and(inWorkspace(viewer), anyOf(memories.id, wellFormed)));
}

/** The live memories at these (store, path) pairs, in one statement. */
export async function loadMemoriesByPath(db: Database, viewer: Viewer, keys: readonly { memoryStoreId: string; path: string }[]): Promise<MemoryRecord[]> {
  // NUL and lone surrogates cannot even be sent to PostgreSQL; no stored path holds them.
  const valid = keys.filter((key) => isIdOfKind(key.memoryStoreId, 'memoryStore') && isStorableText(key.path));
  if (valid.length === 0) return [];
  return db
    .select()
    .from(memories)
    .where(
      and(
        inWorkspace(viewer),
        sql`(${memories.memoryStoreId}, ${memories.path}) in (select * from unnest(${sql.param(valid.map((key) => key.memoryStoreId))}::text[], ${sql.param(valid.map((key) => key.path))}::text[]))`,
      ),
    );
}

export async function loadMemoryContents(db: Database, viewer: Viewer, ids: readonly string[]): Promise<Map<string, string>> {
  const rows = await db
    .select({ id: memories.id, content: memories.content })
    .from(memories)
    .where(and(inWorkspace(viewer), anyOf(memories.id, [...ids])));
  return new Map(rows.map((row) => [row.id, row.content]));
}

/**
 * The smallest string greater than every string that starts with `prefix`, in code-point
 * order; null when there is none. Turns a prefix into an index range.
 */
export function prefixUpperBound(prefix: string): string | null {
  // From the end: the last code point that has a successor takes it, and what follows it goes.
  for (let end = prefix.length; end > 0; ) {
    // The last code point begins one unit back, or two when those two are a surrogate pair.
    const start = end >= 2 && prefix.codePointAt(end - 2)! > 0xffff ? end - 2 : end - 1;
    const last = prefix.codePointAt(start)!;
    if (last < 0x10ffff) return prefix.slice(0, start) + String.fromCodePoint(last + 1 === 0xd800 ? 0xe000 : last + 1);
    end = start;
  }
  return null;
}

/**
 * `pathPrefix` as a range of paths, the one rule every path to the data follows: every path
 * (no prefix), none (a prefix no path can have: NUL, lone surrogates, more than PATH_MAX_BYTES), or the paths from
 * `from` up to but not including `below` (null: no upper end).
 */
export type PathRange = { kind: 'all' } | { kind: 'none' } | { kind: 'range'; from: string; below: string | null };

export function pathPrefixRange(prefix: string | undefined): PathRange {
  if (prefix === undefined || prefix === '') return { kind: 'all' };
  // Longer than any path, or not text a path can hold: no path has it.
  if (utf8Bytes(prefix) > PATH_MAX_BYTES || !isStorableText(prefix)) return { kind: 'none' };
  return { kind: 'range', from: prefix, below: prefixUpperBound(prefix) };
}

/** `pathPrefix` as a condition on the path index; false when nothing can match. */
export function pathPrefixFilter(prefix: string | undefined): SQL | undefined | false {
  const range = pathPrefixRange(prefix);
  if (range.kind === 'all') return undefined;
  if (range.kind === 'none') return false;
  return range.below === null ? gte(memories.path, range.from) : and(gte(memories.path, range.from), lt(memories.path, range.below));
}

export interface MemoryListFilter {
  pathPrefix?: string;
}

export async function listMemoriesByStore(
  db: Database,
  viewer: Viewer,
  storeIds: readonly string[],
  order: MemoryOrder,
  filter: MemoryListFilter,
  window: PageWindow,
): Promise<Map<string, Page<MemorySummary>>> {
  const prefix = pathPrefixFilter(filter.pathPrefix);
  if (prefix === false) return new Map(storeIds.map((id) => [id, { rows: [], hasNextPage: false, hasPreviousPage: false }]));
  return fetchPagesByParent(db, MEMORY_LISTS[order], memories.memoryStoreId, storeIds, window, and(inWorkspace(viewer), prefix));
}

/**
 * Whether a store's entryCount, kept exact with every write, is the count of this list: it
 * is without a path prefix. Resolvers, compiled reads and the cost model follow this one rule.
 */
export function isMemoryCountKept(filter: MemoryListFilter): boolean {
  return pathPrefixRange(filter.pathPrefix).kind === 'all';
}

export async function countMemoriesByStore(db: Database, viewer: Viewer, storeIds: readonly string[], filter: MemoryListFilter): Promise<Map<string, number>> {
  const counts = new Map(storeIds.map((id) => [id, 0]));
  const prefix = pathPrefixFilter(filter.pathPrefix);
  if (prefix === false || storeIds.length === 0) return counts;
  const rows = await db
    .select({ memoryStoreId: memories.memoryStoreId, total: count() })
    .from(memories)
    .where(and(inWorkspace(viewer), anyOf(memories.memoryStoreId, [...storeIds]), prefix))
    .groupBy(memories.memoryStoreId);
  for (const row of rows) counts.set(row.memoryStoreId, row.total);
  return counts;
}

/**
 * Where memory `id` stands in its store's path order: its live path, or — once deleted —
 * the last path its newest version remembers. Null when the store never held it. An
 * id-keyed page (the Forward REST API's `after_id`) can so start from a deleted memory.
 */
export async function lastPathOfMemory(db: Database, viewer: Viewer, storeId: string, id: string): Promise<string | null> {
  if (!isIdOfKind(id, 'memory')) return null;
  const [memory] = await loadMemoriesByIds(db, viewer, [id]);
  if (memory) return memory.memoryStoreId === storeId ? memory.path : null;
  const [newest] = await db
    .select({ path: memoryVersions.path })
    .from(memoryVersions)
    .where(and(eq(memoryVersions.workspaceId, viewer.workspaceId), eq(memoryVersions.memoryStoreId, storeId), eq(memoryVersions.memoryId, id)))
    .orderBy(desc(memoryVersions.sequence))
    .limit(1);
  return newest?.path ?? null;
}
