import net from 'node:net';
import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { encodeEventCursor } from '../src/domain/events.js';
import { DEFAULT_EVENT_RETENTION_DAYS, DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY } from '../src/domain/limits.js';
import { createMemoryAt, createStoreNamed, eventsOf, listenWithWebSocket, run, type Listening, subscribeSse, SUBSCRIBE_EVENTS } from './support/live.js';
import { useTestServer, type TestClient } from './support/server.js';

/** Resuming, the per-key stream limit, revocation and a consumer that stops reading. */
const SMALL_BUFFER = 25;
const REPLAY_STALL_MS = 2_000;
const server = useTestServer({ live: { bufferEvents: SMALL_BUFFER, replayStallMs: REPLAY_STALL_MS } });
const fetchApp = (url: string, init: RequestInit) => Promise.resolve(server.app.fetch(url, init));
const URL = 'http://memstore.test/graphql';
const open = (token: string | null, variables: Record<string, unknown> = {}) => subscribeSse(fetchApp, URL, token, SUBSCRIBE_EVENTS, variables);

describe('resuming with `after`', () => {
  it('replays exactly the events after the cursor, then continues live, with no gap and no duplicate', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'resume');
    const first = await open(client.token, { memoryStoreId: storeId });
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const path of ['a.md', 'b.md', 'c.md']) await createMemoryAt(client, storeId, path, path);
    const seen = eventsOf(await first.waitFor(3));
    first.close();
    // While no stream is open: two more writes.
    for (const path of ['d.md', 'e.md']) await createMemoryAt(client, storeId, path, path);

    const resumed = await open(client.token, { memoryStoreId: storeId, after: seen[1]!.cursor });
    const replayed = eventsOf(await resumed.waitFor(3));
    expect(replayed.map((event) => event.version.path)).toEqual(['c.md', 'd.md', 'e.md']);
    await createMemoryAt(client, storeId, 'f.md', 'f');
    const all = eventsOf(await resumed.waitFor(4));
    expect(all.map((event) => event.version.path)).toEqual(['c.md', 'd.md', 'e.md', 'f.md']);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(resumed.results).toHaveLength(4);
    resumed.close();
  });

  it('is CURSOR_EXPIRED for a cursor older than the retention, and INVALID_REQUEST for something that is not a cursor', async () => {
    const client = await server.newWorkspace();
    const old = encodeEventCursor({ xid: 1n, id: 1 }, new Date(Date.now() - (DEFAULT_EVENT_RETENTION_DAYS * 86_400_000 + 60_000)));
    const expired = await open(client.token, { after: old });
    expect((await expired.waitFor(1))[0]!.errors?.[0]?.extensions?.code).toBe('CURSOR_EXPIRED');
    const bogus = await open(client.token, { after: 'not-a-cursor' });
    expect((await bogus.waitFor(1))[0]!.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
    // Neither holds a stream: the key can still open its full allowance (checked below) — here, one more opens.
    const fresh = await open(client.token);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(fresh.results).toEqual([]);
    fresh.close();
  });
});

describe('a cursor no event was given', () => {
  it('is INVALID_REQUEST at once, takes no place of the key, and a stream from the last real cursor still gets the next write: a transaction id past 64 bits, an id past 2^53, a position past every event', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'forged');
    const first = await open(client.token, { memoryStoreId: storeId });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await createMemoryAt(client, storeId, 'a.md', 'a');
    const [real] = eventsOf(await first.waitFor(1));
    first.close();
    const now = new Date();
    const forged = [
      Buffer.from(`ev1:${2n ** 64n}:1:${now.getTime()}`).toString('base64url'),
      encodeEventCursor({ xid: 1n, id: 2 ** 53 }, now),
      encodeEventCursor({ xid: 10n ** 19n, id: 1 }, now),
    ];
    for (const after of forged) {
      const startedAt = Date.now();
      const refused = await open(client.token, { memoryStoreId: storeId, after });
      const [answer] = await refused.waitFor(1);
      expect([answer!.errors?.[0]?.extensions?.code, Date.now() - startedAt < 2_000], after).toEqual(['INVALID_REQUEST', true]);
    }
    // None of them took a place: the key still opens its whole allowance.
    const streams = [];
    for (let index = 0; index < DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY - 1; index += 1) streams.push(await open(client.token, { memoryStoreId: storeId }));
    const resumed = await open(client.token, { memoryStoreId: storeId, after: real!.cursor });
    await createMemoryAt(client, storeId, 'b.md', 'b');
    expect(eventsOf(await resumed.waitFor(1)).map((event) => event.version.path)).toEqual(['b.md']);
    for (const stream of [...streams, resumed]) stream.close();
    await Promise.all([...streams, resumed].map((stream) => stream.ended));
  });
});

describe('the per-key stream limit', () => {
  it(`lets a key hold ${DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY} open streams, refuses the next with RATE_LIMITED, and admits one again once a stream closes`, async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const streams = [];
    for (let index = 0; index < DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY; index += 1) streams.push(await open(client.token));
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const stream of streams) expect(stream.results).toEqual([]);
    const refused = await open(client.token);
    const [answer] = await refused.waitFor(1);
    expect(answer!.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    // Another key is not affected.
    const theirs = await open(other.token);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(theirs.results).toEqual([]);

    const before = eventHubOf(server.app).openStreams;
    streams.pop()!.close();
    // The server ends the stream when the client goes.
    for (let waited = 0; eventHubOf(server.app).openStreams === before && waited < 3000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(eventHubOf(server.app).openStreams).toBe(before - 1);
    const again = await open(client.token);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(again.results).toEqual([]);
    // Every open stream still works.
    const storeId = await createStoreNamed(client, 'limit');
    for (const stream of [...streams, again]) expect(eventsOf(await stream.waitFor(1))[0]!.memoryStoreId).toBe(storeId);
    for (const stream of [...streams, again, theirs]) stream.close();
  });

  it(`frees a stream's place at once when its response is cancelled before anything was read: after ${DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY} such responses the key still opens its whole allowance`, async () => {
    const client = await server.newWorkspace();
    for (let index = 0; index < DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY; index += 1) {
      const response = await server.app.fetch(URL, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${client.token}` },
        body: JSON.stringify({ query: SUBSCRIBE_EVENTS }),
      });
      expect(response.status).toBe(200);
      await response.body!.cancel();
    }
    // Had those places stayed taken, every one of these would be RATE_LIMITED.
    const streams = [];
    for (let index = 0; index < DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY; index += 1) streams.push(await open(client.token));
    const storeId = await createStoreNamed(client, 'after-cancels');
    for (const stream of streams) expect(eventsOf(await stream.waitFor(1))[0]!.memoryStoreId).toBe(storeId);
    for (const stream of streams) stream.close();
    await Promise.all(streams.map((stream) => stream.ended));
  });
});

describe('revoking a key', () => {
  it('ends its open streams with UNAUTHENTICATED within 10 s; other keys\' streams go on', async () => {
    const client = await server.newWorkspace();
    const created = await run(client, `mutation { createApiKey(input: { name: "dashboard", kind: ADMIN }) { ... on CreateApiKeySuccess { apiKey { id } token } } }`);
    const token = created.createApiKey.token as string;
    const doomed = await open(token);
    const kept = await open(client.token);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const revokedAt = Date.now();
    await run(client, `mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }`, { id: created.createApiKey.apiKey.id });
    const [ending] = await doomed.waitFor(1, 10_000);
    expect(Date.now() - revokedAt).toBeLessThan(10_000);
    expect(ending!.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    await doomed.ended;
    const storeId = await createStoreNamed(client, 'after revocation');
    expect(eventsOf(await kept.waitFor(1))[0]!.memoryStoreId).toBe(storeId);
    expect(doomed.results).toHaveLength(1);
    kept.close();
  }, 15_000);
});

describe('a consumer that stops reading', () => {
  it(`is cut off with SLOW_CONSUMER once more than its buffer (${SMALL_BUFFER} events here) waits and it has taken nothing for ${REPLAY_STALL_MS / 1000} s, and resumes from its last cursor`, () =>
    onRealServer('slow', async (http, client, storeId) => {
      // A real socket that reads the first events, then stops reading (the kernel's buffers fill, then the stream's).
      const socket = net.connect(Number(new globalThis.URL(http.url).port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const body = JSON.stringify({ query: SUBSCRIBE_EVENTS, variables: { memoryStoreId: storeId } });
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      const closed = new Promise((resolve) => socket.once('end', resolve));
      socket.write(`POST /graphql HTTP/1.1\r\nHost: memstore.test\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${client.token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await createMemoryAt(client, storeId, 'm0.md', LARGE);
      while (!Buffer.concat(chunks).includes('m0.md')) await new Promise((resolve) => setTimeout(resolve, 20));
      const total = 120;
      await stopReadingWhileWriting(socket, client, storeId, total);
      // Reading again: what was on its way, then the error, then the end.
      await closed;
      const messages = sseMessages(dechunk(Buffer.concat(chunks)));
      const last = messages.at(-1)!;
      expect(last.errors[0].extensions.code).toBe('SLOW_CONSUMER');
      expect(last.errors[0].message).toMatch(/after/);
      const delivered = messages.slice(0, -1).map((message) => message.data.memoryEvents);
      expect(delivered.length).toBeGreaterThanOrEqual(1);
      expect(delivered.length).toBeLessThan(total);

      await expectResumesAfter(client.token, storeId, delivered, total);
      socket.destroy();
    }), 60_000);
});

describe('a WebSocket consumer that stops reading', () => {
  it(`is cut off with SLOW_CONSUMER once what waits passes its buffer and it has taken nothing for ${REPLAY_STALL_MS / 1000} s, though graphql-ws takes every result at once; it resumes from its last cursor`, () =>
    onRealServer('slow ws', async (http, client, storeId) => {
      const { ws, messages, socket } = await graphqlWs(http.wsUrl, client.token, { memoryStoreId: storeId });
      const closed = new Promise((resolve) => ws.once('close', resolve));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await createMemoryAt(client, storeId, 'm0.md', LARGE);
      while (!messages.some((message) => message.type === 'next')) await new Promise((resolve) => setTimeout(resolve, 20));
      const total = 120;
      await stopReadingWhileWriting(socket, client, storeId, total);
      // Reading again: what was on its way, then the error, then the end of the subscription.
      while (!messages.some((message) => message.type === 'complete')) await new Promise((resolve) => setTimeout(resolve, 20));
      const results = messages.filter((message) => message.type === 'next').map((message) => message.payload);
      expect(results.at(-1).errors[0].extensions.code).toBe('SLOW_CONSUMER');
      const delivered = results.slice(0, -1).map((result) => result.data.memoryEvents);
      expect(delivered.length).toBeGreaterThanOrEqual(1);
      // The server held at most its bound (4 MiB) of ~200 KB events unsent, besides what the kernel took.
      expect(delivered.length).toBeLessThan(total);

      await expectResumesAfter(client.token, storeId, delivered, total);
      ws.close();
      await closed;
    }), 60_000);
});

/** A resuming stream on a real socket: its results so far, and the socket to read slowly. */
const resumingOn = {
  WebSocket: async (http: Listening, token: string | null, variables: Record<string, unknown>) => {
    const { ws, messages, socket } = await graphqlWs(http.wsUrl, token, variables);
    return { socket, results: () => messages.filter((message) => message.type === 'next').map((message) => message.payload), close: () => ws.close() };
  },
  SSE: async (http: Listening, token: string | null, variables: Record<string, unknown>) => {
    const socket = await rawSse(http.url, token, variables);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    return { socket, results: () => sseMessages(dechunk(Buffer.concat(chunks))), close: () => socket.destroy() };
  },
};

for (const [transport, resuming] of Object.entries(resumingOn)) {
  describe(`${transport === 'SSE' ? 'an SSE' : 'a WebSocket'} consumer that resumes far behind and reads slowly`, () => {
    it('gets the whole replay at its own pace, and is not cut off', () =>
      onRealServer(`slow ${transport} replay`, async (http, client, storeId) => {
        const total = 80;
        const firstCursor = await farBehind(client, storeId, 'r', total);
        // Resume from the store's first event: ~8 MB of results, written to the socket directly.
        const stream = await resuming(http, client.token, { memoryStoreId: storeId, after: firstCursor });
        await readSlowly(stream.socket);
        for (let waited = 0; waited < 20_000 && stream.results().length < total - 1; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
        expect(stream.results().filter((result) => result.errors).map((result) => result.errors[0].extensions.code)).toEqual([]);
        expect(stream.results().map((result) => result.data.memoryEvents.version.path)).toEqual(Array.from({ length: total - 1 }, (_, index) => `r${index + 1}.md`));
        stream.close();
      }), 60_000);
  });
}

describe('a consumer that resumes far behind and reads nothing', () => {
  it(`is cut off with SLOW_CONSUMER once it has taken nothing of its replay for ${REPLAY_STALL_MS / 1000} s`, () =>
    onRealServer('stalled replay', async (http, client, storeId) => {
      const firstCursor = await farBehind(client, storeId, 's', 60);
      const hub = eventHubOf(server.app);
      const before = hub.openStreams;
      const socket = await rawSse(http.url, client.token, { memoryStoreId: storeId, after: firstCursor });
      socket.pause();
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(hub.openStreams).toBe(before + 1);
      for (let waited = 0; waited < REPLAY_STALL_MS + 5_000 && hub.openStreams > before; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(hub.openStreams).toBe(before);
      socket.destroy();
    }), 30_000);
});

describe('a stream whose connection ends without the stream being read', () => {
  it('is closed when its request is refused (a subscription that does not accept an event stream) or its client leaves before the answer', () =>
    onRealServer('gone', async (http, client) => {
      const hub = eventHubOf(server.app);
      const before = hub.openStreams;
      for (let index = 0; index < 3; index += 1) {
        const refused = await fetch(http.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${client.token}` },
          body: JSON.stringify({ query: SUBSCRIBE_EVENTS }),
        });
        expect(refused.status).toBe(406);
        await refused.text();
        (await rawSse(http.url, client.token, {})).destroy();
      }
      await createStoreNamed(client, 'an event for every stream');
      for (let waited = 0; waited < 3_000 && hub.openStreams > before; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(hub.openStreams).toBe(before);
    }), 30_000);
});

/** An SSE subscription on a raw socket, its request written (nothing of its answer read yet). */
async function rawSse(url: string, token: string | null, variables: Record<string, unknown>): Promise<net.Socket> {
  const socket = net.connect(Number(new globalThis.URL(url).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const body = JSON.stringify({ query: SUBSCRIBE_EVENTS, variables });
  socket.write(`POST /graphql HTTP/1.1\r\nHost: memstore.test\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return socket;
}

/**
 * A store whose first event a dashboard saw (its cursor is returned), followed by
 * `prefix`1 … `prefix`(total-1) of 100 KB: resuming from that cursor is a replay of ~100 KB
 * per event, more than the socket buffers and the unsent bound.
 */
async function farBehind(client: TestClient, storeId: string, prefix: string, total: number): Promise<string> {
  const watcher = await open(client.token, { memoryStoreId: storeId });
  await new Promise((resolve) => setTimeout(resolve, 200));
  await createMemoryAt(client, storeId, `${prefix}0.md`, 'first');
  const firstCursor = eventsOf(await watcher.waitFor(1))[0]!.cursor as string;
  watcher.close();
  for (let index = 1; index < total; index += 1) await createMemoryAt(client, storeId, `${prefix}${index}.md`, LARGE);
  return firstCursor;
}

/** A slow reader: it stops for 0.7 s at a time, three times. */
async function readSlowly(socket: net.Socket): Promise<void> {
  for (let pause = 0; pause < 3; pause += 1) {
    socket.pause();
    await new Promise((resolve) => setTimeout(resolve, 700));
    socket.resume();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A test on the app listening on a real port (with WebSocket), in a new workspace with a store of its own. */
async function onRealServer(storeName: string, work: (http: Listening, client: TestClient, storeId: string) => Promise<void>): Promise<void> {
  const http = await listenWithWebSocket(server.app);
  try {
    const client = await server.newWorkspace();
    await work(http, client, await createStoreNamed(client, storeName));
  } finally {
    await http.close();
  }
}

/**
 * The consumer stops reading (the kernel's buffers fill, then the server's) while m1 … m(total-1)
 * of 100 KB are written: the stream falls behind its buffer, and is cut off once its consumer
 * has taken nothing for REPLAY_STALL_MS. Then it reads again.
 */
async function stopReadingWhileWriting(socket: net.Socket, client: TestClient, storeId: string, total: number): Promise<void> {
  socket.pause();
  for (let index = 1; index < total; index += 1) await createMemoryAt(client, storeId, `m${index}.md`, LARGE);
  const hub = eventHubOf(server.app);
  for (let waited = 0; waited < REPLAY_STALL_MS + 5_000 && hub.openStreams > 0; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(hub.openStreams).toBe(0);
  socket.resume();
}

/** A raw graphql-ws client (the `ws` package, its socket at hand to pause): subscribed once the server acknowledged the key. */
async function graphqlWs(url: string, token: string | null, variables: Record<string, unknown>): Promise<{ ws: WebSocket; socket: net.Socket; messages: { type: string; payload?: any }[] }> {
  const messages: { type: string; payload?: any }[] = [];
  const ws = new WebSocket(url, 'graphql-transport-ws');
  ws.on('message', (raw) => messages.push(JSON.parse(raw.toString())));
  await new Promise((resolve) => ws.once('open', resolve));
  ws.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }));
  while (!messages.some((message) => message.type === 'connection_ack')) await new Promise((resolve) => setTimeout(resolve, 10));
  ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIBE_EVENTS, variables } }));
  return { ws, messages, socket: (ws as unknown as { _socket: net.Socket })._socket };
}

/** Resuming after the last event a cut-off stream got gives every later one (of `total`, at m0.md … ), once. */
async function expectResumesAfter(token: string | null, storeId: string, delivered: { cursor: string }[], total: number): Promise<void> {
  const resumed = await open(token, { memoryStoreId: storeId, after: delivered.at(-1)!.cursor });
  const rest = eventsOf(await resumed.waitFor(total - delivered.length, 20_000));
  expect([...delivered, ...rest].map((event: any) => event.version.path)).toEqual(Array.from({ length: total }, (_, index) => `m${index}.md`));
  resumed.close();
}

/** 100 KB of content: a few such events fill a socket's buffers. */
const LARGE = 'x'.repeat(100_000);

/** The body of an HTTP/1.1 response in chunked transfer encoding, as far as whole chunks have arrived. */
function dechunk(raw: Buffer): string {
  let offset = raw.indexOf('\r\n\r\n') + 4;
  const parts: Buffer[] = [];
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = Number.parseInt(raw.subarray(offset, lineEnd).toString(), 16);
    // A chunk still arriving is read next time.
    if (!size || lineEnd + 2 + size > raw.length) break;
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts).toString('utf8');
}

/** The `next` results of an event stream's text, as far as whole messages have arrived. */
function sseMessages(text: string): any[] {
  return text
    .split('\n\n')
    // What follows the last blank line is a message still arriving (or nothing).
    .slice(0, -1)
    .filter((message) => message.startsWith('event: next'))
    .map((message) => JSON.parse(message.slice(message.indexOf('data:') + 5)));
}
