import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { authenticate } from '../src/domain/api-keys.js';
import { silentLogger } from '../src/logger.js';
import { EventStream, type StreamSink } from '../src/subscriptions/event-stream.js';
import { replayStream } from '../src/subscriptions/replay.js';
import { STREAM_BUFFER_BYTES } from '../src/domain/limits.js';
import { createMemoryAt, createStoreNamed, eventsOf, interposeOnReplays, listenWithWebSocket, pollThrough, selectThrough, subscribeSse, subscribeWs, SUBSCRIBE_EVENTS, watchContentRead, type TestStream } from './support/live.js';
import { updateMemory } from './support/builders.js';
import { useTestServer, type TestClient } from './support/server.js';

/**
 * Events larger, together, than a stream's buffer (STREAM_BUFFER_BYTES of content) reach a
 * consumer that reads: a live batch takes the stream as far as its buffer holds, and the rest
 * is replayed from the table at the consumer's pace; a resuming stream replays in slices of
 * its buffer. Neither is cut off. The poller is driven by hand, so that the burst is one batch.
 */
const server = useTestServer({ live: { listen: false, pollIntervalMs: 3_600_000 } });
const LARGE = 'x'.repeat(100_000);
const TOTAL = 60;
const paths = (prefix: string, from = 0) => Array.from({ length: TOTAL - from }, (_, index) => `${prefix}${index + from}.md`);
const fetchApp = (url: string, init: RequestInit) => Promise.resolve(server.app.fetch(url, init));

/** Waits until the stream has `count` results or an error, and returns the paths of its events and the codes of its errors. */
async function received(stream: TestStream, count: number): Promise<{ paths: string[]; errors: unknown[] }> {
  for (let waited = 0; waited < 20_000 && stream.results.length < count && !stream.results.some((result) => result.errors); waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    paths: eventsOf(stream.results.filter((result) => result.data)).map((event) => event.version.path),
    errors: stream.results.filter((result) => result.errors).map((result) => result.errors![0]!.extensions?.code),
  };
}

/** A new workspace's store named `name` whose first event (`path` created) a dashboard saw: what a test resumes after. */
async function storeSeenOnce(name: string, path: string) {
  const client = await server.newWorkspace();
  const storeId = await createStoreNamed(client, name);
  return { client, storeId, hub: eventHubOf(server.app), firstCursor: await cursorOfFirst(client, storeId, path) };
}

/** A store's first event, `path` created, as a dashboard saw it: its cursor, to resume after. */
async function cursorOfFirst(client: TestClient, storeId: string, path: string): Promise<string> {
  const hub = eventHubOf(server.app);
  const watcher = await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await hub.poll();
  await createMemoryAt(client, storeId, path, 'first');
  await pollThrough(hub, server.db, client.workspaceId);
  const cursor = eventsOf(await watcher.waitFor(1))[0]!.cursor as string;
  watcher.close();
  return cursor;
}

describe('a burst of large events, more than a stream\'s buffer holds, in one batch', () => {
  it('reaches every stream that reads (SSE and WebSocket on real sockets, SSE through fetch), each event once, in order, none cut off', async () => {
    expect(TOTAL * 2 * LARGE.length).toBeGreaterThan(2 * STREAM_BUFFER_BYTES);
    const http = await listenWithWebSocket(server.app);
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'burst');
    const hub = eventHubOf(server.app);
    const streams = {
      sse: await subscribeSse(fetch, http.url, client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId }),
      ws: subscribeWs(http.wsUrl, client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId }),
      fetched: await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId }),
    };
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await hub.poll();
      for (const path of paths('b')) await createMemoryAt(client, storeId, path, LARGE);
      await pollThrough(hub, server.db, client.workspaceId);
      for (const stream of Object.values(streams)) expect(await received(stream, TOTAL)).toEqual({ paths: paths('b'), errors: [] });
      // Live again: the next write arrives as a live event, once.
      await createMemoryAt(client, storeId, 'after.md', 'small');
      await pollThrough(hub, server.db, client.workspaceId);
      for (const stream of Object.values(streams)) expect(await received(stream, TOTAL + 1)).toEqual({ paths: [...paths('b'), 'after.md'], errors: [] });
    } finally {
      for (const stream of Object.values(streams)) stream.close();
      await http.close();
    }
  }, 60_000);
});

describe('a stream that resumes behind large events, more than its buffer holds', () => {
  it('replays every event once, in order, and is not cut off (SSE on a real socket and through fetch), reading at most half its buffer of content at once', async () => {
    const http = await listenWithWebSocket(server.app);
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'resume');
    const hub = eventHubOf(server.app);
    const firstCursor = await cursorOfFirst(client, storeId, 'r0.md');
    for (const path of paths('r', 1)) await createMemoryAt(client, storeId, path, LARGE);
    const watched = watchContentRead(hub);
    const resumed = [
      await subscribeSse(fetch, http.url, client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId, after: firstCursor }),
      await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId, after: firstCursor }),
    ];
    try {
      for (const stream of resumed) expect(await received(stream, TOTAL - 1)).toEqual({ paths: paths('r', 1), errors: [] });
      // 59 memories of 100 KB were read slice by slice, not as one page.
      expect(watched.most()).toBeGreaterThan(0);
      expect(watched.most()).toBeLessThanOrEqual(STREAM_BUFFER_BYTES / 2);
    } finally {
      watched.restore();
      for (const stream of resumed) stream.close();
      await http.close();
    }
  }, 60_000);
});

describe('a replay whose read fails (a dropped connection, say)', () => {
  it('reads again from where it was, and delivers every event once', async () => {
    const { client, storeId, hub, firstCursor } = await storeSeenOnce('failing replay', 'f0.md');
    for (const path of ['f1.md', 'f2.md', 'f3.md']) await createMemoryAt(client, storeId, path, 'small');
    let failures = 0;
    const restore = interposeOnReplays(hub, (_target, property) =>
      property === 'execute' && failures === 0
        ? () => {
            failures += 1;
            return Promise.reject(Object.assign(new Error('Connection terminated unexpectedly'), { code: 'CONNECTION_CLOSED' }));
          }
        : undefined,
    );
    try {
      const resumed = await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId, after: firstCursor });
      expect(await received(resumed, 3)).toEqual({ paths: ['f1.md', 'f2.md', 'f3.md'], errors: [] });
      expect(failures).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(resumed.results).toHaveLength(3);
      resumed.close();
    } finally {
      restore();
    }
  }, 30_000);
});

describe('a replay whose memories grew after it read their sizes', () => {
  it('delivers them as its consumer\'s buffer has room, and is not cut off', async () => {
    const { client, storeId, hub, firstCursor } = await storeSeenOnce('growing', 'g.md');
    // 50 small memories: one slice by their sizes. Each grows to 100 KB (the memory as it is
    // now goes with its event) between the page's read and the slice's load: 5 MB together.
    const grown = 50;
    const ids: string[] = [];
    for (let index = 0; index < grown; index += 1) ids.push((await createMemoryAt(client, storeId, `g${index}.md`, 'small')).id);
    let grow: Promise<unknown> | null = null;
    const restore = interposeOnReplays(hub, (target, property) =>
      property === 'select'
        ? selectThrough(target, async (rows) => {
            grow ??= Promise.all(ids.map((id) => updateMemory(client, { id, content: LARGE })));
            await grow;
            return rows();
          })
        : undefined,
    );
    try {
      const resumed = await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId, after: firstCursor });
      await received(resumed, grown);
      await pollThrough(hub, server.db, client.workspaceId);
      const { paths: seen, errors } = await received(resumed, 2 * grown);
      expect(errors).toEqual([]);
      // The 50 creations (their memories as they are now), then the 50 updates (in the order they committed), once each.
      expect(seen.slice(0, grown)).toEqual(ids.map((_, index) => `g${index}.md`));
      expect(seen.slice(grown).sort()).toEqual(ids.map((_, index) => `g${index}.md`).sort());
      expect(eventsOf(resumed.results.filter((result) => result.data)).slice(0, grown).every((event) => event.memory.content === LARGE)).toBe(true);
      resumed.close();
    } finally {
      restore();
    }
  }, 60_000);
});

describe('a replay whose consumer\'s connection drains slowly, with nothing of its own waiting', () => {
  it('counts the connection\'s unsent bytes going down as reading, and is cut off once they stop going down', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'slow link');
    for (const path of ['s1.md', 's2.md']) await createMemoryAt(client, storeId, path, 'small');
    const viewer = (await authenticate(server.db, client.token!))!;
    /** A connection another stream's bytes keep saturated for `busyMs`, draining 1 KB every 50 ms meanwhile unless `stuck`. */
    const replayOver = async (busyMs: number, stuck: boolean) => {
      const startedAt = performance.now();
      let unsent = 1_000_000;
      const taken: string[] = [];
      const sink: StreamSink = {
        attach: () => {},
        send: (payloads) => taken.push(...payloads.map((payload) => payload.event.path ?? payload.event.kind)),
        pending: 0,
        pendingBytes: 0,
        get saturated() {
          return performance.now() - startedAt < busyMs;
        },
        get unsent() {
          if (!stuck) unsent = Math.max(0, 1_000_000 - Math.floor((performance.now() - startedAt) / 50) * 1_000);
          return unsent;
        },
        close: () => {},
      };
      const stream = new EventStream(viewer, { memoryStoreId: storeId, pathPrefix: null }, { xid: 0n, id: 0 }, 100, () => {}, { sink });
      await replayStream(stream, server.db, { batchSize: 500, bufferEvents: 100, stallMs: 500 }, silentLogger, () => null);
      return { taken, open: stream.isOpen };
    };
    // Saturated for 1.5 s, three times the stall time, draining all the while: replayed whole, live.
    expect(await replayOver(1_500, false)).toEqual({ taken: ['store_created', 's1.md', 's2.md'], open: true });
    // Saturated and not draining: cut off after the stall time, nothing replayed.
    expect(await replayOver(1_500, true)).toEqual({ taken: [], open: false });
  }, 30_000);
});
