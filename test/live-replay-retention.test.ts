import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { rowsOf, type Database } from '../src/db/client.js';
import { createMemoryAt, createStoreNamed, eventsOf, interposeOnReplays, subscribeSse, SUBSCRIBE_EVENTS } from './support/live.js';
import { useTestServer, type TestClient } from './support/server.js';

/**
 * The retention sweep deletes events older than MEMSTORE_EVENT_RETENTION_DAYS, whatever a
 * replay still has to read. A replay never passes over what it deleted: a page read after the
 * sweep went past the stream's position ends the stream with CURSOR_EXPIRED, as a cursor
 * older than the retention does when the stream opens. A replay reads pages of half its
 * buffer (here 2 events), so that the sweep can come between two pages.
 */
const server = useTestServer({ live: { bufferEvents: 4 } });
const fetchApp = (url: string, init: RequestInit) => Promise.resolve(server.app.fetch(url, init));
const open = (token: string | null, variables: Record<string, unknown> = {}) => subscribeSse(fetchApp, 'http://memstore.test/graphql', token, SUBSCRIBE_EVENTS, variables);

/** Writes `paths` into a new store of `client`'s, each a memory, and resolves with their events as a stream of the store received them (with their cursors). */
async function writtenAndStreamed(client: TestClient, paths: string[]): Promise<{ storeId: string; events: Record<string, any>[] }> {
  const storeId = await createStoreNamed(client, 'retention');
  const stream = await open(client.token, { memoryStoreId: storeId });
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (const path of paths) await createMemoryAt(client, storeId, path, path);
  const events = eventsOf(await stream.waitFor(paths.length));
  stream.close();
  expect(events.map((event) => event.version.path)).toEqual(paths);
  return { storeId, events };
}

/** Makes the events of `memoryIds` older than the retention (their changes are as they were). */
async function age(db: Database, workspaceId: string, memoryIds: string[]): Promise<void> {
  await db.execute(sql`update memory_events set occurred_at = now() - interval '30 days' where workspace_id = ${workspaceId} and memory_id in ${sql.raw(`(${memoryIds.map((id) => `'${id}'`).join(', ')})`)}`);
}

const sweepMark = async (db: Database, workspaceId: string) =>
  rowsOf(await db.execute(sql`select xid::text as xid, id::int as id from memory_event_sweeps where workspace_id = ${workspaceId}`));
const remainingPaths = async (db: Database, workspaceId: string) =>
  rowsOf(await db.execute(sql`select path from memory_events where workspace_id = ${workspaceId} and kind = 'memory_created' order by xid, id`)).map((row) => row.path);

describe('a replay and the retention sweep', () => {
  it('ends with CURSOR_EXPIRED when the sweep deleted an event after the cursor, and replays in full from a cursor at or past the last event deleted', async () => {
    const client = await server.newWorkspace();
    const { events } = await writtenAndStreamed(client, ['a.md', 'b.md', 'c.md', 'd.md']);
    await age(server.db, client.workspaceId, [events[1]!.memoryId]);
    expect(await eventHubOf(server.app).sweep()).toBeGreaterThanOrEqual(1);
    expect(await remainingPaths(server.db, client.workspaceId)).toEqual(['a.md', 'c.md', 'd.md']);
    // The mark is the position of b.md's event, the one deleted.
    const [mark] = await sweepMark(server.db, client.workspaceId);
    expect(mark).toBeDefined();

    // From a.md's cursor, whose own event is still there and recent: b.md's is gone.
    const fromA = await open(client.token, { after: events[0]!.cursor });
    const [answer] = await fromA.waitFor(1);
    expect(answer!.errors?.[0]?.extensions?.code).toBe('CURSOR_EXPIRED');
    await fromA.ended;
    expect(fromA.results).toHaveLength(1);

    // From b.md's cursor (the event deleted last) and later ones: nothing after them is gone.
    const fromB = await open(client.token, { after: events[1]!.cursor });
    expect(eventsOf(await fromB.waitFor(2)).map((event) => event.version.path)).toEqual(['c.md', 'd.md']);
    const fromC = await open(client.token, { after: events[2]!.cursor });
    expect(eventsOf(await fromC.waitFor(1)).map((event) => event.version.path)).toEqual(['d.md']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect([fromB.results.length, fromC.results.length]).toEqual([2, 1]);
    fromB.close();
    fromC.close();
  });

  it('ends with CURSOR_EXPIRED, after the events it delivered, when the sweep deletes an event of a later page between two pages', async () => {
    const client = await server.newWorkspace();
    const { events } = await writtenAndStreamed(client, ['a.md', 'b.md', 'c.md', 'd.md', 'e.md', 'f.md']);
    const hub = eventHubOf(server.app);
    // After the replay's first page (b.md, c.md) is read, e.md's event expires and is swept.
    let pages = 0;
    let swept = 0;
    const restore = interposeOnReplays(hub, (target, property) =>
      property === 'execute'
        ? async (...args: Parameters<Database['execute']>) => {
            const rows = await target.execute(...args);
            pages += 1;
            if (pages === 1) {
              await age(server.db, client.workspaceId, [events[4]!.memoryId]);
              swept = await hub.sweep();
            }
            return rows;
          }
        : undefined,
    );
    try {
      const resumed = await open(client.token, { after: events[0]!.cursor });
      await resumed.waitFor(3);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(swept).toBeGreaterThanOrEqual(1);
      expect(await remainingPaths(server.db, client.workspaceId)).toEqual(['a.md', 'b.md', 'c.md', 'd.md', 'f.md']);
      // b.md and c.md, then the error: never d.md followed by f.md, with e.md passed over.
      expect(eventsOf(resumed.results.slice(0, 2)).map((event) => event.version.path)).toEqual(['b.md', 'c.md']);
      expect(resumed.results.slice(2).map((result) => result.errors?.[0]?.extensions?.code ?? result.data?.memoryEvents.version.path)).toEqual(['CURSOR_EXPIRED']);
      // Resuming from the last event delivered (c.md's) is expired too: e.md's, after it, is gone.
      const again = await open(client.token, { after: eventsOf(resumed.results.slice(0, 2))[1]!.cursor });
      expect((await again.waitFor(1))[0]!.errors?.[0]?.extensions?.code).toBe('CURSOR_EXPIRED');
    } finally {
      restore();
    }
  });

  it('moves each workspace\'s mark only forward, and only for the workspace whose events it deleted', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const { events } = await writtenAndStreamed(client, ['a.md', 'b.md', 'c.md', 'd.md']);
    await writtenAndStreamed(other, ['x.md', 'y.md']);
    await age(server.db, client.workspaceId, [events[2]!.memoryId]);
    await eventHubOf(server.app).sweep();
    const afterC = await sweepMark(server.db, client.workspaceId);
    // An older event swept later leaves the mark where it is.
    await age(server.db, client.workspaceId, [events[0]!.memoryId]);
    await eventHubOf(server.app).sweep();
    expect(await remainingPaths(server.db, client.workspaceId)).toEqual(['b.md', 'd.md']);
    expect(await sweepMark(server.db, client.workspaceId)).toEqual(afterC);
    expect(await sweepMark(server.db, other.workspaceId)).toEqual([]);
    // Resuming from b.md's cursor: c.md's event, after it, is gone.
    const resumed = await open(client.token, { after: events[1]!.cursor });
    expect((await resumed.waitFor(1))[0]!.errors?.[0]?.extensions?.code).toBe('CURSOR_EXPIRED');
  });
});
