import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { LocalStreamSlots } from '../src/subscriptions/stream-slots.js';
import { countStatements, recordStatements } from '../src/db/statement-count.js';
import { createMemoryAt, createStoreNamed, eventsOf, subscribeSse, SUBSCRIBE_EVENTS, type TestStream } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * Fan-out is shared: each batch of committed events is read once per instance, with the
 * stores, memories and versions it is about, whatever the number of streams; each stream
 * filters the batch in memory and answers its events without a statement of its own.
 * The poller is driven by hand here (no timer, no notifications), so that every statement
 * it sends is counted.
 */
const server = useTestServer({ live: { slots: new LocalStreamSlots(500), listen: false, pollIntervalMs: 3_600_000, keyCheckIntervalMs: 3_600_000, sweepIntervalMs: 3_600_000 } });
const WRITES = 8;

async function deliveryCost(subscribers: number, query = SUBSCRIBE_EVENTS): Promise<{ poll: number; streams: number; events: number }> {
  const client = await server.newWorkspace();
  const storeId = await createStoreNamed(client, `fan-out ${subscribers}`);
  const hub = eventHubOf(server.app);
  await hub.poll();
  const streams: TestStream[] = [];
  // Whatever the streams' own resolvers send is recorded here, also after the callback returns.
  const { statements: streamStatements } = await recordStatements(async () => {
    for (let index = 0; index < subscribers; index += 1) {
      streams.push(await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, query, { memoryStoreId: storeId }));
    }
  });
  const afterOpening = streamStatements.length;
  for (let index = 0; index < WRITES; index += 1) await createMemoryAt(client, storeId, `m${index}.md`, `content ${index}`);
  const { statements: poll } = await countStatements(() => hub.poll());
  let events = 0;
  for (const stream of streams) {
    const received = eventsOf(await stream.waitFor(WRITES));
    expect(received.map((event) => event.memory.content)).toEqual(Array.from({ length: WRITES }, (_, index) => `content ${index}`));
    events += received.length;
  }
  for (const stream of streams) stream.close();
  return { poll, streams: streamStatements.length - afterOpening, events };
}

describe('delivering one batch of writes', () => {
  it('costs the same statements with 1 and with 100 subscribers, and none per stream', async () => {
    const one = await deliveryCost(1);
    const hundred = await deliveryCost(100);
    expect(one.events).toBe(WRITES);
    expect(hundred.events).toBe(100 * WRITES);
    // The batch read, its stores, memories and versions, and the read that finds nothing more.
    expect(one.poll).toBeLessThanOrEqual(5);
    expect(hundred.poll).toBe(one.poll);
    expect(one.streams).toBe(0);
    expect(hundred.streams).toBe(0);
  }, 60_000);

  it('starts a stream without a cursor now: changes committed before it opened are not delivered, though the poller has not read them yet', async () => {
    const client = await server.newWorkspace();
    const hub = eventHubOf(server.app);
    const open = () => subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS);
    // The poller runs (a first stream started it) and has read everything so far.
    (await open()).close();
    await hub.poll();
    const storeId = await createStoreNamed(client, 'before the stream');
    await createMemoryAt(client, storeId, 'before.md', 'committed before the stream opened');
    const stream = await open();
    await createMemoryAt(client, storeId, 'after.md', 'committed after it opened');
    await hub.poll();
    expect(eventsOf(await stream.waitFor(1)).map((event) => [event.kind, event.memory?.path])).toEqual([['MEMORY_CREATED', 'after.md']]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stream.results).toHaveLength(1);
    stream.close();
  });

  it('counts what streams send: a selection past the event\'s own objects (a store\'s memories) costs statements per stream', async () => {
    const nested = SUBSCRIBE_EVENTS.replace('memoryStore { id name status }', 'memoryStore { id name status memories(first: 1) { edges { node { path } } } }');
    const cost = await deliveryCost(2, nested);
    expect(cost.streams).toBeGreaterThanOrEqual(2 * WRITES);
  }, 60_000);
});

/**
 * The poller works for no request. On PGlite a notification is delivered inside the request
 * whose write sent it, and on either database the poller's timers and its listening
 * connection are made inside the request of the stream that started it: the poller's
 * statements are neither of those requests' (not their time limit, budget, metrics, traces
 * or counted statements).
 */
describe('the poller, woken by a write', () => {
  const woken = useTestServer({ live: { pollIntervalMs: 3_600_000, keyCheckIntervalMs: 3_600_000, sweepIntervalMs: 3_600_000 } });

  it('sends none of its statements in the writing request or in the request of the stream that started it', async () => {
    const client = await woken.newWorkspace();
    const storeId = await createStoreNamed(client, 'woken');
    const quiet = await countStatements(() => createMemoryAt(client, storeId, 'before.md', 'no stream yet'));
    let stream: TestStream | undefined;
    const { statements: opening } = await recordStatements(async () => {
      stream = await subscribeSse((url, init) => Promise.resolve(woken.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId });
    });
    const afterOpening = opening.length;
    try {
      const write = await countStatements(() => createMemoryAt(client, storeId, 'after.md', 'a stream is open'));
      expect(eventsOf(await stream!.waitFor(1)).map((event) => event.memory.content)).toEqual(['a stream is open']);
      expect(write.statements).toBe(quiet.statements);
      expect(opening.length).toBe(afterOpening);
    } finally {
      stream!.close();
    }
  }, 30_000);
});
