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

/** What a lazily made object holds: its factories, and what they made so far. */
interface LazyState {
  readonly factories: Record<string, () => unknown>;
  readonly made: Map<string, unknown>;
}

const LAZY_STATE = Symbol('lazy state');

/**
 * The prototypes of lazily made objects, one per list of property names (a few, one per
 * call site). The getters live there, not on each object: accessors defined on an object of
 * its own give it a hidden class of its own, kept in the old generation with the getters'
 * closures, which would hold each request's loaders — and what they loaded — until a full
 * garbage collection (see ClientGoneSignal in http/native-front.ts).
 */
const lazyPrototypes = new Map<string, object>();

function lazyPrototype(names: readonly string[]): object {
  const key = names.join('\u0000');
  let prototype = lazyPrototypes.get(key);
  if (prototype === undefined) {
    prototype = {};
    for (const name of names) {
      Object.defineProperty(prototype, name, {
        enumerable: true,
        get(this: { [LAZY_STATE]: LazyState }) {
          const { factories, made } = this[LAZY_STATE];
          if (!made.has(name)) made.set(name, factories[name]!());
          return made.get(name);
        },
      });
    }
    lazyPrototypes.set(key, prototype);
  }
  return prototype;
}

/** An object whose properties are made from their factories on first read, once. */
function lazily<Factories extends Record<string, () => unknown>>(factories: Factories): { readonly [Name in keyof Factories]: ReturnType<Factories[Name]> } {
  const object = Object.create(lazyPrototype(Object.keys(factories))) as { [LAZY_STATE]: LazyState };
  object[LAZY_STATE] = { factories, made: new Map() };
  return object as unknown as { readonly [Name in keyof Factories]: ReturnType<Factories[Name]> };
}

/**
 * Per-request loaders: one statement for all the keys a request level asks for. Each is made
 * when a resolver first asks for it: an answer that needs none builds none.
 */
export function createLoaders(db: Database, viewer: Viewer) {
  return lazily({
    memoryStore: () => byId<MemoryStoreRecord>((ids) => loadMemoryStoresByIds(db, viewer, ids)),
    mountingPairCount: () => fromMap((storeIds) => countMountingPairs(db, viewer, storeIds), 0),
    mountsOfStore: () => perArguments<PageWindow, Page<MountRecord>>((storeIds, window) => listMountsByStore(db, viewer, storeIds, window), EMPTY_PAGE),
    session: () => byId<SessionRecord>((ids) => loadSessionsByIds(db, viewer, ids)),

    memory: () => byId<MemoryRecord>((ids) => loadMemoriesByIds(db, viewer, ids)),
    /** Keyed by `${memoryStoreId}\0${path}` (paths cannot contain NUL). */
    memoryByPath: () => new DataLoader<string, MemoryRecord | null>(async (keys) => {
      const pairs = keys.map((key) => {
        const separator = key.indexOf(PATH_KEY_SEPARATOR);
        return { memoryStoreId: key.slice(0, separator), path: key.slice(separator + 1) };
      });
      const rows = new Map((await loadMemoriesByPath(db, viewer, pairs)).map((row) => [`${row.memoryStoreId}${PATH_KEY_SEPARATOR}${row.path}`, row]));
      return keys.map((key) => rows.get(key) ?? null);
    }),
    memoryContent: () => fromMap<string | null>((ids) => loadMemoryContents(db, viewer, ids), null),
    memoriesOfStore: () => perArguments<{ order: MemoryOrder; filter: MemoryListFilter; window: PageWindow }, Page<MemorySummary>>(
      (storeIds, { order, filter, window }) => listMemoriesByStore(db, viewer, storeIds, order, filter, window),
      EMPTY_PAGE,
    ),
    memoryCountOfStore: () => perArguments<MemoryListFilter, number>((storeIds, filter) => countMemoriesByStore(db, viewer, storeIds, filter), 0),

    memoryVersion: () => byId<MemoryVersionRecord>((ids) => loadVersionsByIds(db, viewer, ids)),
    /** Keyed by `${memoryId}\0${number}`. */
    versionByNumber: () => new DataLoader<string, MemoryVersionRecord | null>(async (keys) => {
      const pairs = keys.map((key) => {
        const separator = key.indexOf(PATH_KEY_SEPARATOR);
        return { memoryId: key.slice(0, separator), number: Number(key.slice(separator + 1)) };
      });
      const rows = new Map((await loadVersionsByNumber(db, viewer, pairs)).map((row) => [`${row.memoryId}${PATH_KEY_SEPARATOR}${row.sequence}`, row]));
      return keys.map((key) => rows.get(key) ?? null);
    }),
    versionContent: () => fromMap<string | null>((ids) => loadVersionContents(db, viewer, ids), null),
    latestVersion: () => fromMap<MemoryVersionSummary | null>((memoryIds) => loadLatestVersions(db, viewer, memoryIds), null),
    versionsOfMemory: () => perArguments<{ filter: VersionFilter; window: PageWindow }, Page<MemoryVersionSummary>>(
      (memoryIds, { filter, window }) => listVersionsByMemory(db, viewer, memoryIds, filter, window),
      EMPTY_PAGE,
    ),
    versionsOfStore: () => perArguments<{ filter: VersionFilter; window: PageWindow }, Page<MemoryVersionSummary>>(
      (storeIds, { filter, window }) => listVersionsByStore(db, viewer, storeIds, filter, window),
      EMPTY_PAGE,
    ),
    versionCountOfMemory: () => perArguments<VersionFilter, number>((memoryIds, filter) => countVersionsByParent(db, viewer, 'memory', memoryIds, filter), 0),
    versionCountOfStore: () => perArguments<VersionFilter, number>((storeIds, filter) => countVersionsByParent(db, viewer, 'store', storeIds, filter), 0),
  });
}

export type Loaders = ReturnType<typeof createLoaders>;

export function versionNumberKey(memoryId: string, number: number): string {
  return `${memoryId}${PATH_KEY_SEPARATOR}${number}`;
}

export function memoryPathKey(memoryStoreId: string, path: string): string {
  return `${memoryStoreId}${PATH_KEY_SEPARATOR}${path}`;
}
