import { and, asc, count, desc, eq, gt, gte, lt, lte, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { MEMORY_FOLDER_COLUMN, memories, memoryFolders } from '../db/schema.js';
import { InvalidRequestError } from './errors.js';
import { MEMORY_LISTS, type MemorySummary } from './memories/records.js';
import type { KeysetOrdering, KeyValue, Page, PageWindow } from './pagination.js';
import { pathViolations } from './validation.js';
import type { Viewer } from './viewer.js';

/**
 * One folder level of a store, as a file browser shows it (MemoryStore.entries): the folders
 * directly in it, then the memories directly in it, each by name in byte order. Folders come
 * from `memory_folders` (kept by a trigger with every memory write: count, bytes, newest
 * update below each folder), memories from the `folder` column of `memories`; both are read
 * from an index, a page at a time, whatever the size of the store.
 */

export interface MemoryFolderRecord {
  kind: 'folder';
  memoryStoreId: string;
  path: string;
  name: string;
  memoryCount: number;
  totalSize: number;
  updatedAt: Date;
}

export type MemoryEntryRecord = MemoryFolderRecord | (MemorySummary & { kind: 'memory' });

/** An entry's place in the list: folders (slot 0) before memories (slot 1), then the name. */
type EntryKey = [slot: number, name: string];

function entryKey(entry: MemoryEntryRecord, folder: string): EntryKey {
  return entry.kind === 'folder' ? [0, entry.name] : [1, entry.path.slice(folder.length)];
}

/**
 * The order of entries, for cursors: the slot and the name (keys of a union of two tables,
 * so no column of either; the cursor codec only reads their kinds).
 */
export function entryOrdering(folder: string): KeysetOrdering<MemoryEntryRecord> {
  return {
    name: 'entries',
    keys: [
      { column: sql`slot`, kind: 'number', of: (entry) => entryKey(entry, folder)[0] },
      { column: sql`name`, kind: 'string', of: (entry) => entryKey(entry, folder)[1] },
    ],
    direction: 'asc',
  };
}

/** `folder` is "" (the root) or a valid path followed by "/"; anything else is INVALID_REQUEST. */
export function checkFolder(folder: string): void {
  if (folder === '') return;
  const problem = !folder.endsWith('/') ? 'must be "" or a path ending in "/"' : pathViolations(folder.slice(0, -1)).length > 0 ? 'must be "" or a valid path followed by "/"' : null;
  if (problem) throw new InvalidRequestError([{ field: ['folder'], message: problem }], `"folder" ${problem} (got ${JSON.stringify(folder)}).`);
}

const memorySummaryColumns = MEMORY_LISTS.PATH_ASC.columns;

/** The memories column drizzle does not declare (drizzle/0003_memory_folders.sql). */
const memoryFolderColumn = sql`${memories}.${sql.identifier(MEMORY_FOLDER_COLUMN)}`;

type Bound = { key: EntryKey; inclusive: boolean };

/**
 * The entries of one slot beyond `lower` and short of `upper` (keys in list order), `limit`
 * of them from the start (or from the end when `fromEnd`).
 */
async function slotEntries(db: Database, viewer: Viewer, storeId: string, folder: string, slot: 0 | 1, lower: Bound | null, upper: Bound | null, limit: number, fromEnd: boolean): Promise<MemoryEntryRecord[]> {
  // A bound of another slot either excludes the whole slot or does not concern it.
  if (lower && lower.key[0] > slot) return [];
  if (upper && upper.key[0] < slot) return [];
  const lowerName = lower && lower.key[0] === slot ? lower : null;
  const upperName = upper && upper.key[0] === slot ? upper : null;
  if (limit <= 0) return [];
  if (slot === 0) {
    const rows = await db
      .select()
      .from(memoryFolders)
      .where(
        and(
          eq(memoryFolders.workspaceId, viewer.workspaceId),
          eq(memoryFolders.memoryStoreId, storeId),
          eq(memoryFolders.parent, folder),
          lowerName ? (lowerName.inclusive ? gte : gt)(memoryFolders.name, lowerName.key[1]) : undefined,
          upperName ? (upperName.inclusive ? lte : lt)(memoryFolders.name, upperName.key[1]) : undefined,
        ),
      )
      .orderBy(fromEnd ? desc(memoryFolders.name) : asc(memoryFolders.name))
      .limit(limit);
    return rows.map((row) => ({ kind: 'folder', memoryStoreId: row.memoryStoreId, path: row.path, name: row.name, memoryCount: row.memoryCount, totalSize: row.totalSize, updatedAt: row.updatedAt }));
  }
  const rows = await db
    .select(memorySummaryColumns)
    .from(memories)
    .where(
      and(
        eq(memories.workspaceId, viewer.workspaceId),
        eq(memories.memoryStoreId, storeId),
        sql`${memoryFolderColumn} = ${folder}`,
        lowerName ? (lowerName.inclusive ? gte : gt)(memories.path, folder + lowerName.key[1]) : undefined,
        upperName ? (upperName.inclusive ? lte : lt)(memories.path, folder + upperName.key[1]) : undefined,
      ),
    )
    .orderBy(fromEnd ? desc(memories.path) : asc(memories.path))
    .limit(limit);
  return rows.map((row) => ({ ...(row as unknown as MemorySummary), kind: 'memory' as const }));
}

/** Up to `limit` entries between the bounds, in list order, from the start or from the end. */
async function entriesBetween(db: Database, viewer: Viewer, storeId: string, folder: string, lower: Bound | null, upper: Bound | null, limit: number, fromEnd: boolean): Promise<MemoryEntryRecord[]> {
  const slots: (0 | 1)[] = fromEnd ? [1, 0] : [0, 1];
  const found: MemoryEntryRecord[] = [];
  for (const slot of slots) {
    const rows = await slotEntries(db, viewer, storeId, folder, slot, lower, upper, limit - found.length, fromEnd);
    found.push(...rows);
    if (found.length >= limit) break;
  }
  return fromEnd ? found.reverse() : found;
}

const asKey = (values: KeyValue[]): EntryKey => [values[0] as number, values[1] as string];

/** One page of a folder level; the window's cursors are entry keys (entryOrdering). */
export async function listEntries(db: Database, viewer: Viewer, storeId: string, folder: string, window: PageWindow): Promise<Page<MemoryEntryRecord>> {
  checkFolder(folder);
  const after = window.after ? asKey(window.after) : null;
  const before = window.before ? asKey(window.before) : null;
  const lower: Bound | null = after ? { key: after, inclusive: false } : null;
  const upper: Bound | null = before ? { key: before, inclusive: false } : null;
  const rows = await entriesBetween(db, viewer, storeId, folder, lower, upper, window.size + 1, window.backward);
  const more = rows.length > window.size;
  const page = !more ? rows : window.backward ? rows.slice(1) : rows.slice(0, window.size);
  // Whether anything lies on the cursor's other side (the cursor's own entry included).
  const start = window.backward ? before : after;
  const behind = start
    ? (await entriesBetween(db, viewer, storeId, folder, window.backward ? { key: start, inclusive: true } : null, window.backward ? null : { key: start, inclusive: true }, 1, !window.backward)).length > 0
    : false;
  return {
    rows: page,
    hasNextPage: window.backward ? behind : more,
    hasPreviousPage: window.backward ? more : behind,
  };
}

/** How many folders and memories lie directly in the folder. */
export async function countEntries(db: Database, viewer: Viewer, storeId: string, folder: string): Promise<number> {
  checkFolder(folder);
  const [[folders], [direct]] = await Promise.all([
    db
      .select({ total: count() })
      .from(memoryFolders)
      .where(and(eq(memoryFolders.workspaceId, viewer.workspaceId), eq(memoryFolders.memoryStoreId, storeId), eq(memoryFolders.parent, folder))),
    db
      .select({ total: count() })
      .from(memories)
      .where(and(eq(memories.workspaceId, viewer.workspaceId), eq(memories.memoryStoreId, storeId), sql`${memoryFolderColumn} = ${folder}` as SQL)),
  ]);
  return (folders?.total ?? 0) + (direct?.total ?? 0);
}
