import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ANNOUNCE_GAP_MS, ANNOUNCE_SEND_LIMIT_MS, ANNOUNCEMENTS_APPLICATION_NAME, createAnnouncer, EVENTS_CHANNEL } from '../src/db/announcements.js';
import { rowsOf } from '../src/db/client.js';
import { createMemoryAt, createStoreNamed, run } from './support/live.js';
import { postgresUrl } from './support/database.js';
import { useTestServer } from './support/server.js';

/**
 * Writes are announced to every instance's live-update readers after they end, outside the
 * writing transaction (src/db/announcements.ts): merged, at most one per ANNOUNCE_GAP_MS, and
 * always one after the last write.
 */

describe('the announcer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends the first announcement at once and merges those that come while it is sent or within the gap into one more', async () => {
    const sent: number[] = [];
    let finish: () => void = () => {};
    const announcer = createAnnouncer(() => new Promise<void>((resolve) => ((finish = resolve), sent.push(Date.now()))));
    const start = Date.now();
    announcer.announce();
    for (let index = 0; index < 40; index += 1) announcer.announce();
    expect(sent).toEqual([start]);
    finish();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_GAP_MS - 1);
    expect(sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual([start, start + ANNOUNCE_GAP_MS]);
    finish();
    // Nothing came after the second: no third.
    await vi.advanceTimersByTimeAsync(10 * ANNOUNCE_GAP_MS);
    expect(sent).toHaveLength(2);
    // Once the gap has passed, the next is sent at once.
    announcer.announce();
    expect(sent).toHaveLength(3);
    announcer.close();
  });

  it('goes on after a failed send, and sends nothing once closed', async () => {
    let calls = 0;
    const announcer = createAnnouncer(() => {
      calls += 1;
      return Promise.reject(new Error('connection closed'));
    });
    announcer.announce();
    announcer.announce();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_GAP_MS);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(ANNOUNCE_GAP_MS);
    announcer.close();
    announcer.announce();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_GAP_MS);
    expect(calls).toBe(2);
  });

  it('takes a send that throws for one that failed: the write that asked sees nothing', async () => {
    let calls = 0;
    const announcer = createAnnouncer(() => {
      calls += 1;
      throw new Error('no connection');
    });
    expect(() => announcer.announce()).not.toThrow();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_GAP_MS);
    announcer.announce();
    expect(calls).toBe(2);
    announcer.close();
  });

  it('goes on without a send that hangs past its time limit, and queues no other behind it until it settles', async () => {
    let calls = 0;
    let settle: () => void = () => {};
    const announcer = createAnnouncer(() => {
      calls += 1;
      return new Promise<void>((resolve) => (settle = resolve));
    });
    announcer.announce();
    announcer.announce();
    await vi.advanceTimersByTimeAsync(ANNOUNCE_SEND_LIMIT_MS + 2 * ANNOUNCE_GAP_MS);
    // The merged second announcement found the first still hanging: nothing was sent behind it.
    expect(calls).toBe(1);
    announcer.announce();
    await vi.advanceTimersByTimeAsync(2 * ANNOUNCE_GAP_MS);
    expect(calls).toBe(1);
    settle();
    await vi.advanceTimersByTimeAsync(2 * ANNOUNCE_GAP_MS);
    announcer.announce();
    expect(calls).toBe(2);
    announcer.close();
  });

  it('sends in the context it was made in, not in that of the write that asked', async () => {
    const request = new AsyncLocalStorage<string>();
    const contexts: (string | undefined)[] = [];
    const announcer = createAnnouncer(async () => {
      contexts.push(request.getStore());
    });
    request.run('request 1', () => announcer.announce());
    request.run('request 2', () => announcer.announce());
    await vi.advanceTimersByTimeAsync(2 * ANNOUNCE_GAP_MS);
    expect(contexts).toEqual([undefined, undefined]);
    announcer.close();
  });
});

describe('announcements of committed writes', () => {
  const server = useTestServer();

  /** Runs `body` while listening on the events channel (listenCounting). */
  async function listening(workspaceId: string, body: (listener: Awaited<ReturnType<typeof listenCounting>>) => Promise<void>) {
    const listener = await listenCounting(workspaceId);
    try {
      await body(listener);
    } finally {
      await listener.stop();
    }
  }

  /** Listens on the events channel; each announcement counts the workspace's events it can see then. */
  async function listenCounting(workspaceId: string) {
    const seen: number[] = [];
    const pending: Promise<void>[] = [];
    const stop = await server.database.handle.listen(EVENTS_CHANNEL, () => {
      pending.push(
        server.db.execute(sql`select count(*)::int as count from memory_events where workspace_id = ${workspaceId}`).then((result) => {
          seen.push(Number(rowsOf(result)[0]!.count));
        }),
      );
    });
    const waitUntil = async (condition: () => boolean, failure: () => string) => {
      const deadline = Date.now() + 5_000;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error(failure());
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await Promise.all(pending);
    };
    return {
      seen,
      /** Waits until an announcement has seen `count` events (failing after 5 s), then for the counts in flight. */
      until: (count: number) => waitUntil(() => seen.includes(count), () => `no announcement saw ${count} events (they saw ${JSON.stringify(seen)})`),
      /** Waits for an announcement after the first `count` (failing after 5 s), then for the counts in flight. */
      beyond: (count: number) => waitUntil(() => seen.length > count, () => `no announcement after the first ${count}`),
      stop,
    };
  }

  it('announce a burst of concurrent writes in fewer announcements than writes, the last seeing every write committed', async () => {
    const client = await server.newWorkspace();
    await listening(client.workspaceId, async (listener) => {
      const storeId = await createStoreNamed(client, 'burst');
      await listener.until(1);
      const announcedBefore = listener.seen.length;
      const writes = 60;
      const started = performance.now();
      await Promise.all(Array.from({ length: writes }, (_, index) => createMemoryAt(client, storeId, `burst/${index}.md`, `write ${index}`)));
      const elapsed = performance.now() - started;
      await listener.until(1 + writes);
      const announced = listener.seen.length - announcedBefore;
      expect(Math.max(...listener.seen)).toBe(1 + writes);
      expect(announced).toBeGreaterThanOrEqual(1);
      expect(announced).toBeLessThanOrEqual(2 + Math.ceil(elapsed / ANNOUNCE_GAP_MS));
      // PostgreSQL commits them side by side, within a few gaps. (PGlite runs them one at a
      // time, each maybe longer than a gap, so that each may have its own announcement.)
      if (postgresUrl !== undefined) expect(announced).toBeLessThan(writes);
    });
  }, 30_000);

  it('announce transactions and one-statement writes, and no read snapshot', async () => {
    const client = await server.newWorkspace();
    await listening(client.workspaceId, async (listener) => {
      // A transaction (the store and its event).
      const storeId = await createStoreNamed(client, 'kinds');
      await listener.until(1);
      // A one-statement write.
      await createMemoryAt(client, storeId, 'a.md', 'one statement');
      await listener.until(2);
      // Reads in a snapshot (a search runs in one) write nothing and announce nothing.
      await new Promise((resolve) => setTimeout(resolve, 3 * ANNOUNCE_GAP_MS));
      const announced = listener.seen.length;
      for (let index = 0; index < 3; index += 1) {
        const data = await run(client, `query { searchMemories(query: "statement") { edges { node { path } } } }`);
        expect(data.searchMemories.edges).toEqual([{ node: { path: 'a.md' } }]);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(listener.seen.length).toBe(announced);
    });
  }, 30_000);

  it('announce a write that fails too: while it ran it held back the events of writes that committed after it began', async () => {
    const client = await server.newWorkspace();
    await listening(client.workspaceId, async (listener) => {
      const storeId = await createStoreNamed(client, 'failing');
      await createMemoryAt(client, storeId, 'taken.md', 'first');
      await listener.until(2);
      await new Promise((resolve) => setTimeout(resolve, 3 * ANNOUNCE_GAP_MS));
      const announced = listener.seen.length;
      const data = await run(
        client,
        `mutation ($storeId: ID!) { createMemory(input: { memoryStoreId: $storeId, path: "taken.md", content: "second" }) { __typename } }`,
        { storeId },
      );
      expect(data.createMemory.__typename).toBe('ConflictError');
      await listener.beyond(announced);
      expect(listener.seen.at(-1)).toBe(2);
    });
  }, 30_000);

  it.skipIf(postgresUrl === undefined)('go on when the connection they are sent over is dropped (PostgreSQL)', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'dropped');
    await listening(client.workspaceId, async (listener) => {
      await createMemoryAt(client, storeId, 'before.md', 'before the drop');
      await listener.until(2);
      const terminated = rowsOf(
        await server.db.execute(
          sql`select pg_terminate_backend(pid) as done from pg_stat_activity where application_name = ${ANNOUNCEMENTS_APPLICATION_NAME} and datname = current_database()`,
        ),
      );
      expect(terminated).toEqual([{ done: true }]);
      // The first write may find the connection closed (its announcement is dropped); the next ones reconnect.
      for (let index = 0; index < 3; index += 1) {
        await new Promise((resolve) => setTimeout(resolve, 2 * ANNOUNCE_GAP_MS));
        await createMemoryAt(client, storeId, `after-${index}.md`, 'after the drop');
      }
      await listener.until(5);
      expect(Math.max(...listener.seen)).toBe(5);
    });
  }, 30_000);
});
