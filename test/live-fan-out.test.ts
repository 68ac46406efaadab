import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { LocalStreamSlots } from '../src/subscriptions/stream-slots.js';
import { countStatements, recordStatements } from '../src/db/statement-count.js';
import type { Socket } from 'node:net';
import { createMemoryAt, createStoreNamed, eventsOf, listenWithWebSocket, pollReaching, pollThrough, subscribeSse, subscribeWs, SUBSCRIBE_EVENTS, type TestStream } from './support/live.js';
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

/** One poll's statements, and whether it read up to the workspace's newest event (pollReaching); a measurement of one poll that stopped short is taken again. */
async function countedPoll(workspaceId: string): Promise<{ statements: number; complete: boolean }> {
  const hub = eventHubOf(server.app);
  let statements = 0;
  const complete = await pollReaching(hub, server.db, workspaceId, async () => {
    ({ statements } = await countStatements(() => hub.poll()));
  });
  return { statements, complete };
}

/** Opens `subscribers` streams (the i-th with `queries[i % queries.length]`), writes, polls once: the statements of each part. */
async function deliveryCost(subscribers: number, queries: readonly string[] = [SUBSCRIBE_EVENTS], attempts = 3): Promise<{ poll: number; streams: number; events: number }> {
  const client = await server.newWorkspace();
  const storeId = await createStoreNamed(client, `fan-out ${subscribers}`);
  const hub = eventHubOf(server.app);
  await hub.poll();
  const streams: TestStream[] = [];
  // Whatever the streams' own resolvers send is recorded here, also after the callback returns.
  const { statements: streamStatements } = await recordStatements(async () => {
    for (let index = 0; index < subscribers; index += 1) {
      const query = queries[index % queries.length]!;
      streams.push(await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, query, { memoryStoreId: storeId }));
    }
  });
  const afterOpening = streamStatements.length;
  for (let index = 0; index < WRITES; index += 1) await createMemoryAt(client, storeId, `m${index}.md`, `content ${index}`);
  const poll = await countedPoll(client.workspaceId);
  if (!poll.complete && attempts > 1) {
    for (const stream of streams) stream.close();
    return deliveryCost(subscribers, queries, attempts - 1);
  }
  let events = 0;
  for (const stream of streams) {
    const received = eventsOf(await stream.waitFor(WRITES));
    expect(received.map((event) => event.memory.content)).toEqual(Array.from({ length: WRITES }, (_, index) => `content ${index}`));
    events += received.length;
  }
  for (const stream of streams) stream.close();
  return { poll: poll.statements, streams: streamStatements.length - afterOpening, events };
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
    await pollThrough(hub, server.db, client.workspaceId);
    expect(eventsOf(await stream.waitFor(1)).map((event) => [event.kind, event.memory?.path])).toEqual([['MEMORY_CREATED', 'after.md']]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stream.results).toHaveLength(1);
    stream.close();
  });

  it('executes an event once for every stream that asks the same of it: a selection past the event\'s own objects costs the same statements for 1 and for 50 streams, and one more execution per different operation', async () => {
    const nested = SUBSCRIBE_EVENTS.replace('memoryStore { id name status }', 'memoryStore { id name status memories(first: 1) { edges { node { path } } } }');
    const other = nested.replace('memories(first: 1)', 'memories(first: 2)');
    const one = await deliveryCost(1, [nested]);
    const fifty = await deliveryCost(50, [nested]);
    const twoOperations = await deliveryCost(50, [nested, other]);
    // The store's memories are loaded once per event (the statement count shows it is counted).
    expect(one.streams).toBeGreaterThanOrEqual(WRITES);
    expect(fifty.streams).toBe(one.streams);
    expect(twoOperations.streams).toBe(2 * one.streams);
    expect(fifty.events).toBe(50 * WRITES);
  }, 60_000);
});

describe('a batch of events on a real socket', () => {
  it('leaves each stream\'s socket in one write, over SSE and over WebSocket, not one write per event', async () => {
    const http = await listenWithWebSocket(server.app);
    // Every write the server's sockets flush to the kernel (one write or writev call each).
    let flushes = 0;
    http.server.on('connection', (socket: Socket) => {
      const counted = socket as unknown as { _write: (...args: unknown[]) => unknown; _writev: (...args: unknown[]) => unknown };
      for (const method of ['_write', '_writev'] as const) {
        const original = counted[method].bind(socket);
        counted[method] = (...args: unknown[]) => {
          flushes += 1;
          return original(...args);
        };
      }
    });
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'one write');
    const hub = eventHubOf(server.app);
    const sse = await subscribeSse(fetch, http.url, client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId });
    const ws = subscribeWs(http.wsUrl, client.token, SUBSCRIBE_EVENTS, { memoryStoreId: storeId });
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await hub.poll();
      for (let index = 0; index < 20; index += 1) await createMemoryAt(client, storeId, `batch/${index}.md`, `event ${index}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      flushes = 0;
      await pollThrough(hub, server.db, client.workspaceId);
      for (const stream of [sse, ws]) expect(eventsOf(await stream.waitFor(20)).map((event) => event.memory.path)).toEqual(Array.from({ length: 20 }, (_, index) => `batch/${index}.md`));
      // 40 events: one flush per socket (a little slack for a keep-alive).
      expect(flushes).toBeLessThanOrEqual(4);
    } finally {
      sse.close();
      ws.close();
      await http.close();
    }
  }, 30_000);
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
