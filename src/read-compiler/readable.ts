import type { FieldNode } from 'graphql';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import { memories, memoryStores, memoryVersions } from '../db/schema.js';
import type { WorkspaceAction } from '../domain/access.js';
import type { IdKind } from '../domain/ids.js';
import { isMemoryCountKept, pathPrefixRange, type PathRange } from '../domain/memories/reads.js';
import { MEMORY_LISTS, type MemoryOrder } from '../domain/memories/records.js';
import type { KeysetOrdering } from '../domain/pagination.js';
import { MEMORY_STORE_LIST } from '../domain/stores.js';
import { isVersionCountKept, VERSIONS_OF_MEMORY } from '../domain/versions.js';
import type { EXPOSED_FIELDS } from '../graphql/exposed-fields.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../domain/limits.js';

/**
 * What the read compiler can read (plan.ts plans a query against these): the lists with
 * their arguments and how each reads them, the objects the root fetches by id, a store's
 * folder level, and the action of the access policy each object needs. Each reads the
 * domain's own declarations (orderings, path ranges, kept counters).
 */

export type ObjectTypeName = keyof typeof EXPOSED_FIELDS;

/** Thrown inside the planner for anything it does not cover; planRead answers null. */
export class Unsupported extends Error {}

export function unsupported(): never {
  throw new Unsupported();
}

/** The lists a plan can read, each with the arguments it takes and how it reads them. */
export interface ListSpec {
  typeName: string;
  edgeTypeName: string;
  table: PgTable & { workspaceId: AnyPgColumn; id: AnyPgColumn };
  node: ObjectTypeName;
  parentColumn: AnyPgColumn | null;
  action: WorkspaceAction;
  /** The arguments besides the paging ones. */
  filters: readonly string[];
  ordering(args: Record<string, unknown>): KeysetOrdering<unknown>;
  pathFilter(args: Record<string, unknown>): { column: AnyPgColumn; range: PathRange } | null;
  /** The parent's counter that answers totalCount under these arguments, if one does. */
  keptCount(args: Record<string, unknown>): AnyPgColumn | null;
}

export const PAGING = ['first', 'last', 'after', 'before'];

/** Where a value goes in the answer: its key (an alias, or the field's name). */
export interface ResponseKey {
  name: string;
  alias: string | null;
}

/** Ids, numbers, instants, enums, names of types, and each field's key: the most bytes each adds to an answer. */
export const SHORT_FIELD_BYTES = 80;

/**
 * The longest alias a compiled read writes. The worst bytes of an answer count each key
 * within SHORT_FIELD_BYTES, but an alias may be as long as the request allows, and is written
 * once per item of every page around it: a longer one is left to the resolvers, whose
 * response budget counts the bytes they write.
 */
export const MAX_COMPILED_ALIAS_CHARACTERS = 32;

/** A page's size: `first`, or the default. Out-of-range sizes are refused by the resolvers, with their message. */
export function pageSize(args: Record<string, unknown>): number {
  const size = args.first ?? DEFAULT_PAGE_SIZE;
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0 || size > MAX_PAGE_SIZE) unsupported();
  return size;
}

export function keyOf(field: FieldNode): ResponseKey {
  return { name: field.name.value, alias: field.alias?.value ?? null };
}


export const STORES: ListSpec = {
  typeName: 'MemoryStoreConnection',
  edgeTypeName: 'MemoryStoreEdge',
  table: memoryStores,
  node: 'MemoryStore',
  parentColumn: null,
  action: { type: 'memoryStores.read' },
  filters: [],
  ordering: () => MEMORY_STORE_LIST.ordering as KeysetOrdering<unknown>,
  pathFilter: () => null,
  keptCount: () => null,
};

const MEMORIES_OF_STORE: ListSpec = {
  typeName: 'MemoryConnection',
  edgeTypeName: 'MemoryEdge',
  table: memories,
  node: 'Memory',
  parentColumn: memories.memoryStoreId,
  action: { type: 'memories.read' },
  filters: ['orderBy', 'pathPrefix'],
  ordering: (args) => {
    const order = (args.orderBy ?? 'PATH_ASC') as MemoryOrder;
    if (!Object.hasOwn(MEMORY_LISTS, order)) unsupported();
    return MEMORY_LISTS[order].ordering as KeysetOrdering<unknown>;
  },
  pathFilter: (args) => {
    if (args.pathPrefix != null && typeof args.pathPrefix !== 'string') unsupported();
    const range = pathPrefixRange((args.pathPrefix as string | null | undefined) ?? undefined);
    return range.kind === 'all' ? null : { column: memories.path, range };
  },
  keptCount: (args) => (isMemoryCountKept({ pathPrefix: (args.pathPrefix as string | null | undefined) ?? undefined }) ? memoryStores.entryCount : null),
};

const VERSIONS_OF_A_MEMORY: ListSpec = {
  typeName: 'MemoryVersionConnection',
  edgeTypeName: 'MemoryVersionEdge',
  table: memoryVersions,
  node: 'MemoryVersion',
  parentColumn: memoryVersions.memoryId,
  action: { type: 'memoryVersions.read' },
  // Only paging arguments: no filter, so the version sequence is the count.
  filters: [],
  ordering: () => VERSIONS_OF_MEMORY.ordering as KeysetOrdering<unknown>,
  pathFilter: () => null,
  keptCount: () => (isVersionCountKept({}) ? memories.versionSequence : null),
};

/** The connections nested in each type. */
export const NESTED_LISTS: Record<ObjectTypeName, Record<string, ListSpec>> = {
  MemoryStore: { memories: MEMORIES_OF_STORE },
  Memory: { versions: VERSIONS_OF_A_MEMORY },
  MemoryVersion: {},
  MemoryFolder: {},
};

/** MemoryStore.entries (schema: graphql/types/memory-entries.ts): a union of folders and memories. */
export const ENTRIES = {
  parent: 'MemoryStore',
  field: 'entries',
  typeName: 'MemoryEntryConnection',
  edgeTypeName: 'MemoryEntryEdge',
  unionName: 'MemoryEntry',
  members: { folder: 'MemoryFolder', memory: 'Memory' },
} as const;

/** Objects the root fetches by id. */
export const SINGLES: Record<string, { node: ObjectTypeName; table: PgTable & { workspaceId: AnyPgColumn; id: AnyPgColumn }; kind: IdKind; action: WorkspaceAction }> = {
  memoryStore: { node: 'MemoryStore', table: memoryStores, kind: 'memoryStore', action: { type: 'memoryStores.read' } },
  memory: { node: 'Memory', table: memories, kind: 'memory', action: { type: 'memories.read' } },
};

export const OBJECT_ACTIONS: Record<ObjectTypeName, WorkspaceAction> = {
  MemoryStore: { type: 'memoryStores.read' },
  Memory: { type: 'memories.read' },
  MemoryVersion: { type: 'memoryVersions.read' },
  // A folder tells the paths of the memories below it.
  MemoryFolder: { type: 'memories.read' },
};
