import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExecutionResult } from 'graphql';
import { eventHubOf } from '../src/app.js';
import * as wsModule from 'ws';
import { WebSocket } from 'ws';
import { DirectSink } from '../src/http/direct-delivery.js';
import { webSocketOutlet, type Outlet } from '../src/http/outlets.js';
import { STREAM_SEND_AHEAD_BYTES } from '../src/domain/limits.js';
import { EventStream, type MemoryEventPayload } from '../src/subscriptions/event-stream.js';
import type { EventPosition } from '../src/domain/events.js';
import type { Viewer } from '../src/domain/viewer.js';
import { createMemoryAt, createStoreNamed, run, subscribeSse, subscribeWs, type StreamResult, type TestStream, useListening } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * The two ways a stream's events reach its consumer answer alike: through the stream's
 * iterator and the transport's own machinery (app.fetch has no socket), and written to a
 * real connection directly (src/http/direct-delivery.ts), over SSE and over WebSocket.
 */
const server = useTestServer();
const listening = useListening(() => server.app);

/** A selection answered from the event's own objects: no I/O, so the fan-out answers it in its own turn. */
const WITHOUT_IO = `subscription($memoryStoreId: ID) { memoryEvents(memoryStoreId: $memoryStoreId) { cursor kind occurredAt memoryStoreId memoryStore { id name status } memoryId memory { id path metadata } version { id operation path redacted } } }`;
/** A selection that loads content and a store's memories: each execution waits for the database. */
const WITH_IO = `subscription($memoryStoreId: ID) { memoryEvents(memoryStoreId: $memoryStoreId) { cursor kind memoryStore { id name memories(first: 2) { edges { node { path content } } } } memory { id content } version { id content redacted } } }`;

const withoutExtensions = (results: StreamResult[]) => results.map(({ extensions: _extensions, ...result }: StreamResult & { extensions?: unknown }) => result);

describe('a stream written directly to its connection', () => {
  for (const [name, query] of [
    ['without I/O', WITHOUT_IO],
    ['with I/O', WITH_IO],
  ] as const) {
    it(`answers every event as the iterator answers it, over SSE and over WebSocket (a selection ${name})`, async () => {
      const client = await server.newWorkspace();
      const storeId = await createStoreNamed(client, `paths ${name}`);
      const variables = { memoryStoreId: storeId };
      const viaIterator = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', client.token, query, variables);
      // Two of each: streams of one shape share each event's execution and frame.
      const sse = [await subscribeSse(fetch, listening().url, client.token, query, variables), await subscribeSse(fetch, listening().url, client.token, query, variables)];
      const ws = [subscribeWs(listening().wsUrl, client.token, query, variables), subscribeWs(listening().wsUrl, client.token, query, variables)];
      const all: TestStream[] = [viaIterator, ...sse, ...ws];
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Each write is delivered to every stream before the next: what a selection reads past the event is then the same for all.
      let count = 0;
      const delivered = async () => {
        count += 1;
        await Promise.all(all.map((stream) => stream.waitFor(count)));
      };
      const a = await createMemoryAt(client, storeId, 'notes/a.md', 'alpha');
      await delivered();
      const b = await createMemoryAt(client, storeId, 'notes/b.md', 'beta');
      await delivered();
      await run(client, `mutation($id: ID!) { updateMemory(input: { id: $id, content: "alpha 2", metadata: { k: "v" } }) { __typename } }`, { id: a.id });
      await delivered();
      await run(client, `mutation($id: ID!) { updateMemory(input: { id: $id, path: "notes/c.md" }) { __typename } }`, { id: b.id });
      await delivered();
      await run(client, `mutation($id: ID!) { redactMemoryVersion(input: { id: $id }) { __typename } }`, { id: a.versionId });
      await delivered();
      await run(client, `mutation($id: ID!) { deleteMemory(input: { id: $id }) { __typename } }`, { id: a.id });
      await delivered();
      await run(client, `mutation($id: ID!) { updateMemoryStore(input: { id: $id, name: "renamed" }) { __typename } }`, { id: storeId });
      await delivered();

      expect(viaIterator.results).toHaveLength(7);
      expect(viaIterator.results.every((result) => !result.errors && result.data)).toBe(true);
      for (const stream of sse) expect(stream.results).toEqual(viaIterator.results);
      // graphql-ws answers carry no extensions (as before direct delivery).
      for (const stream of ws) expect(stream.results).toEqual(withoutExtensions(viaIterator.results));
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const stream of all) expect(stream.results).toHaveLength(7);
      for (const stream of all) stream.close();
    });
  }

  it('ends with the error that cuts it off, after every event written before it, and then completes (SSE and WebSocket)', async () => {
    const client = await server.newWorkspace();
    const created = await run(client, `mutation { createApiKey(input: { name: "dashboard", kind: ADMIN }) { ... on CreateApiKeySuccess { apiKey { id } token } } }`);
    const token = created.createApiKey.token as string;
    const storeId = await createStoreNamed(client, 'cut off');
    const streams = [await subscribeSse(fetch, listening().url, token, WITHOUT_IO, { memoryStoreId: storeId }), subscribeWs(listening().wsUrl, token, WITHOUT_IO, { memoryStoreId: storeId })];
    await new Promise((resolve) => setTimeout(resolve, 300));
    await createMemoryAt(client, storeId, 'one.md', 'one');
    await createMemoryAt(client, storeId, 'two.md', 'two');
    for (const stream of streams) await stream.waitFor(2);
    await run(client, `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`, { id: created.createApiKey.apiKey.id });
    await eventHubOf(server.app).checkKeys();
    for (const stream of streams) {
      await stream.ended;
      expect(stream.results.map((result) => result.data?.memoryEvents.version.path ?? result.errors?.[0]?.extensions?.code)).toEqual(['one.md', 'two.md', 'UNAUTHENTICATED']);
      stream.close();
    }
  });
});

// ---------------------------------------------------------------------------------------
// The sink itself, with an outlet and results made by hand.

const viewer: Viewer = { workspaceId: 'ws_sink', apiKeyId: 'key_sink', kind: 'ADMIN' as Viewer['kind'], identityId: null };
const position = (index: number): EventPosition => ({ xid: 1n, id: index });

function payload(index: number): MemoryEventPayload {
  return { event: { workspaceId: viewer.workspaceId, position: position(index), memoryStoreId: 'memstore_x', path: `${index}.md` } as never, memoryStore: null, memory: null, version: null };
}

/** An outlet that records each write as the results' numbers it holds (a frame is `n;`). */
function fakeOutlet(options: { key?: string; unsent?: number } = {}) {
  const writes: string[][] = [];
  const written: Buffer[] = [];
  const outlet: Outlet & { isReady: boolean; writes: string[][]; written: Buffer[] } = {
    isReady: true,
    writes,
    written,
    sharingKey: () => options.key ?? 'fake',
    ready: () => outlet.isReady,
    gone: () => false,
    unsent: () => options.unsent ?? 0,
    frame: (result) => Buffer.from(`${(result.data as { n: number }).n};`),
    write: (frames) => {
      written.push(frames);
      writes.push(frames.toString().split(';').slice(0, -1));
    },
    onDrain: (callback) => void setTimeout(callback, 1),
  };
  return outlet;
}

/** A stream with a sink, its results by payload index: `{ n }`, or errors for the indexes in `failing`; `slow` ones come after a delay. */
function streamWithSink(outlet: Outlet, options: { failing?: number[]; slow?: number[]; shape?: string } = {}) {
  const sink = new DirectSink(outlet);
  const stream = new EventStream(viewer, { memoryStoreId: null, pathPrefix: null }, position(0), 100, () => {}, { sink });
  stream.goLive();
  const indexOf = (item: MemoryEventPayload) => Number(item.event.position.id);
  const executed: number[] = [];
  sink.start((item): ExecutionResult | Promise<ExecutionResult> => {
    const n = indexOf(item);
    executed.push(n);
    const result: ExecutionResult = options.failing?.includes(n) ? { errors: [{ message: `failed ${n}` }] as never } : { data: { n } };
    return options.slow?.includes(n) ? new Promise((resolve) => setTimeout(() => resolve(result), 30)) : result;
  }, options.shape);
  return { stream, sink, indexOf, executed };
}

describe('a direct sink', () => {
  it('writes the events of one delivery in one write, in order', () => {
    const outlet = fakeOutlet();
    const { stream } = streamWithSink(outlet);
    stream.push([payload(1), payload(2), payload(3)]);
    stream.push([payload(4)]);
    expect(outlet.writes).toEqual([['1', '2', '3'], ['4']]);
  });

  it('keeps later events behind a result that waits for I/O, and writes what came before it once the turn is over', async () => {
    const outlet = fakeOutlet();
    const { stream, sink } = streamWithSink(outlet, { slow: [2] });
    stream.push([payload(1), payload(2), payload(3)]);
    expect(outlet.writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(outlet.writes).toEqual([['1']]);
    expect(sink.pending).toBe(2);
    stream.push([payload(4)]);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(outlet.writes).toEqual([['1'], ['2', '3', '4']]);
    expect(sink.pending).toBe(0);
  });

  it('writes nothing before its connection is ready, then everything in order', async () => {
    const outlet = fakeOutlet();
    outlet.isReady = false;
    const { stream } = streamWithSink(outlet);
    stream.push([payload(1), payload(2)]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(outlet.writes).toEqual([]);
    outlet.isReady = true;
    stream.push([payload(3)]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(outlet.writes).toEqual([['1', '2', '3']]);
  });

  it('hands the first result with errors, and every event after it, back to the stream\'s iterator, in order', async () => {
    const outlet = fakeOutlet();
    const { stream, indexOf } = streamWithSink(outlet, { failing: [3] });
    stream.push([payload(1), payload(2), payload(3), payload(4)]);
    stream.push([payload(5)]);
    expect(outlet.writes).toEqual([['1', '2']]);
    const iterated: number[] = [];
    for (let index = 0; index < 3; index += 1) iterated.push(indexOf((await stream.next()).value as MemoryEventPayload));
    expect(iterated).toEqual([3, 4, 5]);
    expect(stream.buffered).toBe(0);
  });

  it('drops what it holds when its stream ends, and writes nothing more', async () => {
    const outlet = fakeOutlet();
    const { stream, sink } = streamWithSink(outlet, { slow: [1] });
    stream.push([payload(1), payload(2)]);
    stream.close();
    expect(sink.pending).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(outlet.writes).toEqual([]);
  });
});

describe('direct sinks of one shape on alike connections', () => {
  it('write a delivery as the bytes the first of them wrote for it, without answering its events again', () => {
    const outlets = [fakeOutlet(), fakeOutlet(), fakeOutlet()];
    const sinks = outlets.map((outlet) => streamWithSink(outlet, { shape: 'dashboard' }));
    const delivery = [payload(1), payload(2), payload(3)];
    for (const { stream } of sinks) stream.push(delivery);
    for (const outlet of outlets) expect(outlet.writes).toEqual([['1', '2', '3']]);
    expect(sinks.map(({ executed }) => executed)).toEqual([[1, 2, 3], [], []]);
    expect(outlets[2]!.written[0]).toBe(outlets[0]!.written[0]);
  });

  it('answer for themselves across shapes, connections of other keys, and other deliveries of the same events', () => {
    const first = streamWithSink(fakeOutlet(), { shape: 'dashboard' });
    const otherShape = streamWithSink(fakeOutlet(), { shape: 'another dashboard' });
    const otherKey = streamWithSink(fakeOutlet({ key: 'another connection' }), { shape: 'dashboard' });
    const unshared = streamWithSink(fakeOutlet());
    const delivery = [payload(1), payload(2)];
    for (const { stream } of [first, otherShape, otherKey, unshared]) stream.push(delivery);
    const sameEventsAgain = streamWithSink(fakeOutlet(), { shape: 'dashboard' });
    sameEventsAgain.stream.push([payload(1), payload(2)]);
    for (const { executed } of [first, otherShape, otherKey, unshared, sameEventsAgain]) expect(executed).toEqual([1, 2]);
  });

  it('keep their own order: a sink with events waiting writes them first, then the delivery, answered itself', async () => {
    const first = streamWithSink(fakeOutlet(), { shape: 'dashboard' });
    const late = fakeOutlet();
    late.isReady = false;
    const behind = streamWithSink(late, { shape: 'dashboard' });
    behind.stream.push([payload(1)]);
    const delivery = [payload(2), payload(3)];
    first.stream.push(delivery);
    late.isReady = true;
    behind.stream.push(delivery);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(late.writes).toEqual([['1', '2', '3']]);
    expect(behind.executed).toEqual([1, 2, 3]);
  });

  it('hold a shared delivery back from a connection with more than its send-ahead unsent, and cut nothing', async () => {
    const first = streamWithSink(fakeOutlet(), { shape: 'dashboard' });
    const full = fakeOutlet({ unsent: STREAM_SEND_AHEAD_BYTES + 1 });
    const behind = streamWithSink(full, { shape: 'dashboard' });
    const delivery = [payload(1), payload(2)];
    first.stream.push(delivery);
    behind.stream.push(delivery);
    expect(full.writes).toEqual([]);
    expect(behind.sink.pending).toBe(2);
    expect(behind.stream.isOpen).toBe(true);
  });

  it('write a delivery the first of them wrote in more than one write as those writes joined, in one write', () => {
    const outlets = [fakeOutlet(), fakeOutlet(), fakeOutlet()];
    const sinks = outlets.map((outlet) => streamWithSink(outlet, { shape: 'dashboard' }));
    // More events than a write holds (64 frames): the first sink writes them in two writes.
    const delivery = Array.from({ length: 100 }, (_, index) => payload(index + 1));
    for (const { stream } of sinks) stream.push(delivery);
    const every = delivery.map((_, index) => String(index + 1));
    expect(outlets[0]!.writes.map((write) => write.length)).toEqual([64, 36]);
    expect(outlets[0]!.writes.flat()).toEqual(every);
    for (const outlet of outlets.slice(1)) expect(outlet.writes).toEqual([every]);
    expect(sinks.map(({ executed }) => executed.length)).toEqual([100, 0, 0]);
    expect(outlets[2]!.written[0]).toBe(outlets[1]!.written[0]);
    for (const { stream, sink } of sinks) expect([stream.buffered, sink.pending]).toEqual([0, 0]);
  });

  it('hold back a joined delivery longer than the send-ahead from the streams that share it, which answer it themselves', () => {
    const outlets = [fakeOutlet(), fakeOutlet()];
    const sinks = outlets.map((outlet) => streamWithSink(outlet, { shape: 'dashboard' }));
    // Frames of 2 KiB: the first sink writes them as they pass the send-ahead, and their join is longer than it.
    for (const outlet of outlets) outlet.frame = (result) => Buffer.from(`${(result.data as { n: number }).n};`.padEnd(2048, ' '));
    const delivery = Array.from({ length: Math.ceil(STREAM_SEND_AHEAD_BYTES / 2048) + 2 }, (_, index) => payload(index + 1));
    for (const { stream } of sinks) stream.push(delivery);
    expect(outlets[0]!.written.length).toBeGreaterThan(1);
    expect(sinks.map(({ executed }) => executed.length)).toEqual([delivery.length, delivery.length]);
  });

  it('keep no copy of a delivery for a key that no other open sink has, and count a sink that closed out', () => {
    const alone = streamWithSink(fakeOutlet(), { shape: 'alone' });
    const delivery = [payload(1), payload(2)];
    alone.stream.push(delivery);
    const later = streamWithSink(fakeOutlet(), { shape: 'alone' });
    later.stream.push(delivery);
    expect(later.executed).toEqual([1, 2]);

    const leaving = streamWithSink(fakeOutlet(), { shape: 'pair' });
    const staying = streamWithSink(fakeOutlet(), { shape: 'pair' });
    leaving.stream.close();
    const next = [payload(3)];
    staying.stream.push(next);
    const opened = streamWithSink(fakeOutlet(), { shape: 'pair' });
    opened.stream.push(next);
    expect(opened.executed).toEqual([3]);
  });

  it('share nothing of a delivery with a result that has errors or waits for I/O', async () => {
    for (const options of [{ failing: [2] }, { slow: [2] }]) {
      const sinks = [streamWithSink(fakeOutlet(), { ...options, shape: 'dashboard' }), streamWithSink(fakeOutlet(), { ...options, shape: 'dashboard' })];
      const delivery = [payload(1), payload(2), payload(3)];
      for (const { stream } of sinks) stream.push(delivery);
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(sinks.map(({ executed }) => executed.slice(0, 3))).toEqual([[1, 2, 3], [1, 2, 3]].map((list) => ('failing' in options ? list.slice(0, 2) : list)));
    }
  });
});

/** The messages of server frames, as a WebSocket client's receiver reads them. */
function messagesOf(frames: Buffer): string[] {
  const { Receiver } = wsModule as unknown as { Receiver: new (options: { isServer: boolean }) => import('node:stream').Writable };
  const messages: string[] = [];
  const receiver = new Receiver({ isServer: false });
  receiver.on('message', (data: Buffer) => messages.push(data.toString()));
  receiver.write(frames);
  return messages;
}

const RESULTS = [{ data: { n: 'a' } }, { data: { n: 'b'.repeat(300) } }, { data: { n: 'c'.repeat(70_000) } }, { data: { n: 'd'.repeat(114) } }, { data: { n: 'e'.repeat(115) } }];

describe('a graphql-ws outlet', () => {
  it('writes each result as a text frame a WebSocket client reads, whatever its length, in one write to the socket', () => {
    const written: Buffer[] = [];
    const ws = { readyState: WebSocket.OPEN, bufferedAmount: 0, _sender: { _queue: [] } };
    const outlet = webSocketOutlet(ws as unknown as WebSocket, { write: (bytes: Buffer) => written.push(bytes) } as never, 'op-1');
    outlet.write(Buffer.concat(RESULTS.map((result) => outlet.frame(result))));
    expect(written).toHaveLength(1);
    expect(messagesOf(written[0]!).map((message) => JSON.parse(message))).toEqual(RESULTS.map((payload) => ({ id: 'op-1', type: 'next', payload })));
  });
});

/** A graphql-ws outlet for operation `id` on a stand-in WebSocket whose socket records each write. */
function webSocketOutletOf(id: string) {
  const written: Buffer[] = [];
  const ws = { readyState: WebSocket.OPEN, bufferedAmount: 0, _sender: { _queue: [] } };
  return { outlet: webSocketOutlet(ws as unknown as WebSocket, { write: (bytes: Buffer) => written.push(bytes) } as never, id), written };
}

describe('graphql-ws operations of one shape', () => {
  it('whose ids are as long write a delivery as the frames the first wrote, each message with its own id (alike ids: the very bytes); others frame it themselves', () => {
    // Results around the frame header's limits (125 and 126 bytes of message, with the id); a client's ids (UUIDs) are as long.
    const results = [{ data: { n: 'a' } }, { data: { n: 'b'.repeat(300) } }, { data: { n: 'd'.repeat(73) } }, { data: { n: 'e'.repeat(74) } }];
    const ids = ['9b2f8a52-7d0e-4c1a-9f43-5e8d6a1b2c3d', '0c4d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f', 'q"\\', '\u00e9"x', 'another-length', 'same', 'same'];
    const sinks = ids.map((id) => {
      const { outlet, written } = webSocketOutletOf(id);
      const sink = new DirectSink(outlet);
      const stream = new EventStream(viewer, { memoryStoreId: null, pathPrefix: null }, position(0), 100, () => {}, { sink });
      stream.goLive();
      const executed: number[] = [];
      sink.start((item) => {
        const n = Number(item.event.position.id);
        executed.push(n);
        return results[n - 1]!;
      }, 'dashboard');
      return { id, stream, written, executed };
    });
    const delivery = results.map((_, index) => payload(index + 1));
    for (const { stream } of sinks) stream.push(delivery);
    for (const { id, written } of sinks) {
      expect(written).toHaveLength(1);
      expect(messagesOf(written[0]!).map((message) => JSON.parse(message))).toEqual(results.map((result) => ({ id, type: 'next', payload: result })));
    }
    // The second UUID takes the first's frames; the two escaped ids are as long as JSON (7 bytes) and share too; 'another-length'
    // frames its own; of two operations named alike on two connections, the second writes the very bytes the first wrote.
    expect(sinks.map(({ executed }) => executed.length)).toEqual([4, 0, 4, 0, 4, 4, 0]);
    expect(sinks[6]!.written[0]).toBe(sinks[5]!.written[0]);
    expect(sinks[1]!.written[0]).not.toBe(sinks[0]!.written[0]);
  });

  it('make the same frames from one of its own ids and from another id as long, whatever the results (property)', () => {
    const idPairs = fc
      .tuple(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }))
      .filter(([a, b]) => Buffer.byteLength(JSON.stringify(a)) === Buffer.byteLength(JSON.stringify(b)));
    const sameLength = fc.string({ unit: 'binary', maxLength: 40 }).map((id) => [id, id.split('').reverse().join('')] as const);
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.integer({ min: 60, max: 70_000 }).map((length) => 'x'.repeat(length)));
    fc.assert(
      fc.property(fc.oneof(idPairs, sameLength), fc.array(text, { minLength: 1, maxLength: 6 }), ([first, second], texts) => {
        fc.pre(Buffer.byteLength(JSON.stringify(first)) === Buffer.byteLength(JSON.stringify(second)));
        const results = texts.map((n) => ({ data: { n } }));
        const a = webSocketOutletOf(first).outlet;
        const b = webSocketOutletOf(second).outlet;
        expect(a.sharingKey()).toBe(b.sharingKey());
        const framesOf = (outlet: Outlet) => Buffer.concat(results.map((result) => outlet.frame(result)));
        expect(b.adapt!(framesOf(a)).equals(framesOf(b))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a graphql-ws outlet whose WebSocket queues what it sends', () => {
  it("sends each frame's message through the WebSocket, in order, whatever its length", () => {
    const sent: string[] = [];
    const ws = { readyState: WebSocket.OPEN, bufferedAmount: 0, _sender: { _queue: [{}] }, send: (message: Buffer) => sent.push(message.toString()) };
    const outlet = webSocketOutlet(ws as unknown as WebSocket, undefined, 'op-1');
    outlet.write(Buffer.concat(RESULTS.map((result) => outlet.frame(result))));
    expect(sent.map((message) => JSON.parse(message))).toEqual(RESULTS.map((payload) => ({ id: 'op-1', type: 'next', payload })));
  });
});
