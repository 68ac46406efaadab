import { and, asc, count, eq, getTableColumns, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { memoryStoreMounts, memoryStores } from '../db/schema.js';
import { assertCan } from './access.js';
import { ConflictError, NotFoundError } from './errors.js';
import { isIdOfKind } from './ids.js';
import { MAX_EXPLICIT_MOUNTS_PER_PAIR } from './limits.js';
import { fetchPage, fetchPagesByParent, sortKey, type KeysetList, type Page, type PageWindow } from './pagination.js';
import { checkExternalId, IssueList } from './validation.js';
import type { Viewer } from './viewer.js';

export type MountRecord = typeof memoryStoreMounts.$inferSelect;

/** An (identity, template) pair: the owner of mounts, default stores and sessions. */
export interface Pair {
  identityId: string;
  templateId: string;
}

/** Refuses identity and template ids that are not of the API's external form (INVALID_REQUEST). */
export function checkPair(pair: Pair, issues = new IssueList()): void {
  checkExternalId(issues, ['identityId'], pair.identityId, 'identity');
  checkExternalId(issues, ['templateId'], pair.templateId, 'template');
  issues.throwIfAny();
}

/**
 * Serializes every change to one pair's mounts and default store for the rest of the
 * transaction (a transaction-scoped advisory lock keyed by workspace and pair), so that
 * the mount limit and "exactly one default store" hold under concurrency.
 */
export async function lockPair(tx: Database, workspaceId: string, pair: Pair): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`${workspaceId}\u0001${pair.identityId}\u0001${pair.templateId}`}, 0))`);
}

const pairMounts = (workspaceId: string, pair: Pair) =>
  and(
    eq(memoryStoreMounts.workspaceId, workspaceId),
    eq(memoryStoreMounts.identityId, pair.identityId),
    eq(memoryStoreMounts.templateId, pair.templateId),
  );

/** The pair's list order: its default slot first, then ascending mount time, ties by store id. */
const slotRank = sql<number>`(case when ${memoryStoreMounts.systemManaged} then 0 else 1 end)`;

export const MOUNTS_OF_PAIR: KeysetList<MountRecord> = {
  table: memoryStoreMounts,
  columns: getTableColumns(memoryStoreMounts),
  ordering: {
    name: 'pair-mounts',
    keys: [
      { column: slotRank, kind: 'number', of: (mount) => (mount.systemManaged ? 0 : 1) },
      sortKey(memoryStoreMounts.createdAt, (mount) => mount.createdAt),
      sortKey(memoryStoreMounts.memoryStoreId, (mount) => mount.memoryStoreId),
    ],
    direction: 'asc',
  },
};

/** MemoryStore.mounts: the pairs mounting a store, in ascending mount time. */
export const MOUNTS_OF_STORE: KeysetList<MountRecord> = {
  table: memoryStoreMounts,
  columns: getTableColumns(memoryStoreMounts),
  ordering: {
    name: 'store-mounts',
    keys: [
      sortKey(memoryStoreMounts.createdAt, (mount) => mount.createdAt),
      sortKey(memoryStoreMounts.identityId, (mount) => mount.identityId),
      sortKey(memoryStoreMounts.templateId, (mount) => mount.templateId),
    ],
    direction: 'asc',
  },
};

// ---------------------------------------------------------------------------------------
// Reads

export async function listMountsOfPair(db: Database, viewer: Viewer, pair: Pair, window: PageWindow): Promise<Page<MountRecord>> {
  assertCan(viewer, { type: 'mounts.read', identityId: pair.identityId });
  checkPair(pair);
  return fetchPage(db, MOUNTS_OF_PAIR, window, pairMounts(viewer.workspaceId, pair));
}

export async function countMountsOfPair(db: Database, viewer: Viewer, pair: Pair): Promise<number> {
  const [row] = await db.select({ total: count() }).from(memoryStoreMounts).where(pairMounts(viewer.workspaceId, pair));
  return row?.total ?? 0;
}

/** All mounts of the pair in list order (at most the default slot and 10 explicit mounts). */
export async function allMountsOfPair(db: Database, workspaceId: string, pair: Pair): Promise<MountRecord[]> {
  return db
    .select()
    .from(memoryStoreMounts)
    .where(pairMounts(workspaceId, pair))
    .orderBy(...MOUNTS_OF_PAIR.ordering.keys.map((key) => asc(key.column)));
}

export async function listMountsByStore(db: Database, viewer: Viewer, storeIds: readonly string[], window: PageWindow): Promise<Map<string, Page<MountRecord>>> {
  return fetchPagesByParent(db, MOUNTS_OF_STORE, memoryStoreMounts.memoryStoreId, storeIds, window, eq(memoryStoreMounts.workspaceId, viewer.workspaceId));
}

// ---------------------------------------------------------------------------------------
// Writes

export interface MountInput extends Pair {
  memoryStoreId: string;
}

function storeNotFound(id: string): NotFoundError {
  return new NotFoundError(`No memory store with id "${id}".`);
}

/** Whether a store is the system-managed default store of an identity other than the pair's. */
export function isAnotherIdentitysDefaultStore(store: { systemManaged: boolean; identityId: string | null }, pair: Pair): boolean {
  return store.systemManaged && store.identityId !== pair.identityId;
}

/**
 * Mounts an active store on a pair, READ_ONLY. Idempotent: mounting again returns the
 * existing mount with its first createdAt; mounting the pair's own default store returns
 * its default slot. More than 10 explicit mounts on a pair is a CONFLICT. The default store
 * of another identity is NOT_FOUND, exactly as a store that does not exist, for every key.
 */
export async function mountMemoryStore(db: Database, viewer: Viewer, input: MountInput, now: Date): Promise<MountRecord> {
  assertCan(viewer, { type: 'mounts.write', identityId: input.identityId });
  const { workspaceId } = viewer;
  checkPair(input);
  if (!isIdOfKind(input.memoryStoreId, 'memoryStore')) throw storeNotFound(input.memoryStoreId);
  return db.transaction(async (tx) => {
    await lockPair(tx, workspaceId, input);
    // A shared lock on the store: an archive or delete (which lock it for update) waits for
    // this mount to commit and then sees it, or commits first and this sees it archived.
    const [store] = await tx
      .select({ status: memoryStores.status, systemManaged: memoryStores.systemManaged, identityId: memoryStores.identityId })
      .from(memoryStores)
      .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, input.memoryStoreId)))
      .for('share');
    // Another identity's default store is its private memory: it is not there, whoever asks
    // (checked before anything else, so that no answer tells it exists).
    if (!store || isAnotherIdentitysDefaultStore(store, input)) throw storeNotFound(input.memoryStoreId);
    if (store.status === 'archived') throw new ConflictError('The memory store is archived: only active stores can be mounted.', 'store_archived');

    const [existing] = await tx
      .select()
      .from(memoryStoreMounts)
      .where(and(pairMounts(workspaceId, input), eq(memoryStoreMounts.memoryStoreId, input.memoryStoreId)));
    if (existing) return existing;

    const [explicit] = await tx
      .select({ total: count() })
      .from(memoryStoreMounts)
      .where(and(pairMounts(workspaceId, input), eq(memoryStoreMounts.systemManaged, false)));
    if ((explicit?.total ?? 0) >= MAX_EXPLICIT_MOUNTS_PER_PAIR) {
      throw new ConflictError(`The pair already has ${MAX_EXPLICIT_MOUNTS_PER_PAIR} explicit mounts, the most it may have; unmount one first.`, 'mount_limit_exceeded');
    }
    const [mount] = await tx
      .insert(memoryStoreMounts)
      .values({ workspaceId, ...input, access: 'read_only', systemManaged: false, createdAt: now })
      .returning();
    return mount!;
  });
}

/** Removes an explicit mount. The default slot cannot be unmounted (CONFLICT). */
export async function unmountMemoryStore(db: Database, viewer: Viewer, input: MountInput): Promise<string> {
  assertCan(viewer, { type: 'mounts.write', identityId: input.identityId });
  const { workspaceId } = viewer;
  checkPair(input);
  const notMounted = () => new NotFoundError('The memory store is not mounted on this (identity, template) pair.');
  if (!isIdOfKind(input.memoryStoreId, 'memoryStore')) throw notMounted();
  return db.transaction(async (tx) => {
    await lockPair(tx, workspaceId, input);
    const where = and(pairMounts(workspaceId, input), eq(memoryStoreMounts.memoryStoreId, input.memoryStoreId));
    const [mount] = await tx.select({ systemManaged: memoryStoreMounts.systemManaged }).from(memoryStoreMounts).where(where);
    if (!mount) throw notMounted();
    if (mount.systemManaged) {
      throw new ConflictError('This is the pair\'s default slot: it cannot be unmounted (archiving the default store releases it).', 'default_slot');
    }
    await tx.delete(memoryStoreMounts).where(where);
    return input.memoryStoreId;
  });
}
