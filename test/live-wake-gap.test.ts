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
/**
 * Timers fire on the event loop's clock, in whole milliseconds read when the loop turns: by
 * performance.now(), a timer of a fractional delay may fire up to about 2 ms early (seen:
 * 147.5 ms for 150).
 */
const EARLY_MS = 4;
const server = useTestServer({ live: { listen: false, pollIntervalMs: POLL_INTERVAL_MS } });

type HubInternals = { wakeGap: () => number; poll: () => Promise<void>; polling: boolean; lastPollAt: number };

/** Gives the hub the wake gap of a thousand streams (without opening them) and records when each read is asked for. */
function watchReads(internals: HubInternals) {
  const poll = internals.poll;
  const reads: number[] = [];
  internals.wakeGap = () => GAP_MS;
  internals.poll = function (this: HubInternals) {
    reads.push(performance.now());
    return poll.call(this);
  };
  return {
    reads,
    restore: () => {
      delete (internals as Partial<HubInternals>).poll;
      delete (internals as Partial<HubInternals>).wakeGap;
    },
  };
}

describe('an instance woken by notifications faster than its wake gap, with a timer of shorter interval', () => {
  it('reads no more often than the gap, woken or timed, and keeps reading', async () => {
    const hub = eventHubOf(server.app);
    const client = await server.newWorkspace();
    await createStoreNamed(client, 'wake gap');
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS);
    const { reads, restore } = watchReads(hub as unknown as HubInternals);
    const waking = setInterval(() => hub.wake(), 5);
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    } finally {
      clearInterval(waking);
      restore();
      stream.close();
    }
    const gaps = reads.slice(1).map((at, index) => at - reads[index]!);
    expect(gaps.filter((gap) => gap < GAP_MS - EARLY_MS).map(Math.round)).toEqual([]);
    expect(reads.length).toBeGreaterThanOrEqual(8);
  }, 30_000);

  it('reads, when a wake\'s timer comes due after another read began, the wake gap after that read', async () => {
    const hub = eventHubOf(server.app);
    const client = await server.newWorkspace();
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS);
    const internals = hub as unknown as HubInternals;
    while (internals.polling) await new Promise((resolve) => setTimeout(resolve, 5));
    const { reads, restore } = watchReads(internals);
    try {
      // The last read began 100 ms ago: a wake now waits 50 ms. A read (the timer's) begins 10 ms in.
      internals.lastPollAt = performance.now() - 100;
      hub.wake();
      await new Promise((resolve) => setTimeout(resolve, 10));
      const before = reads.length;
      await internals.poll();
      const timed = reads[before]!;
      await new Promise((resolve) => setTimeout(resolve, 400));
      const after = reads.slice(before + 1);
      expect(after.length).toBeGreaterThanOrEqual(1);
      expect(Math.round(after[0]! - timed)).toBeGreaterThanOrEqual(GAP_MS - EARLY_MS);
    } finally {
      restore();
      stream.close();
    }
  }, 30_000);
});
