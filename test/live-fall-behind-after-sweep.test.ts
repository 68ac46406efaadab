import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { rowsOf } from '../src/db/client.js';
import type { EventStream } from '../src/subscriptions/event-stream.js';
import { createMemoryAt, createStoreNamed, pollThrough, subscribeSse, SUBSCRIBE_EVENTS } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * A live stream that falls behind its buffer replays from right before the first event that
 * did not fit, not from the last event it was given: a stream of a quiet store (or path) was
 * given nothing while other stores' events went by, and the retention sweep may since have
 * deleted some of those (its mark is per workspace). Replaying from its last event given,
 * the stream ended with CURSOR_EXPIRED though it had missed nothing.
 */
const server = useTestServer({ live: { bufferEvents: 4, listen: false, pollIntervalMs: 3_600_000 } });
const fetchApp = (url: string, init: RequestInit) => Promise.resolve(server.app.fetch(url, init));

const streamsOf = (workspaceId: string) => [...((eventHubOf(server.app) as unknown as { streams: Map<string, Set<EventStream>> }).streams.get(workspaceId) ?? [])];

describe('a filtered live stream that falls behind after the sweep deleted other events', () => {
  for (const [filter, aged] of [['memoryStoreId', 2], ['pathPrefix', 2], ['memoryStoreId', 0]] as const) {
    it(`${aged === 0 ? '(nothing swept) ' : ''}by ${filter}: replays the event that did not fit, and is not ended with CURSOR_EXPIRED`, async () => {
      const hub = eventHubOf(server.app);
      const client = await server.newWorkspace();
      const storeA = await createStoreNamed(client, 'quiet');
      const storeB = await createStoreNamed(client, 'busy');
      let read!: () => void;
      const gate = new Promise<void>((resolve) => (read = resolve));
      const variables = filter === 'memoryStoreId' ? { memoryStoreId: storeA } : { pathPrefix: 'a/' };
      const stream = await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, variables, { from: gate });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await pollThrough(hub, server.db, client.workspaceId);
      const [live] = streamsOf(client.workspaceId);
      expect(live).toBeDefined();
      // The stream's own events, unread by its consumer, until its buffer is full (no overflow: one at a time).
      const own: string[] = [];
      for (let index = 0; live!.buffered < 4 && index < 20; index += 1) {
        const path = `a/${index}.md`;
        await createMemoryAt(client, storeA, path, path);
        own.push(path);
        await pollThrough(hub, server.db, client.workspaceId);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(live!.buffered).toBe(4);
      expect(live!.isOpen).toBe(true);
      // Another store's (or path's) events, later aged past the retention and swept: none of them is the stream's.
      const others = [];
      for (const path of ['b/1.md', 'b/2.md', 'b/3.md']) others.push(await createMemoryAt(client, storeB, path, path));
      await pollThrough(hub, server.db, client.workspaceId);
      await server.db.execute(
        sql`update memory_events set occurred_at = now() - ${aged === 0 ? sql`interval '1 second'` : sql`interval '30 days'`} where workspace_id = ${client.workspaceId} and memory_id in (${sql.raw(others.slice(0, Math.max(aged, 1)).map((memory) => `'${memory.id}'`).join(', '))})`,
      );
      expect(await hub.sweep()).toBe(aged);
      // Every event of the stream's store/path is still there.
      const kept = rowsOf(await server.db.execute(sql`select path from memory_events where workspace_id = ${client.workspaceId} and path like 'a/%' order by xid, id`)).map((row) => row.path);
      expect(kept).toEqual(own);
      // One more of its own: the buffer is full, so it falls behind and replays from its position.
      await createMemoryAt(client, storeA, 'a/next.md', 'next');
      await pollThrough(hub, server.db, client.workspaceId);
      read();
      await stream.waitFor(own.length + 1, 10_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const got = stream.results.map((result) => result.errors?.[0]?.extensions?.code ?? result.data?.memoryEvents.version.path);
      stream.close();
      expect(got).toEqual([...own, 'a/next.md']);
    });
  }
});
