import DataLoader from 'dataloader';
import type { Database } from '../db/client.js';
import {
  countMemoriesByStore,
  listMemoriesByStore,
  loadMemoriesByIds,
  loadMemoriesByPath,
  loadMemoryContents,
  type MemoryListFilter,
} from '../domain/memories/reads.js';
import type { MemoryOrder, MemoryRecord, MemorySummary } from '../domain/memories/records.js';
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
  loadVersionsByNumber,
  type MemoryVersionRecord,
  type MemoryVersionSummary,
  type VersionFilter,
} from '../domain/versions.js';
import type { Viewer } from '../domain/viewer.js';

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

/** Makes one loader of a request, for its database handle and viewer. */
type LoaderFactories = Record<string, (db: Database, viewer: Viewer) => unknown>;

type Made<Factories extends LoaderFactories> = { readonly [Name in keyof Factories]: ReturnType<Factories[Name]> };

/**
 * The class of per-request objects whose properties are made from the factories, for the
 * object's database handle and viewer, on first read, once. The getters are defined once, on
 * the class's prototype: accessors defined on each object would give it a hidden class of its
 * own, kept in the old generation with the getters' closures, which would hold each request's
 * loaders — and what they loaded — until a full garbage collection (see ClientGoneSignal in
 * http/native-front.ts).
 */
function lazyClass<Factories extends LoaderFactories>(factories: Factories): new (db: Database, viewer: Viewer) => Made<Factories> {
  class Lazy {
    readonly made = new Map<string, unknown>();

    constructor(
      readonly db: Database,
      readonly viewer: Viewer,
    ) {}
  }
  for (const name of Object.keys(factories)) {
    Object.defineProperty(Lazy.prototype, name, {
      enumerable: true,
      get(this: Lazy) {
        if (!this.made.has(name)) this.made.set(name, factories[name]!(this.db, this.viewer));
        return this.made.get(name);
      },
    });
  }
  return Lazy as unknown as new (db: Database, viewer: Viewer) => Made<Factories>;
}

/**
 * Per-request loaders: one statement for all the keys a request level asks for. Each is made
 * when a resolver first asks for it: an answer that needs none builds none.
 */
const RequestLoaders = lazyClass({
  memoryStore: (db, viewer) => byId<MemoryStoreRecord>((ids) => loadMemoryStoresByIds(db, viewer, ids)),
  mountingPairCount: (db, viewer) => fromMap((storeIds) => countMountingPairs(db, viewer, storeIds), 0),
  mountsOfStore: (db, viewer) => perArguments<PageWindow, Page<MountRecord>>((storeIds, window) => listMountsByStore(db, viewer, storeIds, window), EMPTY_PAGE),
  session: (db, viewer) => byId<SessionRecord>((ids) => loadSessionsByIds(db, viewer, ids)),

  memory: (db, viewer) => byId<MemoryRecord>((ids) => loadMemoriesByIds(db, viewer, ids)),
  /** Keyed by `${memoryStoreId}\0${path}` (paths cannot contain NUL). */
  memoryByPath: (db, viewer) => new DataLoader<string, MemoryRecord | null>(async (keys) => {
    const pairs = keys.map((key) => {
      const separator = key.indexOf(PATH_KEY_SEPARATOR);
      return { memoryStoreId: key.slice(0, separator), path: key.slice(separator + 1) };
    });
    const rows = new Map((await loadMemoriesByPath(db, viewer, pairs)).map((row) => [`${row.memoryStoreId}${PATH_KEY_SEPARATOR}${row.path}`, row]));
    return keys.map((key) => rows.get(key) ?? null);
  }),
  memoryContent: (db, viewer) => fromMap<string | null>((ids) => loadMemoryContents(db, viewer, ids), null),
  memoriesOfStore: (db, viewer) => perArguments<{ order: MemoryOrder; filter: MemoryListFilter; window: PageWindow }, Page<MemorySummary>>(
    (storeIds, { order, filter, window }) => listMemoriesByStore(db, viewer, storeIds, order, filter, window),
    EMPTY_PAGE,
  ),
  memoryCountOfStore: (db, viewer) => perArguments<MemoryListFilter, number>((storeIds, filter) => countMemoriesByStore(db, viewer, storeIds, filter), 0),

  memoryVersion: (db, viewer) => byId<MemoryVersionRecord>((ids) => loadVersionsByIds(db, viewer, ids)),
  /** Keyed by `${memoryId}\0${number}`. */
  versionByNumber: (db, viewer) => new DataLoader<string, MemoryVersionRecord | null>(async (keys) => {
    const pairs = keys.map((key) => {
      const separator = key.indexOf(PATH_KEY_SEPARATOR);
      return { memoryId: key.slice(0, separator), number: Number(key.slice(separator + 1)) };
    });
    const rows = new Map((await loadVersionsByNumber(db, viewer, pairs)).map((row) => [`${row.memoryId}${PATH_KEY_SEPARATOR}${row.sequence}`, row]));
    return keys.map((key) => rows.get(key) ?? null);
  }),
  versionContent: (db, viewer) => fromMap<string | null>((ids) => loadVersionContents(db, viewer, ids), null),
  latestVersion: (db, viewer) => fromMap<MemoryVersionSummary | null>((memoryIds) => loadLatestVersions(db, viewer, memoryIds), null),
  versionsOfMemory: (db, viewer) => perArguments<{ filter: VersionFilter; window: PageWindow }, Page<MemoryVersionSummary>>(
    (memoryIds, { filter, window }) => listVersionsByMemory(db, viewer, memoryIds, filter, window),
    EMPTY_PAGE,
  ),
  versionsOfStore: (db, viewer) => perArguments<{ filter: VersionFilter; window: PageWindow }, Page<MemoryVersionSummary>>(
    (storeIds, { filter, window }) => listVersionsByStore(db, viewer, storeIds, filter, window),
    EMPTY_PAGE,
  ),
  versionCountOfMemory: (db, viewer) => perArguments<VersionFilter, number>((memoryIds, filter) => countVersionsByParent(db, viewer, 'memory', memoryIds, filter), 0),
  versionCountOfStore: (db, viewer) => perArguments<VersionFilter, number>((storeIds, filter) => countVersionsByParent(db, viewer, 'store', storeIds, filter), 0),
});

export type Loaders = InstanceType<typeof RequestLoaders>;

export function createLoaders(db: Database, viewer: Viewer): Loaders {
  return new RequestLoaders(db, viewer);
}

export function versionNumberKey(memoryId: string, number: number): string {
  return `${memoryId}${PATH_KEY_SEPARATOR}${number}`;
}

export function memoryPathKey(memoryStoreId: string, path: string): string {
  return `${memoryStoreId}${PATH_KEY_SEPARATOR}${path}`;
}
