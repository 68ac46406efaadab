import { createHash } from 'node:crypto';
import { and, count, eq, getTableColumns, gt, lt, sql, type SQL } from 'drizzle-orm';
import { anyOf } from '../db/sql.js';
import type { Database } from '../db/client.js';
import { idempotencyKeys, memoryStoreMounts, memoryStores } from '../db/schema.js';
import { assertCan } from './access.js';
import { ConflictError, NotFoundError } from './errors.js';
import { recordEvent } from './events.js';
import { isIdOfKind, newId } from './ids.js';
import {
  IDEMPOTENCY_KEY_TTL_MS,
  STORE_CREATED_BY_KEY,
  STORE_CREATED_BY_VALUE,
  STORE_DESCRIPTION_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from './limits.js';
import { lockPair } from './mounts.js';
import { fetchPage, sortKey, type KeysetList, type Page, type PageWindow } from './pagination.js';
import { checkIdempotencyKey, checkMetadata, checkText, IssueList } from './validation.js';
import type { Viewer } from './viewer.js';

export type MemoryStoreRecord = typeof memoryStores.$inferSelect;
export type MemoryStoreStatus = MemoryStoreRecord['status'];

/** Newest first; the id breaks ties between stores created in the same millisecond. */
export const MEMORY_STORE_LIST: KeysetList<MemoryStoreRecord> = {
  table: memoryStores,
  columns: getTableColumns(memoryStores),
  ordering: { name: 'stores', keys: [sortKey(memoryStores.createdAt, (store) => store.createdAt), sortKey(memoryStores.id, (store) => store.id)], direction: 'desc' },
};

const inWorkspace = (workspaceId: string) => eq(memoryStores.workspaceId, workspaceId);
const storeById = (workspaceId: string, id: string) => and(inWorkspace(workspaceId), eq(memoryStores.id, id));

function checkName(issues: IssueList, name: string): void {
  checkText(issues, ['name'], name, { maxCharacters: STORE_NAME_MAX_CHARACTERS, allowBlank: false });
}

function checkDescription(issues: IssueList, description: string): void {
  checkText(issues, ['description'], description, { maxCharacters: STORE_DESCRIPTION_MAX_CHARACTERS, allowBlank: true });
}

function checkStoreMetadata(issues: IssueList, metadata: Record<string, unknown>): void {
  checkMetadata(issues, ['metadata'], metadata, { maxKeys: STORE_METADATA_MAX_KEYS, reservedKey: STORE_CREATED_BY_KEY });
}

/** The stored map: the caller's keys plus the server's `created_by`. */
function withCreatedBy(metadata: Record<string, unknown> | null | undefined): Record<string, string> {
  return { ...(metadata as Record<string, string> | undefined), [STORE_CREATED_BY_KEY]: STORE_CREATED_BY_VALUE };
}

// ---------------------------------------------------------------------------------------
// Reads

export async function loadMemoryStoresByIds(db: Database, viewer: Viewer, ids: readonly string[]): Promise<MemoryStoreRecord[]> {
  const wellFormed = ids.filter((id) => isIdOfKind(id, 'memoryStore'));
  if (wellFormed.length === 0) return [];
  return db.select().from(memoryStores).where(and(inWorkspace(viewer.workspaceId), anyOf(memoryStores.id, wellFormed)));
}

export interface MemoryStoreFilter {
  systemManaged?: boolean;
  status?: MemoryStoreStatus;
  /** Case-insensitive plain prefix of the name (no wildcards). */
  namePrefix?: string;
  /** Strictly after / before these instants. */
  createdAfter?: Date;
  createdBefore?: Date;
}

function storeFilter(workspaceId: string, filter: MemoryStoreFilter): SQL {
  const conditions: SQL[] = [inWorkspace(workspaceId)];
  if (filter.systemManaged !== undefined) conditions.push(eq(memoryStores.systemManaged, filter.systemManaged));
  if (filter.status !== undefined) conditions.push(eq(memoryStores.status, filter.status));
  if (filter.namePrefix !== undefined && filter.namePrefix !== '') {
    // A prefix no name can have (NUL, lone surrogates) matches nothing; sent to PostgreSQL,
    // a NUL would fail the query ("invalid byte sequence") instead.
    const matchable = filter.namePrefix.isWellFormed() && !filter.namePrefix.includes('\u0000');
    conditions.push(matchable ? sql`starts_with(lower(${memoryStores.name}), lower(${filter.namePrefix}))` : sql`false`);
  }
  if (filter.createdAfter !== undefined) conditions.push(gt(memoryStores.createdAt, filter.createdAfter));
  if (filter.createdBefore !== undefined) conditions.push(lt(memoryStores.createdAt, filter.createdBefore));
  return and(...conditions)!;
}

export async function listMemoryStores(db: Database, viewer: Viewer, filter: MemoryStoreFilter, window: PageWindow): Promise<Page<MemoryStoreRecord>> {
  return fetchPage(db, MEMORY_STORE_LIST, window, storeFilter(viewer.workspaceId, filter));
}

export async function countMemoryStores(db: Database, viewer: Viewer, filter: MemoryStoreFilter): Promise<number> {
  const [row] = await db.select({ total: count() }).from(memoryStores).where(storeFilter(viewer.workspaceId, filter));
  return row?.total ?? 0;
}

/** For each store: how many (identity, template) pairs mount it (default slots included). */
export async function countMountingPairs(db: Database, viewer: Viewer, storeIds: readonly string[]): Promise<Map<string, number>> {
  const { workspaceId } = viewer;
  const counts = new Map<string, number>();
  if (storeIds.length === 0) return counts;
  const rows = await db
    .select({ memoryStoreId: memoryStoreMounts.memoryStoreId, pairs: count() })
    .from(memoryStoreMounts)
    .where(and(eq(memoryStoreMounts.workspaceId, workspaceId), anyOf(memoryStoreMounts.memoryStoreId, [...storeIds])))
    .groupBy(memoryStoreMounts.memoryStoreId);
  for (const row of rows) counts.set(row.memoryStoreId, row.pairs);
  return counts;
}

// ---------------------------------------------------------------------------------------
// Writes

/** The live-update event of a change to a store, in the change's transaction. */
export function recordStoreEvent(tx: Database, store: Pick<MemoryStoreRecord, 'workspaceId' | 'id'>, kind: 'store_created' | 'store_updated' | 'store_archived' | 'store_deleted', now: Date) {
  return recordEvent(tx, { workspaceId: store.workspaceId, kind, memoryStoreId: store.id, occurredAt: now });
}

export interface CreateMemoryStoreInput {
  name: string;
  description?: string | null;
  metadata?: Record<string, unknown> | null;
  idempotencyKey?: string | null;
}

const CREATE_OPERATION = 'createMemoryStore';

/** What makes two createMemoryStore requests "the same input" for an idempotency key. */
function createRequestFingerprint(input: CreateMemoryStoreInput): string {
  const metadata = Object.entries(input.metadata ?? {}).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  const normalized = JSON.stringify([input.name, input.description ?? '', metadata]);
  return createHash('sha256').update(normalized, 'utf8').digest('hex');
}

const WRITE_STORES = { type: 'memoryStores.write' } as const;

export async function createMemoryStore(db: Database, viewer: Viewer, input: CreateMemoryStoreInput, now: Date): Promise<MemoryStoreRecord> {
  assertCan(viewer, WRITE_STORES);
  const issues = new IssueList();
  checkName(issues, input.name);
  if (input.description != null) checkDescription(issues, input.description);
  if (input.metadata != null) checkStoreMetadata(issues, input.metadata);
  if (input.idempotencyKey != null) checkIdempotencyKey(issues, ['idempotencyKey'], input.idempotencyKey);
  issues.throwIfAny();

  const store: MemoryStoreRecord = {
    workspaceId: viewer.workspaceId,
    id: newId('memoryStore', now.getTime()),
    name: input.name,
    description: input.description ?? '',
    status: 'active',
    entryCount: 0,
    totalSize: 0,
    metadata: withCreatedBy(input.metadata),
    systemManaged: false,
    identityId: null,
    templateId: null,
    createdAt: now,
    updatedAt: now,
    archivedAt: null,
  };
  const idempotencyKey = input.idempotencyKey;
  const insertStore = async (tx: Database) => {
    const [created] = await tx.insert(memoryStores).values(store).returning();
    await recordStoreEvent(tx, store, 'store_created', now);
    return created!;
  };
  if (idempotencyKey == null) return db.transaction((tx) => insertStore(tx));

  const requestSha256 = createRequestFingerprint(input);
  return db.transaction(async (tx) => {
    // Claims the key, or reclaims it once its 24 hours are over. A concurrent request with
    // the same key waits here on the primary key until the first one commits.
    const expiredBefore = new Date(now.getTime() - IDEMPOTENCY_KEY_TTL_MS);
    const claimed = await tx
      .insert(idempotencyKeys)
      .values({ workspaceId: viewer.workspaceId, operation: CREATE_OPERATION, key: idempotencyKey, requestSha256, resultId: store.id, createdAt: now })
      .onConflictDoUpdate({
        target: [idempotencyKeys.workspaceId, idempotencyKeys.operation, idempotencyKeys.key],
        set: { requestSha256, resultId: store.id, createdAt: now },
        setWhere: lt(idempotencyKeys.createdAt, expiredBefore),
      })
      .returning({ resultId: idempotencyKeys.resultId });
    // Only the request that claims the key creates the store, and with it its one STORE_CREATED event.
    if (claimed.length > 0) return insertStore(tx);
    const [previous] = await tx
      .select({ requestSha256: idempotencyKeys.requestSha256, resultId: idempotencyKeys.resultId })
      .from(idempotencyKeys)
      .where(
        and(
          eq(idempotencyKeys.workspaceId, viewer.workspaceId),
          eq(idempotencyKeys.operation, CREATE_OPERATION),
          eq(idempotencyKeys.key, idempotencyKey),
        ),
      );
    if (!previous || previous.requestSha256 !== requestSha256) {
      throw new ConflictError('This idempotencyKey was already used with a different input in the last 24 hours.', 'idempotency_key_reused');
    }
    const [existing] = await tx.select().from(memoryStores).where(storeById(viewer.workspaceId, previous.resultId));
    if (!existing) {
      throw new NotFoundError('The memory store created with this idempotencyKey has since been deleted.');
    }
    return existing;
  });
}

export interface UpdateMemoryStoreInput {
  id: string;
  /** undefined: leave as is; null: rejected (these fields cannot be cleared). */
  name?: string | null;
  description?: string | null;
  metadata?: Record<string, unknown> | null;
}

export async function updateMemoryStore(db: Database, viewer: Viewer, input: UpdateMemoryStoreInput, now: Date): Promise<MemoryStoreRecord> {
  assertCan(viewer, WRITE_STORES);
  assertStoreId(input.id);
  const issues = new IssueList();
  const fields = ['name', 'description', 'metadata'] as const;
  if (fields.every((field) => input[field] === undefined)) {
    issues.add([], 'Give at least one of name, description, metadata.');
  }
  for (const field of fields) {
    if (input[field] === null) issues.add([field], 'must not be null: leave the field out to keep its value');
  }
  if (typeof input.name === 'string') checkName(issues, input.name);
  if (typeof input.description === 'string') checkDescription(issues, input.description);
  if (input.metadata) checkStoreMetadata(issues, input.metadata);
  issues.throwIfAny();

  const changes: Partial<MemoryStoreRecord> = { updatedAt: now };
  if (typeof input.name === 'string') changes.name = input.name;
  if (typeof input.description === 'string') changes.description = input.description;
  if (input.metadata) changes.metadata = withCreatedBy(input.metadata);

  // One conditional statement: an archive committed concurrently is never overwritten.
  const updated = await db.transaction(async (tx) => {
    const [row] = await tx
      .update(memoryStores)
      .set(changes)
      .where(and(storeById(viewer.workspaceId, input.id), eq(memoryStores.status, 'active')))
      .returning();
    if (row) await recordStoreEvent(tx, row, 'store_updated', now);
    return row;
  });
  if (updated) return updated;
  const [existing] = await db.select({ status: memoryStores.status }).from(memoryStores).where(storeById(viewer.workspaceId, input.id));
  if (!existing) throw memoryStoreNotFound(input.id);
  throw new ConflictError('The memory store is archived: archived stores cannot be changed.', 'store_archived');
}

function memoryStoreNotFound(id: string): NotFoundError {
  return new NotFoundError(`No memory store with id "${id}".`);
}

/** A store id that cannot exist is simply not found: the same answer as an unknown or foreign one. */
function assertStoreId(id: string): void {
  if (!isIdOfKind(id, 'memoryStore')) throw memoryStoreNotFound(id);
}

/** Locks the store row for the rest of the transaction and checks the guards archive and delete share. */
async function lockStoreForRemoval(tx: Database, workspaceId: string, id: string, action: 'archived' | 'deleted'): Promise<MemoryStoreRecord> {
  // A default store's removal changes its pair's default slot: take the pair's lock first
  // (the order createSession and mountMemoryStore use: pair, then store), so that a
  // session starting meanwhile sees either the old slot or none, never a vanishing one.
  const [owner] = await tx
    .select({ identityId: memoryStores.identityId, templateId: memoryStores.templateId })
    .from(memoryStores)
    .where(and(storeById(workspaceId, id), eq(memoryStores.systemManaged, true)));
  if (owner?.identityId && owner.templateId) {
    await lockPair(tx, workspaceId, { identityId: owner.identityId, templateId: owner.templateId });
  }
  const [store] = await tx.select().from(memoryStores).where(storeById(workspaceId, id)).for('update');
  if (!store) throw memoryStoreNotFound(id);
  if (store.status === 'archived') {
    throw action === 'archived'
      ? new ConflictError('The memory store is already archived.', 'already_archived')
      : new ConflictError('The memory store is archived: archived stores cannot be deleted.', 'store_archived');
  }
  const [mounts] = await tx
    .select({ pairs: count() })
    .from(memoryStoreMounts)
    .where(
      and(
        eq(memoryStoreMounts.workspaceId, workspaceId),
        eq(memoryStoreMounts.memoryStoreId, id),
        eq(memoryStoreMounts.systemManaged, false),
      ),
    );
  const pairs = mounts?.pairs ?? 0;
  if (pairs > 0) {
    throw new ConflictError(
      `The memory store is mounted on ${pairs} (identity, template) pair${pairs === 1 ? '' : 's'}; unmount it before it can be ${action}.`,
      'store_mounted',
    );
  }
  return store;
}

export async function archiveMemoryStore(db: Database, viewer: Viewer, id: string, now: Date): Promise<MemoryStoreRecord> {
  assertCan(viewer, WRITE_STORES);
  assertStoreId(id);
  return db.transaction(async (tx) => {
    await lockStoreForRemoval(tx, viewer.workspaceId, id, 'archived');
    // Archiving a default store releases its pair's default slot: the next session of that
    // pair gets a new, empty default store.
    await tx
      .delete(memoryStoreMounts)
      .where(and(eq(memoryStoreMounts.workspaceId, viewer.workspaceId), eq(memoryStoreMounts.memoryStoreId, id)));
    const [archived] = await tx
      .update(memoryStores)
      .set({ status: 'archived', archivedAt: now, updatedAt: now })
      .where(storeById(viewer.workspaceId, id))
      .returning();
    await recordStoreEvent(tx, archived!, 'store_archived', now);
    return archived!;
  });
}

export async function deleteMemoryStore(db: Database, viewer: Viewer, id: string, now = new Date()): Promise<string> {
  assertCan(viewer, WRITE_STORES);
  assertStoreId(id);
  return db.transaction(async (tx) => {
    await lockStoreForRemoval(tx, viewer.workspaceId, id, 'deleted');
    // Memories, versions and the default slot go with the store (ON DELETE CASCADE); its events stay.
    await tx.delete(memoryStores).where(storeById(viewer.workspaceId, id));
    await recordStoreEvent(tx, { workspaceId: viewer.workspaceId, id }, 'store_deleted', now);
    return id;
  });
}
