import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { createStoreNamed, subscribeSse, SUBSCRIBE_EVENTS } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * An instance reads new events when a notification wakes it, at most once per wake gap (which
 * grows with its streams: every read costs each stream a write to its socket), and on a timer
 * that finds what no notification announced. The timer's reads keep to the gap too: a timed
 * read between two woken ones would otherwise double the reads (and the writes to every
 * stream) of a busy instance.
 */
const POLL_INTERVAL_MS = 100;
const GAP_MS = 150;
const server = useTestServer({ live: { listen: false, pollIntervalMs: POLL_INTERVAL_MS } });

describe('an instance woken by notifications faster than its wake gap, with a timer of shorter interval', () => {
  it('reads no more often than the gap, woken or timed, and keeps reading', async () => {
    const hub = eventHubOf(server.app);
    const client = await server.newWorkspace();
    await createStoreNamed(client, 'wake gap');
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS);
    const internals = hub as unknown as { wakeGap: () => number; poll: () => Promise<void>; polling: boolean };
    const poll = internals.poll;
    const reads: number[] = [];
    // The gap of a thousand streams, without opening them.
    internals.wakeGap = () => GAP_MS;
    internals.poll = function (this: typeof internals) {
      if (!this.polling) reads.push(performance.now());
      return poll.call(this);
    };
    const waking = setInterval(() => hub.wake(), 5);
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    } finally {
      clearInterval(waking);
      delete (internals as Partial<typeof internals>).poll;
      delete (internals as Partial<typeof internals>).wakeGap;
      stream.close();
    }
    const gaps = reads.slice(1).map((at, index) => at - reads[index]!);
    // Timers fire on the event loop's millisecond clock: up to a millisecond early by this one.
    expect(gaps.filter((gap) => gap < GAP_MS - 1.5).map(Math.round)).toEqual([]);
    expect(reads.length).toBeGreaterThanOrEqual(8);
  }, 30_000);
});
