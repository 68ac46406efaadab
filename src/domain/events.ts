import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import { rowsOf, type Database } from '../db/client.js';
import { memories, memoryEvents, memoryStores, memoryVersions } from '../db/schema.js';
import { InvalidRequestError } from './errors.js';

/**
 * Live updates are read from an outbox: every change that emits an event inserts its row
 * into `memory_events` in the change's own transaction (`recordEvent`), so an event exists
 * exactly when its change committed. Readers never trust a notification; they read the table.
 * Writes are announced to every instance's readers after they end, outside the writing
 * transaction (db/announcements.ts): a transaction's end by the database handle, a
 * one-statement write by `writeEnded`.
 *
 * Positions. An event's position is (`xid`, `id`): the writing transaction's id, then the
 * row's identity value. Readers only take events whose xid is below the oldest transaction
 * still running that may write them (EVENT_HORIZON, the "horizon": one of this database,
 * other than its announcement sessions and autovacuum workers): every such transaction
 * below it has ended, so that part of the table never changes again, and a reader that has
 * delivered everything up to a position can never see a new event behind it. A transaction
 * that took its position first and commits last holds the horizon back, and the events
 * committed after it wait for it (test/live-out-of-order-commits.test.ts).
 *
 * Order within a store: every transaction that writes a store's events locks the store's row
 * (or inserts it) as its first write, and PostgreSQL gives a transaction its xid at its first
 * write; the lock is held to commit, so the xids of one store's changes rise in commit order.
 */

export type MemoryEventKind = (typeof memoryEvents.kind.enumValues)[number];

export interface NewMemoryEvent {
  workspaceId: string;
  kind: MemoryEventKind;
  memoryStoreId: string;
  memoryId?: string | null;
  memoryVersionId?: string | null;
  path?: string | null;
  previousPath?: string | null;
  occurredAt: Date;
}

/** A committed event as streams deliver it. */
export interface MemoryEventRecord {
  workspaceId: string;
  kind: MemoryEventKind;
  memoryStoreId: string;
  memoryId: string | null;
  memoryVersionId: string | null;
  path: string | null;
  previousPath: string | null;
  occurredAt: Date;
  position: EventPosition;
}

/** Where an event stands in delivery order. `xid` is a decimal string (xid8 passes 2^53). */
export interface EventPosition {
  xid: bigint;
  id: number;
}

export function comparePositions(left: EventPosition, right: EventPosition): number {
  if (left.xid !== right.xid) return left.xid < right.xid ? -1 : 1;
  return left.id - right.id;
}

/** The position right before an event's: a stream there has everything before that event, and not the event. */
export function positionBefore(position: EventPosition): EventPosition {
  return { xid: position.xid, id: position.id - 1 };
}

/** Inserts the event of a change, in the change's transaction (the caller awaits it with the change's other statements). */
export function recordEvent(tx: Database, event: NewMemoryEvent) {
  return tx.insert(memoryEvents).values({
    workspaceId: event.workspaceId,
    kind: event.kind,
    memoryStoreId: event.memoryStoreId,
    memoryId: event.memoryId ?? null,
    memoryVersionId: event.memoryVersionId ?? null,
    path: event.path ?? null,
    previousPath: event.previousPath ?? null,
    occurredAt: event.occurredAt,
  });
}

/**
 * The same insert as a data-modifying CTE body for a one-statement write: one event of
 * `kind` for each memory row of `source` (a CTE with workspace_id, memory_store_id, id, path
 * and the version id `versionId`, a value or a placeholder, timed by `occurredAt`). The statement's runner
 * announces its end (`writeEnded`).
 */
export function recordEventsOf(source: string, kind: MemoryEventKind, versionId: string | Placeholder, occurredAt: SQL): SQL {
  return sql`insert into memory_events (workspace_id, kind, memory_store_id, memory_id, memory_version_id, path, occurred_at)
    select ${sql.raw(`${source}.workspace_id`)}, ${kind}::memory_event_kind, ${sql.raw(`${source}.memory_store_id`)}, ${sql.raw(`${source}.id`)},
      ${versionId}::text, ${sql.raw(`${source}.path`)}, ${occurredAt} from ${sql.raw(source)}`;
}

// ---------------------------------------------------------------------------------------
// Cursors

const CURSOR_PREFIX = 'ev1:';

/** The opaque cursor of an event: its position and its time (for CURSOR_EXPIRED). */
export function encodeEventCursor(position: EventPosition, occurredAt: Date): string {
  return Buffer.from(`${CURSOR_PREFIX}${position.xid}:${position.id}:${occurredAt.getTime()}`, 'utf8').toString('base64url');
}

export interface DecodedCursor {
  position: EventPosition;
  occurredAt: Date;
}

const CURSOR_BODY = /^(\d{1,20}):(\d{1,16}):(\d{1,15})$/;

export function decodeEventCursor(cursor: string): DecodedCursor {
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const match = text.startsWith(CURSOR_PREFIX) ? CURSOR_BODY.exec(text.slice(CURSOR_PREFIX.length)) : null;
  // A transaction id is 64 bits (xid8); an event's id is below 2^53.
  if (!match || BigInt(match[1]!) > MAX_XID8 || !Number.isSafeInteger(Number(match[2]))) throw notACursor();
  return { position: { xid: BigInt(match[1]!), id: Number(match[2]) }, occurredAt: new Date(Number(match[3])) };
}

const MAX_XID8 = 2n ** 64n - 1n;

const notACursor = () => new InvalidRequestError([{ field: ['after'], message: 'is not a cursor of memoryEvents' }], '`after` is not a cursor of memoryEvents.');

/**
 * Refuses a cursor past `horizon` (currentEventHorizon: every event at or past it is still
 * to come): no event ever delivered is there, on any instance, so it was never given out,
 * and a stream from it would skip every event until the transaction ids reach it.
 */
export function assertCursorIssued(cursor: DecodedCursor, horizon: EventPosition): void {
  if (comparePositions(cursor.position, horizon) > 0) throw notACursor();
}

// ---------------------------------------------------------------------------------------
// Reads

function eventOf(row: Record<string, unknown>): MemoryEventRecord {
  return {
    workspaceId: row.workspace_id as string,
    kind: row.kind as MemoryEventKind,
    memoryStoreId: row.memory_store_id as string,
    memoryId: (row.memory_id as string | null) ?? null,
    memoryVersionId: (row.memory_version_id as string | null) ?? null,
    path: (row.path as string | null) ?? null,
    previousPath: (row.previous_path as string | null) ?? null,
    occurredAt: new Date(Number(row.occurred_ms)),
    position: { xid: BigInt(row.xid as string), id: Number(row.id) },
  };
}

const EVENT_COLUMNS = sql.raw(
  'e.workspace_id, e.id, e.xid::text as xid, e.kind, e.memory_store_id, e.memory_id, e.memory_version_id, e.path, e.previous_path, ' +
    '(extract(epoch from e.occurred_at) * 1000)::float8 as occurred_ms',
);

/**
 * The horizon of the statement's snapshot: the oldest transaction of this database still
 * running in it, or the snapshot's xmax when none runs. The rule is the database function
 * `memstore_event_horizon()` (drizzle/0009_read_functions.sql, which says why transactions of
 * other databases are left out, and 0010, which leaves out those of this database's
 * announcement sessions and autovacuum workers: none of them ever writes an event); as a
 * subquery it is worked out once per statement.
 */
const EVENT_HORIZON = sql.raw('(select memstore_event_horizon())');

/**
 * A workspace's change mark, for conditional reads (an answer's ETag): as of the statement's
 * snapshot, the position of the workspace's newest event as `<xid>.<id>`, `empty` when it has
 * none, or `unsettled` when the mark cannot yet be trusted. Every change to the workspace's
 * stores, memories and versions writes an event, so two equal settled marks mean nothing
 * those tables hold for the workspace changed in between.
 *
 * Why "settled" is enough. The mark is settled when the newest event's xid is below the
 * statement's horizon (EVENT_HORIZON: the oldest transaction then running that may write
 * events, or the next xid when none ran; the snapshot's xmin, which may wait for other databases
 * too, is tried first because it costs nothing). Every transaction below the horizon had
 * ended, so any change that commits later belongs to a transaction at or above it, and its
 * event's position is above the mark: the newest event, and so the mark, differ next time.
 * Before that (the newest event above a transaction still running, which may yet commit an
 * event behind it) no mark is given. Positions only grow: events are never updated, and the
 * retention sweep (deleteExpiredEvents) keeps each workspace's newest event, however old,
 * so the mark never returns to an earlier value.
 */
/** Written by `memstore_change_mark` (drizzle/0009_read_functions.sql), as `empty` is. */
export const CHANGE_MARK_UNSETTLED = 'unsettled';

/**
 * The change mark's SQL, for the workspace whose id `workspaceId` names: an expression of
 * the statement it goes into (a column such as `api_key."workspace_id"`), never a value.
 */
export function workspaceChangeMarkSql(workspaceId: string): string {
  // The function (drizzle/0009_read_functions.sql) tries the snapshot's xmin first, which
  // costs nothing and mostly settles the mark, and works out the horizon only when it does
  // not; written into the statement, the horizon's subqueries were set up on every run.
  return `memstore_change_mark(${workspaceId})`;
}

/** A workspace's change mark now (see workspaceChangeMarkSql). */
export async function readWorkspaceChangeMark(db: Database, workspaceId: string): Promise<string> {
  const [row] = rowsOf(await db.execute(sql`select memstore_change_mark(${workspaceId}::text) as mark`));
  return row!.mark as string;
}

/** Position of "now": before every event a reader will see from here on. */
export async function currentEventHorizon(db: Database): Promise<EventPosition> {
  const [row] = rowsOf(await db.execute(sql`select ${EVENT_HORIZON}::text as horizon`));
  return { xid: BigInt(row!.horizon as string), id: 0 };
}

/**
 * The next committed events of every workspace after `after`, in delivery order, at most
 * `limit`: one statement, whatever the number of streams it feeds.
 */
export async function readEventBatch(db: Database, after: EventPosition, limit: number): Promise<MemoryEventRecord[]> {
  const result = await db.execute(sql`select ${EVENT_COLUMNS} from memory_events e
    where (e.xid, e.id) > (${after.xid.toString()}::xid8, ${after.id}::bigint)
      and e.xid < ${EVENT_HORIZON}
    order by e.xid, e.id limit ${limit}`);
  return rowsOf(result).map(eventOf);
}

/** An event a replay reads, with what its memory (as it is now) and its version hold in content: a replay loads what its events are about in slices of about so much. */
export interface ReplayEventRecord extends MemoryEventRecord {
  contentBytes: number;
}

/** A page of a replay: its events, and whether the retention sweep had deleted any event of the workspace after the page's start (its events then have a gap). */
export interface ReplayPage {
  events: ReplayEventRecord[];
  swept: boolean;
}

/**
 * A workspace's committed events after `after` (one store's, when given), for a stream that
 * replays, and whether the sweep has deleted any of the workspace's events after `after`
 * (its mark, memory_event_sweeps, is past it), read in the same snapshot: a page that says
 * nothing was swept holds every matching event after `after` up to its last. `known`: a
 * position every event at or before which is committed for good (the live reader's, which
 * read them below an earlier horizon): those are read whatever the horizon says now. The
 * horizon may read lower for an instant than it did (a transaction of another database that
 * ends while it is computed, drizzle/0010); a replay that then missed events the live reader
 * had already handed on would leave a gap where it joins the live events.
 */
export async function readReplayPage(
  db: Database,
  workspaceId: string,
  memoryStoreId: string | null,
  after: EventPosition,
  limit: number,
  known: EventPosition | null = null,
): Promise<ReplayPage> {
  const knownXid = known?.xid.toString() ?? null;
  const afterXid = after.xid.toString();
  // The horizon is computed once (it looks at pg_stat_activity), and read twice. The page is
  // joined to the one row of the sweep's answer, so that an empty page still carries it.
  const result = await db.execute(sql`with horizon as materialized (select ${EVENT_HORIZON} as at)
    select flag.swept, page.* from (select exists (select 1 from memory_event_sweeps s
        where s.workspace_id = ${workspaceId} and (s.xid, s.id) > (${afterXid}::xid8, ${after.id}::bigint)) as swept) flag
    left join lateral (select ${EVENT_COLUMNS}, e.xid as order_xid,
      coalesce((select m.content_size_bytes from memories m where m.workspace_id = e.workspace_id and m.id = e.memory_id), 0)
        + coalesce((select v.content_size_bytes from memory_versions v where v.workspace_id = e.workspace_id and v.id = e.memory_version_id), 0) as content_bytes
      from memory_events e
      where e.workspace_id = ${workspaceId} and (${memoryStoreId}::text is null or e.memory_store_id = ${memoryStoreId}::text)
        and (e.xid, e.id) > (${afterXid}::xid8, ${after.id}::bigint)
        and e.xid <= greatest((select at from horizon), ${knownXid}::xid8)
        and (e.xid < (select at from horizon) or (e.xid, e.id) <= (${knownXid}::xid8, ${known?.id ?? null}::bigint))
      order by e.xid, e.id limit ${limit}) page on true
    order by page.order_xid, page.id`);
  const rows = rowsOf(result);
  return {
    events: rows.filter((row) => row.id !== null).map((row) => Object.assign(eventOf(row), { contentBytes: Number(row.content_bytes) })),
    swept: rows[0]?.swept === true,
  };
}

/**
 * Deletes up to `limit` events older than `before`, but never a workspace's newest event (by
 * position): that one is the workspace's change mark, which must never go back to an older
 * value or to `empty` (a polled answer's tag would match again after a change). In the same
 * statement, each workspace's sweep mark (memory_event_sweeps) moves up to the latest position
 * deleted, so that a replay past it knows (readReplayPage). Resolves with how many it deleted
 * (the sweep repeats while it is `limit`).
 */
export async function deleteExpiredEvents(db: Database, before: Date, limit: number): Promise<number> {
  const result = await db.execute(sql`with deleted as (delete from memory_events where (workspace_id, id) in (
      select e.workspace_id, e.id from memory_events e where e.occurred_at < ${before.toISOString()}::timestamptz
        and exists (select 1 from memory_events newer where newer.workspace_id = e.workspace_id and (newer.xid, newer.id) > (e.xid, e.id))
      limit ${limit}) returning workspace_id, xid, id),
    marked as (insert into memory_event_sweeps as mark (workspace_id, xid, id)
      select distinct on (workspace_id) workspace_id, xid, id from deleted order by workspace_id, xid desc, id desc
      on conflict (workspace_id) do update set xid = excluded.xid, id = excluded.id
        where (excluded.xid, excluded.id) > (mark.xid, mark.id))
    select count(*)::int as deleted from deleted`);
  return Number(rowsOf(result)[0]!.deleted);
}

/** The events of a workspace, in delivery order (tests compare streams with it). */
export async function listWorkspaceEvents(db: Database, workspaceId: string): Promise<MemoryEventRecord[]> {
  return (await readReplayPage(db, workspaceId, null, { xid: 0n, id: 0 }, 1_000_000)).events;
}

// ---------------------------------------------------------------------------------------
// What events are about

// The row types, from the tables (the modules that name them import this one).
type MemoryStoreRecord = typeof memoryStores.$inferSelect;
type MemoryRecord = typeof memories.$inferSelect;
type MemoryVersionRecord = typeof memoryVersions.$inferSelect;

export interface EventSubjects {
  /** Keyed by `${workspaceId}\0${id}`. */
  stores: Map<string, MemoryStoreRecord>;
  memories: Map<string, MemoryRecord>;
  versions: Map<string, MemoryVersionRecord>;
}

export function subjectKey(workspaceId: string, id: string): string {
  return `${workspaceId}\u0000${id}`;
}

/** Pairs of (workspace, id) as two array parameters, in one statement's text whatever their number. */
function pairsOf(events: readonly MemoryEventRecord[], idOf: (event: MemoryEventRecord) => string | null): { workspaces: string[]; ids: string[] } {
  const seen = new Set<string>();
  const workspaces: string[] = [];
  const ids: string[] = [];
  for (const event of events) {
    const id = idOf(event);
    if (id === null || seen.has(subjectKey(event.workspaceId, id))) continue;
    seen.add(subjectKey(event.workspaceId, id));
    workspaces.push(event.workspaceId);
    ids.push(id);
  }
  return { workspaces, ids };
}

function pairFilter(table: typeof memoryStores | typeof memories | typeof memoryVersions, pairs: { workspaces: string[]; ids: string[] }): SQL {
  return sql`(${table.workspaceId}, ${table.id}) in (select * from unnest(${sql.param(pairs.workspaces)}::text[], ${sql.param(pairs.ids)}::text[]))`;
}

/** No stores, memories or versions yet. */
export function noEventSubjects(): EventSubjects {
  return { stores: new Map(), memories: new Map(), versions: new Map() };
}

/**
 * The stores, live memories and versions a batch of events is about, as they are now: at
 * most three statements for the whole batch, whatever the number of streams it goes to.
 * Added to `subjects` when given (what earlier events of the batch are about).
 */
export async function loadEventSubjects(db: Database, events: readonly MemoryEventRecord[], subjects = noEventSubjects()): Promise<EventSubjects> {
  const stores = pairsOf(events, (event) => event.memoryStoreId);
  const memoryPairs = pairsOf(events, (event) => event.memoryId);
  const versionPairs = pairsOf(events, (event) => event.memoryVersionId);
  const [storeRows, memoryRows, versionRows] = await Promise.all([
    stores.ids.length ? db.select().from(memoryStores).where(pairFilter(memoryStores, stores)) : [],
    memoryPairs.ids.length ? db.select().from(memories).where(pairFilter(memories, memoryPairs)) : [],
    versionPairs.ids.length ? db.select().from(memoryVersions).where(pairFilter(memoryVersions, versionPairs)) : [],
  ]);
  for (const row of storeRows) subjects.stores.set(subjectKey(row.workspaceId, row.id), row);
  for (const row of memoryRows) subjects.memories.set(subjectKey(row.workspaceId, row.id), row);
  for (const row of versionRows) subjects.versions.set(subjectKey(row.workspaceId, row.id), row);
  return subjects;
}
