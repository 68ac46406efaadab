import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import type { Database } from '../src/db/client.js';
import { LocalStreamSlots } from '../src/subscriptions/stream-slots.js';
import { askAgain } from './support/ask-again.js';
import { createMemoryAt, createStoreNamed, eventsOf, pollThrough, subscribeSse, SUBSCRIBE_EVENTS } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * The poller reads a batch of events, then what the events of workspaces with streams are
 * about. A workspace's first stream may open meanwhile, its start read before the batch was:
 * the batch may hold events that stream is owed. Here that interleaving is made on purpose,
 * through the database the poller reads from: the stream's start is read, writes commit, and the
 * stream is registered while the poller loads what the batch's other events are about.
 */
const server = useTestServer({ live: { slots: new LocalStreamSlots(500), listen: false, pollIntervalMs: 3_600_000, keyCheckIntervalMs: 3_600_000, sweepIntervalMs: 3_600_000 } });

/**
 * The poller's database, with two places to wait at: after the next `execute` (a stream's
 * start, currentEventHorizon, when nothing else runs) and before the next `select` runs (what
 * a batch's events are about, loadEventSubjects). Each waits once, when armed.
 */
function interleavedDatabase(db: Database) {
  let afterExecute: (() => Promise<void>) | null = null;
  let beforeSelect: (() => Promise<void>) | null = null;
  const proxy = new Proxy(db, {
    get(target, property, receiver) {
      if (property === 'execute') {
        return async (...args: Parameters<Database['execute']>) => {
          const result = await target.execute(...args);
          const wait = afterExecute;
          afterExecute = null;
          await wait?.();
          return result;
        };
      }
      if (property === 'select') {
        return (...args: Parameters<Database['select']>) => {
          const wait = beforeSelect;
          beforeSelect = null;
          const builder = target.select(...args);
          return {
            from: (...fromArgs: Parameters<typeof builder.from>) => {
              const query = builder.from(...fromArgs);
              return {
                where: (...whereArgs: Parameters<typeof query.where>) => {
                  const built = query.where(...whereArgs);
                  return { then: (resolve: never, reject: never) => (wait ? wait() : Promise.resolve()).then(() => built).then(resolve, reject) };
                },
              };
            },
          };
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  return {
    db: proxy,
    waitAfterNextExecute: (wait: () => Promise<void>) => (afterExecute = wait),
    waitBeforeNextSelect: (wait: () => Promise<void>) => (beforeSelect = wait),
  };
}

describe('a workspace whose first stream opens while the poller reads a batch', () => {
  it('is delivered the events of that batch past the stream\'s start, with what they are about', async () => {
    const hub = eventHubOf(server.app);
    const poller = hub as unknown as { reads: Database };
    const original = poller.reads;
    const interleaved = interleavedDatabase(original);
    poller.reads = interleaved.db;
    const open = (token: string | null) => subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', token, SUBSCRIBE_EVENTS);
    const streams: { close(): void }[] = [];
    try {
      // A workspace with a stream, and one without.
      const watched = await server.newWorkspace();
      const watchedStore = await createStoreNamed(watched, 'watched');
      const watching = await open(watched.token);
      streams.push(watching);
      const late = await server.newWorkspace();
      const lateStore = await createStoreNamed(late, 'opened during a batch');
      await hub.poll();
      const before = hub.openStreams;

      // The late workspace's stream reads its start, and is held there.
      let releaseOpen!: () => void;
      const held = new Promise<void>((resolve) => (releaseOpen = resolve));
      let startRead!: () => void;
      const started = new Promise<void>((resolve) => (startRead = resolve));
      interleaved.waitAfterNextExecute(async () => {
        startRead();
        await held;
      });
      const opening = open(late.token);
      await started;

      // Writes past the stream's start, in both workspaces. The next batch holds both; while
      // what the watched workspace's event is about loads, the late stream is registered.
      await createMemoryAt(watched, watchedStore, 'watched.md', 'seen by the stream that was open');
      const written = await createMemoryAt(late, lateStore, 'late.md', 'written after the stream started');
      interleaved.waitBeforeNextSelect(async () => {
        expect(hub.openStreams).toBe(before);
        releaseOpen();
        const registered = await askAgain(
          async () => hub.openStreams,
          (count) => count === before,
          { times: 100, everyMs: 10 },
        );
        expect(registered).toBe(before + 1);
      });
      await pollThrough(hub, server.db, late.workspaceId);

      const stream = await opening;
      streams.push(stream);
      expect(eventsOf(await watching.waitFor(1)).map((event) => event.memory?.path)).toEqual(['watched.md']);
      const received = eventsOf(await stream.waitFor(1));
      expect(received.map((event) => [event.kind, event.memoryStoreId, event.memoryStore?.name, event.memory?.id, event.memory?.path, event.memory?.content, event.version?.id])).toEqual([
        ['MEMORY_CREATED', lateStore, 'opened during a batch', written.id, 'late.md', 'written after the stream started', written.versionId],
      ]);
    } finally {
      for (const stream of streams) stream.close();
      poller.reads = original;
    }
  }, 30_000);
});
