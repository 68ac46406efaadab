import { and, asc, countDistinct, desc, eq, getTableColumns, gt, lt, sql } from 'drizzle-orm';
import { anyOf } from '../db/sql.js';
import { unionAll } from 'drizzle-orm/pg-core';
import type { Database } from '../db/client.js';
import { memories, memoryStoreMounts, memoryStores, sessions } from '../db/schema.js';
import { assertCan } from './access.js';
import { NotFoundError, PermissionError } from './errors.js';
import { recordEvent } from './events.js';
import { isIdOfKind, newId } from './ids.js';
import { AGENT_MEMORY_METADATA, DEFAULT_STORE_NAME, STORE_CREATED_BY_KEY, STORE_CREATED_BY_VALUE } from './limits.js';
import { pathPrefixFilter } from './memories/reads.js';
import type { DeletedMemory, MemoryRecord, MemorySummary } from './memories/records.js';
import { deleteMemoryAtPath, writeMemoryAtPath } from './memories/writes.js';
import { allMountsOfPair, checkPair, isAnotherIdentitysDefaultStore, lockPair, type MountRecord, type Pair } from './mounts.js';
import { compareCodePoints, sortKey, type KeysetOrdering, type Page, type PageWindow } from './pagination.js';
import { IssueList } from './validation.js';
import type { Viewer, Writer } from './viewer.js';

export type SessionRecord = typeof sessions.$inferSelect;
export type EnvironmentType = SessionRecord['environment'];
export type InjectedMount = SessionRecord['injectedMounts'][number];

function sessionNotFound(id: string): NotFoundError {
  return new NotFoundError(`No session with id "${id}".`);
}

// ---------------------------------------------------------------------------------------
// Creating a session

/**
 * The pair's default slot and store, created on first use. The caller holds the pair's
 * lock, so concurrent first sessions of a pair create exactly one.
 */
async function ensureDefaultStore(tx: Database, workspaceId: string, pair: Pair, now: Date): Promise<string> {
  const [slot] = await tx
    .select({ memoryStoreId: memoryStoreMounts.memoryStoreId })
    .from(memoryStoreMounts)
    .where(
      and(
        eq(memoryStoreMounts.workspaceId, workspaceId),
        eq(memoryStoreMounts.identityId, pair.identityId),
        eq(memoryStoreMounts.templateId, pair.templateId),
        eq(memoryStoreMounts.systemManaged, true),
      ),
    );
  if (slot) return slot.memoryStoreId;
  const id = newId('memoryStore', now.getTime());
  await tx.insert(memoryStores).values({
    workspaceId,
    id,
    name: DEFAULT_STORE_NAME,
    description: '',
    status: 'active',
    metadata: { [STORE_CREATED_BY_KEY]: STORE_CREATED_BY_VALUE },
    systemManaged: true,
    identityId: pair.identityId,
    templateId: pair.templateId,
    createdAt: now,
    updatedAt: now,
  });
  await tx.insert(memoryStoreMounts).values({ workspaceId, ...pair, memoryStoreId: id, access: 'read_write', systemManaged: true, createdAt: now });
  await recordEvent(tx, { workspaceId, kind: 'store_created', memoryStoreId: id, occurredAt: now });
  return id;
}

export interface CreateSessionInput extends Pair {
  environment: EnvironmentType;
}

/**
 * Starts the memory side of a session: creates the pair's default store if it has none,
 * and snapshots the mounts injected into the sandbox — all active mounts for MANAGED
 * environments, none for SELF_HOSTED ones.
 */
export async function createSession(db: Database, viewer: Viewer, input: CreateSessionInput, now: Date): Promise<SessionRecord> {
  assertCan(viewer, { type: 'sessions.create', identityId: input.identityId });
  const { workspaceId } = viewer;
  checkPair(input, new IssueList());
  return db.transaction(async (tx) => {
    await lockPair(tx, workspaceId, input);
    const defaultMemoryStoreId = await ensureDefaultStore(tx, workspaceId, input, now);
    const managed = input.environment === 'managed';
    let injected: InjectedMount[] = [];
    if (managed) {
      const mounts = await allMountsOfPair(tx, workspaceId, input);
      const active = await tx
        .select({ id: memoryStores.id, systemManaged: memoryStores.systemManaged, identityId: memoryStores.identityId })
        .from(memoryStores)
        .where(and(eq(memoryStores.workspaceId, workspaceId), anyOf(memoryStores.id, mounts.map((mount) => mount.memoryStoreId)), eq(memoryStores.status, 'active')));
      // Another identity's default store is never injected (no such mount can be made; the
      // migration that forbade them removed older ones, and this keeps it so).
      const activeIds = new Set(active.filter((store) => !isAnotherIdentitysDefaultStore(store, input)).map((store) => store.id));
      injected = mounts
        .filter((mount) => activeIds.has(mount.memoryStoreId))
        .map((mount) => ({ memoryStoreId: mount.memoryStoreId, access: mount.access, systemManaged: mount.systemManaged, createdAt: mount.createdAt.toISOString() }));
    }
    const [session] = await tx
      .insert(sessions)
      .values({
        workspaceId,
        id: newId('session', now.getTime()),
        identityId: input.identityId,
        templateId: input.templateId,
        environment: input.environment,
        defaultMemoryStoreId,
        memoryInjected: managed,
        injectedMounts: injected,
        createdAt: now,
      })
      .returning();
    return session!;
  });
}

export async function loadSessionsByIds(db: Database, viewer: Viewer, ids: readonly string[]): Promise<SessionRecord[]> {
  const wellFormed = ids.filter((id) => isIdOfKind(id, 'session'));
  if (wellFormed.length === 0) return [];
  return db.select().from(sessions).where(and(eq(sessions.workspaceId, viewer.workspaceId), anyOf(sessions.id, wellFormed)));
}

/** A snapshot entry as a mount of the session's pair (for Session.mounts). */
export function injectedMountRecord(session: SessionRecord, mount: InjectedMount): MountRecord {
  return {
    workspaceId: session.workspaceId,
    identityId: session.identityId,
    templateId: session.templateId,
    memoryStoreId: mount.memoryStoreId,
    access: mount.access,
    systemManaged: mount.systemManaged,
    createdAt: new Date(mount.createdAt),
  };
}

// ---------------------------------------------------------------------------------------
// What the agent sees: the injected stores merged by path

export interface SessionFile {
  path: string;
  /** The visible entry: from the earliest-mounted store holding the path. */
  memory: MemorySummary;
  access: InjectedMount['access'];
  /** Entries at the same path in later stores, hidden by `memory`, in precedence order. */
  shadowed: MemorySummary[];
}

/**
 * Precedence of the injected stores: earliest mount first (the default slot by its own
 * creation time), ties by store id.
 */
export function storesByPrecedence(session: SessionRecord): InjectedMount[] {
  return [...session.injectedMounts].sort(
    (left, right) => Date.parse(left.createdAt) - Date.parse(right.createdAt) || compareCodePoints(left.memoryStoreId, right.memoryStoreId),
  );
}

const { content: _content, ...summaryColumns } = getTableColumns(memories);

/** Session.files: by path in byte order (the order of the merged folder). */
export const SESSION_FILES_ORDER: KeysetOrdering<SessionFile> = { name: 'session-files', keys: [sortKey(memories.path, (file) => file.path)], direction: 'asc' };

/**
 * One page of the merged namespace in two statements, however many stores are injected:
 * the page's paths (each store contributes at most one page of candidates through its own
 * index scan; a probe row says whether paths lie behind the cursor), then every entry at
 * those paths.
 */
export async function listSessionFiles(
  db: Database,
  viewer: Viewer,
  session: SessionRecord,
  filter: { pathPrefix?: string },
  window: PageWindow,
): Promise<Page<SessionFile>> {
  const empty: Page<SessionFile> = { rows: [], hasNextPage: false, hasPreviousPage: false };
  const stores = storesByPrecedence(session);
  const prefix = pathPrefixFilter(filter.pathPrefix);
  if (stores.length === 0 || prefix === false) return empty;
  const storeIds = stores.map((store) => store.memoryStoreId);
  const inWorkspace = eq(memories.workspaceId, viewer.workspaceId);
  const after = window.after?.[0] as string | undefined;
  const before = window.before?.[0] as string | undefined;
  const bounds = and(after === undefined ? undefined : gt(memories.path, after), before === undefined ? undefined : lt(memories.path, before));
  const pathOrder = window.backward ? desc : asc;

  const perStore = db
    .select({ path: memories.path })
    .from(memories)
    .where(and(inWorkspace, eq(memories.memoryStoreId, sql`stores.id`), prefix, bounds))
    .orderBy(pathOrder(memories.path))
    .limit(window.size + 1)
    .as('candidates');
  const candidates = db
    .selectDistinct({ path: perStore.path, side: sql<number>`0`.mapWith(Number).as('side') })
    .from(sql`unnest(${sql.param(storeIds)}::text[]) as stores(id)`)
    .crossJoinLateral(perStore)
    .orderBy(pathOrder(perStore.path))
    .limit(window.size + 1);
  const start = window.backward ? before : after;
  const rows: { path: string; side: number }[] = start === undefined
    ? await candidates
    : await unionAll(
        candidates,
        db
          .select({ path: memories.path, side: sql<number>`1`.mapWith(Number).as('side') })
          .from(memories)
          .where(and(inWorkspace, anyOf(memories.memoryStoreId, storeIds), prefix, window.backward ? sql`${memories.path} >= ${start}` : sql`${memories.path} <= ${start}`))
          .limit(1),
      );

  const listOrder = window.backward ? -1 : 1;
  const paths = rows
    .filter((row) => row.side === 0)
    .map((row) => row.path)
    .sort((left, right) => listOrder * compareCodePoints(left, right));
  const more = paths.length > window.size;
  const pagePaths = paths.slice(0, window.size);
  if (window.backward) pagePaths.reverse();
  const behind = rows.some((row) => row.side === 1);
  if (pagePaths.length === 0) return { rows: [], hasNextPage: window.backward ? behind : more, hasPreviousPage: window.backward ? more : behind };

  const entries = await db
    .select(summaryColumns)
    .from(memories)
    .where(and(inWorkspace, anyOf(memories.memoryStoreId, storeIds), anyOf(memories.path, pagePaths)));
  const rank = new Map(stores.map((store, index) => [store.memoryStoreId, index]));
  const files = pagePaths.flatMap((path) => {
    const atPath = entries.filter((entry) => entry.path === path).sort((left, right) => rank.get(left.memoryStoreId)! - rank.get(right.memoryStoreId)!);
    // Every memory at the path was deleted or renamed between the two statements: the file is gone.
    if (atPath.length === 0) return [];
    const [memory, ...shadowed] = atPath as [MemorySummary, ...MemorySummary[]];
    return [{ path, memory, access: stores[rank.get(memory.memoryStoreId)!]!.access, shadowed }];
  });
  return { rows: files, hasNextPage: window.backward ? behind : more, hasPreviousPage: window.backward ? more : behind };
}

export async function countSessionFiles(db: Database, viewer: Viewer, session: SessionRecord, filter: { pathPrefix?: string }): Promise<number> {
  const storeIds = session.injectedMounts.map((mount) => mount.memoryStoreId);
  const prefix = pathPrefixFilter(filter.pathPrefix);
  if (storeIds.length === 0 || prefix === false) return 0;
  const [row] = await db
    .select({ total: countDistinct(memories.path) })
    .from(memories)
    .where(and(eq(memories.workspaceId, viewer.workspaceId), anyOf(memories.memoryStoreId, storeIds), prefix));
  return row?.total ?? 0;
}

// ---------------------------------------------------------------------------------------
// The agent's writes

async function writableSession(db: Database, viewer: Viewer, sessionId: string): Promise<SessionRecord> {
  assertCan(viewer, { type: 'sessions.writeMemory' });
  const [session] = await loadSessionsByIds(db, viewer, [sessionId]);
  if (!session) throw sessionNotFound(sessionId);
  if (session.environment === 'self_hosted') {
    throw new PermissionError('The session runs in a self-hosted environment: no memory store is injected, so the agent cannot write memories.');
  }
  return session;
}

const agentWriter = (session: SessionRecord): Writer => ({ workspaceId: session.workspaceId, actor: { kind: 'session', sessionId: session.id } });

/**
 * The agent writes into its session's default store only (the one READ_WRITE store), and
 * every write replaces the memory's metadata with {"source": "agent"}.
 */
export async function writeSessionMemory(
  db: Database,
  viewer: Viewer,
  input: { sessionId: string; path: string; content: string; expectedContentSha256?: string | null },
  now: Date,
): Promise<MemoryRecord> {
  const session = await writableSession(db, viewer, input.sessionId);
  return writeMemoryAtPath(
    db,
    agentWriter(session),
    { memoryStoreId: session.defaultMemoryStoreId, path: input.path, content: input.content, metadata: { ...AGENT_MEMORY_METADATA }, expectedContentSha256: input.expectedContentSha256 },
    now,
  );
}

export async function deleteSessionMemory(
  db: Database,
  viewer: Viewer,
  input: { sessionId: string; path: string; expectedContentSha256?: string | null },
  now: Date,
): Promise<DeletedMemory> {
  const session = await writableSession(db, viewer, input.sessionId);
  return deleteMemoryAtPath(db, agentWriter(session), { memoryStoreId: session.defaultMemoryStoreId, path: input.path, expectedContentSha256: input.expectedContentSha256 }, now);
}
