import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { STREAM_BUFFER_BYTES } from '../src/domain/limits.js';
import { createMemoryAt, createStoreNamed, eventsOf, pollThrough, subscribeSse, SUBSCRIBE_EVENTS, watchContentRead, type ReadingPace, type TestStream } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * An instance's replays together hold at most its replay budget of content: the slices they
 * have loaded and the replayed events that wait for their consumers. Here the budget is one
 * full slice (half a stream's buffer), and each stream resumes behind 18 memories of 100 KB
 * (each event carries its memory and its version: about 200 KB), two slices, of 10 events and
 * of 8. The poller is driven by hand; the streams read through app.fetch, at the pace each
 * test sets.
 */
const BUDGET = STREAM_BUFFER_BYTES / 2;
const STALL_MS = 5_000;
const server = useTestServer({ live: { listen: false, pollIntervalMs: 3_600_000, replayBudgetBytes: BUDGET, replayStallMs: STALL_MS } });
const LARGE = 'x'.repeat(100_000);
const TOTAL = 18;
const fetchApp = (url: string, init: RequestInit) => Promise.resolve(server.app.fetch(url, init));

/** A new workspace's store seen once by a dashboard (its first memory, `first.md`), then TOTAL large memories: what a test resumes behind. */
async function storeBehindLargeMemories(name: string) {
  const client = await server.newWorkspace();
  const storeId = await createStoreNamed(client, name);
  const hub = eventHubOf(server.app);
  const watcher = await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await hub.poll();
  await createMemoryAt(client, storeId, 'first.md', 'first');
  await pollThrough(hub, server.db, client.workspaceId);
  const cursor = eventsOf(await watcher.waitFor(1))[0]!.cursor as string;
  watcher.close();
  const paths = Array.from({ length: TOTAL }, (_, index) => `${name}-${index}.md`);
  for (const path of paths) await createMemoryAt(client, storeId, path, LARGE);
  const resume = (pace: ReadingPace = {}) =>
    subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId, after: cursor }, pace);
  /** The workspace's streams open on the instance. */
  const streamsOpen = () => (hub as unknown as { streams: Map<string, Set<unknown>> }).streams.get(client.workspaceId)?.size ?? 0;
  return { hub, paths, resume, streamsOpen };
}

/** The paths of a stream's events once it has `count` results (or an error), and the codes of its errors. */
async function received(stream: TestStream, count: number, timeoutMs = 30_000): Promise<{ paths: string[]; errors: unknown[] }> {
  for (let waited = 0; waited < timeoutMs && stream.results.length < count && !stream.results.some((result) => result.errors); waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    paths: eventsOf(stream.results.filter((result) => result.data)).map((event) => event.version.path),
    errors: stream.results.filter((result) => result.errors).map((result) => result.errors![0]!.extensions?.code),
  };
}

async function until(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  for (let waited = 0; !condition(); waited += 20) {
    if (waited > timeoutMs) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('an instance whose streams resume behind more content than its replay budget', () => {
  it('loads at most the budget for consumers that do not read yet, keeps the rest in line, and then replays every event once, in order, to each stream that reads (one that closes while in line gives up its place)', async () => {
    const { hub, paths, resume } = await storeBehindLargeMemories('paused');
    const watched = watchContentRead(hub);
    let read!: () => void;
    const reading = new Promise<void>((resolve) => (read = resolve));
    const streams: TestStream[] = [];
    try {
      for (let index = 0; index < 3; index += 1) streams.push(await resume({ from: reading }));
      // A fourth reads as events come: it too waits in line for room, with nothing to read yet.
      const leaving = await resume();
      // One replay has loaded its first slice (10 events, 2 MB of content); the three others wait for room.
      await until(() => watched.total() > BUDGET * 0.8);
      await until(() => hub.replayBudget.waiting === 3 || watched.total() > BUDGET);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(watched.total()).toBeLessThanOrEqual(BUDGET);
      expect(hub.replayBudget.waiting).toBe(3);
      expect(hub.replayBudget.heldBytes).toBeLessThanOrEqual(BUDGET);
      // The one that reads leaves while in line: it gives up its place, and nothing was loaded for it.
      leaving.close();
      await until(() => hub.replayBudget.waiting === 2);
      expect(leaving.results).toEqual([]);
      read();
      for (const stream of streams) expect(await received(stream, TOTAL)).toEqual({ paths, errors: [] });
      // Each of the three read its 3.6 MB, one slice at a time.
      expect(watched.total()).toBeGreaterThanOrEqual(3 * TOTAL * 2 * LARGE.length);
      await until(() => hub.replayBudget.heldBytes === 0 && hub.replayBudget.waiting === 0);
    } finally {
      watched.restore();
      read();
      for (const stream of streams) stream.close();
    }
  }, 60_000);

  it('does not cut off a stream that waits its turn longer than the stall time, while one that reads slowly holds the budget', async () => {
    const { hub, paths, resume } = await storeBehindLargeMemories('slow');
    const watched = watchContentRead(hub);
    const streams: TestStream[] = [];
    try {
      // An event every 800 ms: the 10 events of a slice take 8 s, longer than the stall time.
      streams.push(await resume({ everyMs: 800 }));
      await until(() => watched.total() > 0);
      const startedAt = performance.now();
      streams.push(await resume());
      await until(() => streams[1]!.results.length > 0, 20_000);
      const waitedMs = performance.now() - startedAt;
      expect(waitedMs).toBeGreaterThan(STALL_MS);
      expect(await received(streams[1]!, TOTAL)).toEqual({ paths, errors: [] });
      expect(await received(streams[0]!, TOTAL)).toEqual({ paths, errors: [] });
    } finally {
      watched.restore();
      for (const stream of streams) stream.close();
    }
  }, 60_000);

  it('cuts off, while others wait for room, a stream that went live holding replayed events its consumer stopped reading', async () => {
    const { hub, paths, resume, streamsOpen } = await storeBehindLargeMemories('gone');
    // It reads 6 events and stops: it goes live with the other 12 (2.4 MB) waiting for it.
    const gone = await resume({ chunks: 6 });
    await until(() => hub.replayBudget.heldBytes > BUDGET && hub.replayBudget.waiting === 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hub.replayBudget.heldBytes).toBeGreaterThan(BUDGET);
    const startedAt = performance.now();
    const reading = await resume();
    try {
      expect(await received(reading, TOTAL)).toEqual({ paths, errors: [] });
      // It waited until the one that stopped reading had read nothing for the stall time, and was cut off.
      expect(performance.now() - startedAt).toBeGreaterThan(STALL_MS);
      expect(streamsOpen()).toBe(1);
      expect(gone.results.length).toBeLessThanOrEqual(6);
    } finally {
      gone.close();
      reading.close();
    }
  }, 60_000);

  it('does not count the live events that streams falling behind share: only what their replays load', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'burst');
    const hub = eventHubOf(server.app);
    const streams = [];
    // Each reads an event every 30 ms: the 4 MB it took of the burst wait for it a while.
    for (let index = 0; index < 3; index += 1) streams.push(await subscribeSse(fetchApp, 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId }, { everyMs: 30 }));
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, hub.replayBudget.heldBytes)), 5);
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await hub.poll();
      // 30 events of about 200 KB in one batch (6 MB): each stream takes 4 MB of them, shared, and replays the rest.
      const burst = Array.from({ length: 30 }, (_, index) => `burst-${index}.md`);
      for (const path of burst) await createMemoryAt(client, storeId, path, LARGE);
      await pollThrough(hub, server.db, client.workspaceId);
      for (const stream of streams) expect(await received(stream, burst.length)).toEqual({ paths: burst, errors: [] });
      // At most one replay's slice and what waited of its last one (a replay alone goes on), never the streams' shared 12 MB.
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(BUDGET + STREAM_BUFFER_BYTES / 4);
    } finally {
      clearInterval(sampler);
      for (const stream of streams) stream.close();
    }
  }, 60_000);
});
