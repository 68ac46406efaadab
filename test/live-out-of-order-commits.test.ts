import { describe, expect, it } from 'vitest';
import { authenticate } from '../src/domain/api-keys.js';
import { asc, desc, eq, sql } from 'drizzle-orm';
import { memoryEvents } from '../src/db/schema.js';
import { encodeEventCursor, listWorkspaceEvents, readReplayPage, readWorkspaceChangeMark, type EventPosition } from '../src/domain/events.js';
import postgres from 'postgres';
import { ANNOUNCEMENTS_APPLICATION_NAME, ReservedApplicationNameError } from '../src/db/announcements.js';
import { createDb } from '../src/db/client.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { createMemoryAt, createStoreNamed, eventsOf, holdWriteOpen, subscribeSse, SUBSCRIBE_EVENTS, useSecondPool } from './support/live.js';
import { askAgain, settledMark } from './support/ask-again.js';
import { useTestServer } from './support/server.js';

/**
 * The hard case of an outbox: transaction A takes its event position first and commits
 * last; transaction B takes a later position and commits first. A reader that delivered B
 * and moved its cursor past it would never deliver A. PGlite runs one transaction at a time,
 * so the case exists on PostgreSQL only.
 */
const server = useTestServer();

/** Every committed row of the workspace, whatever readers may see yet. */
function committedRows(workspaceId: string) {
  return server.db.select().from(memoryEvents).where(eq(memoryEvents.workspaceId, workspaceId)).orderBy(asc(memoryEvents.id));
}

describe.skipIf(postgresUrl === undefined)('two writes committing out of the order of their event positions', () => {
  const other = useSecondPool(server);

  it('are read by a replay as far as the live reader has passed, whatever the horizon says: a position it passed is committed for good', async () => {
    const client = await server.newWorkspace();
    const storeA = await createStoreNamed(client, 'held');
    const storeB = await createStoreNamed(client, 'quick');
    const viewer = (await authenticate(server.db, client.token!))!;
    const transactionA = await holdWriteOpen(other().db, viewer, storeA, 'held.md', 'first position, last commit');
    try {
      await createMemoryAt(client, storeB, 'quick.md', 'second position, first commit');
      const rows = await committedRows(client.workspaceId);
      const quick = { xid: BigInt(String(rows.at(-1)!.xid)), id: Number(rows.at(-1)!.id) };
      const beforeQuick = { xid: BigInt(String(rows.at(-2)!.xid)), id: Number(rows.at(-2)!.id) };
      const read = async (known: EventPosition | null) =>
        (await readReplayPage(server.db, client.workspaceId, null, { xid: 0n, id: 0 }, 100, known)).events.map((event) => event.kind);
      // The horizon stops at A, which is running: B is not read, unless the position given is past it.
      expect(await read(null)).toEqual(['store_created', 'store_created']);
      expect(await read(beforeQuick)).toEqual(['store_created', 'store_created']);
      expect(await read(quick)).toEqual(['store_created', 'store_created', 'memory_created']);
    } finally {
      await transactionA.commit();
    }
    expect((await readReplayPage(server.db, client.workspaceId, null, { xid: 0n, id: 0 }, 100)).events).toHaveLength(4);
  });

  it('are both delivered, once each, the held one first, and the later one only once the held one has committed', async () => {
    const client = await server.newWorkspace();
    const storeA = await createStoreNamed(client, 'held');
    const storeB = await createStoreNamed(client, 'quick');
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS);
    const viewer = (await authenticate(server.db, client.token!))!;

    // A: locks its store, writes its memory and event (taking the earlier position), and stays open.
    const transactionA = await holdWriteOpen(other().db, viewer, storeA, 'held.md', 'first position, last commit');

    // B: a later position, committed first, through the API.
    const quick = await createMemoryAt(client, storeB, 'quick.md', 'second position, first commit');
    // Committed so far: the two stores and B (A's row is not visible yet) — and readers see
    // only the stores: B waits behind the still-running A.
    expect((await committedRows(client.workspaceId)).map((row) => row.kind)).toEqual(['store_created', 'store_created', 'memory_created']);
    expect((await listWorkspaceEvents(server.db, client.workspaceId)).map((row) => row.kind)).toEqual(['store_created', 'store_created']);

    // While A is open, B is held back: delivering it now would move the stream past A's position.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(stream.results).toEqual([]);

    await transactionA.commit();
    const events = eventsOf(await stream.waitFor(2));
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(eventsOf(stream.results).map((event) => [event.kind, event.memoryStoreId, event.memory?.path])).toEqual([
      ['MEMORY_CREATED', storeA, 'held.md'],
      ['MEMORY_CREATED', storeB, 'quick.md'],
    ]);
    expect(events[1]!.memoryId).toBe(quick.id);

    // In the table, A's row has the smaller id (it took its position first) and was committed last.
    const all = await listWorkspaceEvents(server.db, client.workspaceId);
    const [heldRow, quickRow] = all.slice(2);
    expect(heldRow!.memoryStoreId).toBe(storeA);
    expect(quickRow!.memoryStoreId).toBe(storeB);
    expect(heldRow!.position.id).toBeLessThan(quickRow!.position.id);

    // A stream resuming from before both replays both, once each, in the same order.
    const resumed = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, {
      after: encodeEventCursor(all[0]!.position, all[0]!.occurredAt),
    });
    const replayed = eventsOf(await resumed.waitFor(3));
    expect(replayed.map((event) => [event.kind, event.memoryStoreId])).toEqual([
      ['STORE_CREATED', storeB],
      ['MEMORY_CREATED', storeA],
      ['MEMORY_CREATED', storeB],
    ]);
    stream.close();
    resumed.close();
  });
});

/**
 * A transaction with an id of its own (what any write takes), older than everything written
 * after it, left open on a session of `url`: `end()` lets it finish (once, however often called).
 */
async function holdTransactionIdOpen(url: string, applicationName?: string): Promise<{ end(): Promise<void> }> {
  const session = postgres(url, { max: 1, onnotice: () => {}, ...(applicationName === undefined ? {} : { connection: { application_name: applicationName } }) });
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const transaction = session.begin(async (tx) => {
    await tx`select pg_current_xact_id()`;
    started();
    await ended;
  });
  await running;
  let ending: Promise<void> | undefined;
  return {
    end: () =>
      (ending ??= (async () => {
        end();
        await transaction;
        await session.end();
      })()),
  };
}

describe.skipIf(postgresUrl === undefined)('a transaction left open by a session that never writes memstore\'s events', () => {
  const cases: { name: string; open: () => Promise<{ end(): Promise<void> }> }[] = [
    {
      name: 'a writing transaction of another database of the same PostgreSQL server',
      open: async () => {
        const elsewhere = await createScratchPostgresDatabase('memstore_elsewhere');
        const held = await holdTransactionIdOpen(elsewhere.url);
        return {
          end: async () => {
            await held.end();
            await elsewhere.drop();
          },
        };
      },
    },
    {
      // Its NOTIFY takes an id before it queues for PostgreSQL's one notification lock,
      // which other databases' commits may hold.
      name: 'an announcement of this database, waiting with its transaction id',
      open: () => holdTransactionIdOpen(server.database.url!, ANNOUNCEMENTS_APPLICATION_NAME),
    },
  ];
  for (const { name, open } of cases) {
    it(`holds nothing back: writes in this database are delivered, and their change mark settles, while it runs (${name})`, async () => {
      const held = await open();
      try {
        const client = await server.newWorkspace();
        const storeId = await createStoreNamed(client, 'elsewhere');
        const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId });
        await createMemoryAt(client, storeId, 'delivered.md', 'while another transaction waits');
        expect(eventsOf(await stream.waitFor(1, 3000)).map((event) => event.memory.path)).toEqual(['delivered.md']);
        stream.close();
        // The open transaction holds every snapshot's xmin below this write's event, so only
        // the horizon, which leaves such sessions out, settles the mark. Asked again while a
        // transaction this test does not control (one that just ended, an ANALYZE) holds it
        // for a moment: the one held open here stays open all along, so a mark it held would
        // still read unsettled after the last time.
        const [newest] = await server.db.select().from(memoryEvents).where(eq(memoryEvents.workspaceId, client.workspaceId)).orderBy(desc(memoryEvents.xid), desc(memoryEvents.id)).limit(1);
        expect(await settledMark(server.db, client.workspaceId)).toBe(`${newest!.xid}.${newest!.id}`);
      } finally {
        await held.end();
      }
    });
  }

  it('but any other session of this database holds the mark while its transaction runs, even one that has written nothing yet', async () => {
    const held = await holdTransactionIdOpen(server.database.url!, 'memstore announcements, but not quite');
    try {
      const client = await server.newWorkspace();
      await createStoreNamed(client, 'held');
      expect(await readWorkspaceChangeMark(server.db, client.workspaceId)).toBe('unsettled');
      await held.end();
      expect(await settledMark(server.db, client.workspaceId)).toMatch(/^\d+\.\d+$/);
    } finally {
      await held.end();
    }
  });

  it("names the announcement session so whatever application_name DATABASE_URL gives the others, and a server refuses to name its own sessions so", async () => {
    const named = (name: string) => {
      const url = new URL(server.database.url!);
      url.searchParams.set('application_name', name);
      return url.toString();
    };
    const handle = await createDb({ databaseUrl: named('dashboard backend'), dataDir: 'memory://', poolSize: 1 });
    try {
      // A transaction ends: an announcement follows, on its own session.
      await handle.db.transaction(async (tx) => tx.execute(sql`select 1`));
      const sessions = async () =>
        (await server.db.execute(sql`select application_name as name from pg_stat_activity where datname = current_database() and application_name in ('dashboard backend', ${ANNOUNCEMENTS_APPLICATION_NAME}) order by 1`)) as unknown as { name: string }[];
      const seen = await askAgain(sessions, (rows) => rows.length < 2, { everyMs: 20 });
      expect([...new Set(seen.map((row) => row.name))]).toEqual(['dashboard backend', ANNOUNCEMENTS_APPLICATION_NAME]);
    } finally {
      await handle.close();
    }
    await expect(createDb({ databaseUrl: named(ANNOUNCEMENTS_APPLICATION_NAME), dataDir: 'memory://', poolSize: 1 })).rejects.toBeInstanceOf(ReservedApplicationNameError);
  });
});
