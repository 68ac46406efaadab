import DataLoader from 'dataloader';
import type { Database } from '../db/client.js';
import {
  countMemoriesByStore,
  listMemoriesByStore,
  loadMemoriesByIds,
  loadMemoriesByPath,
  loadMemoryContents,
  type MemoryListFilter,
  type MemoryOrder,
  type MemoryRecord,
  type MemorySummary,
} from '../domain/memories.js';
import { listMountsByStore, type MountRecord } from '../domain/mounts.js';
import type { Page, PageWindow } from '../domain/pagination.js';
import { loadSessionsByIds, type SessionRecord } from '../domain/sessions.js';
import { countMountingPairs, loadMemoryStoresByIds, type MemoryStoreRecord } from '../domain/stores.js';
import {
  countVersionsByParent,
  listVersionsByMemory,
  listVersionsByStore,
  loadLatestVersions,
  loadVersionContents,
  loadVersionsByIds,
  type MemoryVersionRecord,
  type MemoryVersionSummary,
  type VersionFilter,
} from '../domain/versions.js';

function byId<Row extends { id: string }>(load: (ids: readonly string[]) => Promise<Row[]>) {
  return new DataLoader<string, Row | null>(async (ids) => {
    const rows = new Map((await load(ids)).map((row) => [row.id, row]));
    return ids.map((id) => rows.get(id) ?? null);
  });
}

function fromMap<Value>(load: (keys: readonly string[]) => Promise<Map<string, Value>>, missing: Value) {
  return new DataLoader<string, Value>(async (keys) => {
    const values = await load(keys);
    return keys.map((key) => (values.has(key) ? values.get(key)! : missing));
  });
}

/**
 * One DataLoader per distinct argument set of a child list: every parent asking for the
 * same page (same order, filters, size and cursors) is answered by one statement.
 */
function perArguments<Args, Value>(batch: (parentIds: readonly string[], args: Args) => Promise<Map<string, Value>>, missing: Value) {
  const loaders = new Map<string, DataLoader<string, Value>>();
  return (args: Args): DataLoader<string, Value> => {
    const key = JSON.stringify(args);
    let loader = loaders.get(key);
    if (!loader) {
      loader = fromMap((parentIds) => batch(parentIds, args), missing);
      loaders.set(key, loader);
    }
    return loader;
  };
}

const EMPTY_PAGE: Page<never> = { rows: [], hasNextPage: false, hasPreviousPage: false };
const PATH_KEY_SEPARATOR = '\u0000';

/** Per-request loaders: one statement for all the keys a request level asks for. */
export function createLoaders(db: Database, workspaceId: string) {
  return {
    memoryStore: byId<MemoryStoreRecord>((ids) => loadMemoryStoresByIds(db, workspaceId, ids)),
    mountingPairCount: fromMap((storeIds) => countMountingPairs(db, workspaceId, storeIds), 0),
    mountsOfStore: perArguments<PageWindow, Page<MountRecord>>((storeIds, window) => listMountsByStore(db, workspaceId, storeIds, window), EMPTY_PAGE),
    session: byId<SessionRecord>((ids) => loadSessionsByIds(db, workspaceId, ids)),

    memory: byId<MemoryRecord>((ids) => loadMemoriesByIds(db, workspaceId, ids)),
    /** Keyed by `${memoryStoreId}\0${path}` (paths cannot contain NUL). */
    memoryByPath: new DataLoader<string, MemoryRecord | null>(async (keys) => {
      const pairs = keys.map((key) => {
        const separator = key.indexOf(PATH_KEY_SEPARATOR);
        return { memoryStoreId: key.slice(0, separator), path: key.slice(separator + 1) };
      });
      const rows = new Map((await loadMemoriesByPath(db, workspaceId, pairs)).map((row) => [`${row.memoryStoreId}${PATH_KEY_SEPARATOR}${row.path}`, row]));
      return keys.map((key) => rows.get(key) ?? null);
    }),
    memoryContent: fromMap<string | null>((ids) => loadMemoryContents(db, workspaceId, ids), null),
    memoriesOfStore: perArguments<{ order: MemoryOrder; filter: MemoryListFilter; window: PageWindow }, Page<MemorySummary>>(
      (storeIds, { order, filter, window }) => listMemoriesByStore(db, workspaceId, storeIds, order, filter, window),
      EMPTY_PAGE,
    ),
    memoryCountOfStore: perArguments<MemoryListFilter, number>((storeIds, filter) => countMemoriesByStore(db, workspaceId, storeIds, filter), 0),

    memoryVersion: byId<MemoryVersionRecord>((ids) => loadVersionsByIds(db, workspaceId, ids)),
    versionContent: fromMap<string | null>((ids) => loadVersionContents(db, workspaceId, ids), null),
    latestVersion: fromMap<MemoryVersionSummary | null>((memoryIds) => loadLatestVersions(db, workspaceId, memoryIds), null),
    versionsOfMemory: perArguments<{ filter: VersionFilter; window: PageWindow }, Page<MemoryVersionSummary>>(
      (memoryIds, { filter, window }) => listVersionsByMemory(db, workspaceId, memoryIds, filter, window),
      EMPTY_PAGE,
    ),
    versionsOfStore: perArguments<{ filter: VersionFilter; window: PageWindow }, Page<MemoryVersionSummary>>(
      (storeIds, { filter, window }) => listVersionsByStore(db, workspaceId, storeIds, filter, window),
      EMPTY_PAGE,
    ),
    versionCountOfMemory: perArguments<VersionFilter, number>((memoryIds, filter) => countVersionsByParent(db, workspaceId, 'memory', memoryIds, filter), 0),
    versionCountOfStore: perArguments<VersionFilter, number>((storeIds, filter) => countVersionsByParent(db, workspaceId, 'store', storeIds, filter), 0),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;

export function memoryPathKey(memoryStoreId: string, path: string): string {
  return `${memoryStoreId}${PATH_KEY_SEPARATOR}${path}`;
}
