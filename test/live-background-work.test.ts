import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import type { EventHub } from '../src/subscriptions/event-hub.js';
import { createStoreNamed, subscribeSse, SUBSCRIBE_EVENTS } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * The live-update poller's background work (the revocation check of open streams' keys, the
 * retention sweep) runs on timers. A run that takes longer than its interval (a slow or
 * backed-up database, a sweep of a long backlog) is not joined by another: the next tick
 * passes, and runs resume once it ends.
 */
const INTERVAL_MS = 25;
const RUN_MS = 200;
const server = useTestServer({ live: { listen: false, pollIntervalMs: 3_600_000, keyCheckIntervalMs: INTERVAL_MS, sweepIntervalMs: INTERVAL_MS } });

/** Makes each run of `method` take RUN_MS longer, and counts runs and the most in flight at once. */
function slowedDown(hub: EventHub, method: 'checkKeys' | 'sweep') {
  const original = hub[method];
  const counts = { runs: 0, inFlight: 0, most: 0 };
  (hub as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
    counts.runs += 1;
    counts.inFlight += 1;
    counts.most = Math.max(counts.most, counts.inFlight);
    try {
      await new Promise((resolve) => setTimeout(resolve, RUN_MS));
      return await (original as (...given: unknown[]) => Promise<unknown>).apply(hub, args);
    } finally {
      counts.inFlight -= 1;
    }
  };
  return { counts, restore: () => delete (hub as unknown as Record<string, unknown>)[method] };
}

describe('the poller\'s background work, when a run takes longer than its interval', () => {
  it('runs one key check and one sweep at a time, and goes on running them', async () => {
    const hub = eventHubOf(server.app);
    const keys = slowedDown(hub, 'checkKeys');
    const sweeps = slowedDown(hub, 'sweep');
    const client = await server.newWorkspace();
    await createStoreNamed(client, 'background');
    const stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS);
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      for (const { counts } of [keys, sweeps]) {
        expect(counts.most).toBe(1);
        // 1.5 s of runs of at least 200 ms, each followed by the next tick.
        expect(counts.runs).toBeGreaterThanOrEqual(3);
        expect(counts.runs).toBeLessThanOrEqual(Math.ceil(1_500 / RUN_MS));
      }
    } finally {
      stream.close();
      keys.restore();
      sweeps.restore();
    }
  }, 30_000);
});
