import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import type { AddressInfo } from 'node:net';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { socketAdmissionOf, type App } from '../../src/app.js';
import { createDb, type Database, type DatabaseHandle } from '../../src/db/client.js';
import { comparePositions } from '../../src/domain/events.js';
import { insertMemoryLocked, lockActiveStore } from '../../src/domain/memories/locked-writes.js';
import { writerOf, type Viewer } from '../../src/domain/viewer.js';
import { attachWebSocket, type WebSocketTransport } from '../../src/http/websocket.js';
import { silentLogger } from '../../src/logger.js';
import type { EventHub } from '../../src/subscriptions/event-hub.js';
import { settledMark } from './ask-again.js';

/** One result of a stream: an event's data, or the errors that ended it. */
export interface StreamResult {
  data?: { memoryEvents: Record<string, any> } | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

/** A subscription as a test sees it: what arrived so far, and ways to wait for more. */
export interface TestStream {
  results: StreamResult[];
  /** Resolves once `count` results have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<StreamResult[]>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

function collector(): { stream: Omit<TestStream, 'close' | 'ended'>; push: (result: StreamResult) => void } {
  const results: StreamResult[] = [];
  const waiters: (() => boolean)[] = [];
  return {
    stream: {
      results,
      waitFor(count, timeoutMs = 5000) {
        return new Promise((resolve, reject) => {
          const check = () => {
            if (results.length >= count) {
              clearTimeout(timer);
              resolve(results);
              return true;
            }
            return false;
          };
          const timer = setTimeout(() => reject(new Error(`waited ${timeoutMs} ms for ${count} results, got ${results.length}: ${JSON.stringify(results).slice(0, 2000)}`)), timeoutMs);
          if (!check()) waiters.push(check);
        });
      },
    },
    push(result) {
      results.push(result);
      // Waiters still short of their count wait on.
      const waiting = waiters.splice(0).filter((waiter) => !waiter());
      waiters.push(...waiting);
    },
  };
}

/** How a test's SSE consumer reads: not before `from` has settled, then a chunk at a time every `everyMs`, and only `chunks` chunks (then it stops reading, and holds the connection). */
export interface ReadingPace {
  from?: Promise<unknown>;
  everyMs?: number;
  chunks?: number;
}

/**
 * GraphQL over SSE ("distinct connections" mode) through `fetch` (app.fetch or a real URL).
 * Resolves once the response headers are in; `status` and `contentType` say what came back.
 * It reads as fast as the server sends, unless `pace` says otherwise.
 */
export async function subscribeSse(
  fetcher: (url: string, init: RequestInit) => Promise<Response>,
  url: string,
  token: string | null,
  query: string,
  variables: Record<string, unknown> = {},
  pace: ReadingPace = {},
): Promise<TestStream & { status: number; contentType: string | null }> {
  const controller = new AbortController();
  const response = await fetcher(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
    signal: controller.signal,
  });
  const { stream, push } = collector();
  const reader = response.headers.get('content-type')?.startsWith('text/event-stream') ? response.body!.getReader() : null;
  const ended = (async () => {
    const contentType = response.headers.get('content-type');
    if (!contentType?.startsWith('text/event-stream')) {
      push((await response.json()) as StreamResult);
      return;
    }
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      await pace.from;
      for (let chunks = 0; ; chunks += 1) {
        if (chunks === pace.chunks) await new Promise(() => {});
        if (pace.everyMs) await new Promise((resolve) => setTimeout(resolve, pace.everyMs));
        const { value: chunk, done } = await reader!.read();
        if (done) return;
        buffer += decoder.decode(chunk, { stream: true });
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          const lines = message.split('\n');
          const event = lines.find((line) => line.startsWith('event:'))?.slice(6).trim();
          const data = lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
          if (event === 'next') push(JSON.parse(data) as StreamResult);
          if (event === 'complete') return;
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  })();
  ended.catch(() => {});
  // Closing cancels the body (the server's stream ends at once, as when a socket closes), then aborts.
  return {
    ...stream,
    status: response.status,
    contentType: response.headers.get('content-type'),
    ended,
    close: () => {
      if (reader) void reader.cancel().catch(() => {});
      else controller.abort();
    },
  };
}

/** graphql-ws over a real WebSocket, the key in connection_init. */
export function subscribeWs(url: string, token: string | null, query: string, variables: Record<string, unknown> = {}): TestStream & { client: Client } {
  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
    lazy: false,
  });
  const { stream, push } = collector();
  let dispose: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    dispose = client.subscribe<any>(
      { query, variables },
      {
        next: (result) => push(result as StreamResult),
        error: (error) => {
          push({ errors: Array.isArray(error) ? error : [{ message: String((error as Error)?.message ?? error) }] });
          resolve();
        },
        complete: () => resolve(),
      },
    );
  });
  return { ...stream, ended, client, close: () => (dispose(), void client.dispose()) };
}

/** A test app listening on a real port, with its WebSocket transport (listenWithWebSocket). */
export interface Listening {
  url: string;
  wsUrl: string;
  server: Server;
  webSocket: WebSocketTransport;
  close: () => Promise<void>;
}

/** The app on a real port with the WebSocket transport attached, as src/server.ts runs it. */
export async function listenWithWebSocket(app: App): Promise<Listening> {
  const server = createServer(app);
  const webSocket = attachWebSocket(server, app, socketAdmissionOf(app), silentLogger);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    wsUrl: `ws://127.0.0.1:${port}/graphql`,
    server,
    webSocket,
    close: async () => {
      await webSocket.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What the live-update tests select of each event. */
export const EVENT_SELECTION = `cursor kind occurredAt memoryStoreId memoryStore { id name status } memoryId memory { id path content metadata } version { id operation path content redacted }`;

export const SUBSCRIBE_EVENTS = `subscription Events($memoryStoreId: ID, $pathPrefix: String, $after: String) {
  memoryEvents(memoryStoreId: $memoryStoreId, pathPrefix: $pathPrefix, after: $after) { ${EVENT_SELECTION} }
}`;

/** Runs an operation with a client's key; fails the test on errors. */
export async function run(client: { send(body: unknown): Promise<{ data?: any; errors?: unknown[] }> }, query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const response = await client.send({ query, variables });
  if (response.errors?.length || !response.data) throw new Error(`Expected data: ${JSON.stringify(response.errors)}`);
  return response.data;
}

export async function createStoreNamed(client: Parameters<typeof run>[0], name: string, extra = ''): Promise<string> {
  const data = await run(client, `mutation($name: String!) { createMemoryStore(input: { name: $name ${extra} }) { __typename ... on CreateMemoryStoreSuccess { memoryStore { id } } } }`, { name });
  return data.createMemoryStore.memoryStore.id as string;
}

export async function createMemoryAt(client: Parameters<typeof run>[0], memoryStoreId: string, path: string, content: string): Promise<{ id: string; versionId: string }> {
  const data = await run(
    client,
    `mutation($memoryStoreId: ID!, $path: String!, $content: String!) { createMemory(input: { memoryStoreId: $memoryStoreId, path: $path, content: $content }) { __typename ... on CreateMemorySuccess { memory { id latestVersion { id } } } } }`,
    { memoryStoreId, path, content },
  );
  const memory = data.createMemory.memory;
  if (!memory) throw new Error(`createMemory failed: ${JSON.stringify(data)}`);
  return { id: memory.id, versionId: memory.latestVersion.id };
}

/** The events of a stream's results (fails on an error result). */
export function eventsOf(results: StreamResult[]): Record<string, any>[] {
  return results.map((result) => {
    if (result.errors?.length || !result.data) throw new Error(`stream error: ${JSON.stringify(result.errors)}`);
    return result.data.memoryEvents;
  });
}

/** The test server's app on a real port with WebSocket for the whole file (listenWithWebSocket): `http()` once it listens. */
export function useListening(app: () => App): () => Listening {
  let http: Listening | undefined;
  beforeAll(async () => {
    http = await listenWithWebSocket(app());
  });
  afterAll(async () => {
    await http?.close();
  });
  return () => http!;
}

/**
 * A second connection pool on the test server's PostgreSQL database, for the file's tests
 * (opened before them, closed after): to hold a transaction open by hand.
 */
export function useSecondPool(server: { database: { url: string | undefined } }): () => DatabaseHandle {
  let pool: DatabaseHandle | undefined;
  beforeAll(async () => {
    pool = await createDb({ databaseUrl: server.database.url, dataDir: 'memory://', poolSize: 2 });
  });
  afterAll(async () => {
    await pool?.close();
  });
  return () => pool!;
}

/**
 * A write left open on purpose (PostgreSQL): on `db`, a transaction that locks the store,
 * writes a memory at `path` with its event (taking its transaction id and event position
 * now) and waits. Resolves once it has written; `commit()` lets it finish and resolves when
 * it has committed.
 */
export async function holdWriteOpen(db: Database, viewer: Viewer, memoryStoreId: string, path: string, content: string): Promise<{ commit(): Promise<void> }> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let written!: () => void;
  const taken = new Promise<void>((resolve) => (written = resolve));
  const transaction = db.transaction(async (tx) => {
    await lockActiveStore(tx, viewer.workspaceId, memoryStoreId);
    await insertMemoryLocked(tx, writerOf(viewer), memoryStoreId, { path, content, metadata: {} }, new Date());
    written();
    await held;
  });
  await Promise.race([taken, transaction]);
  return {
    commit: async () => {
      release();
      await transaction;
    },
  };
}

/**
 * Polls once (the poller driven by hand) and says whether that poll read up to the
 * workspace's newest event. On PostgreSQL a writing transaction of another database (another
 * test file) that ends while the poll computes its horizon holds the horizon for that
 * statement (drizzle/0010): the poll stops short, as it may on a busy server, where the next
 * poll delivers the rest. `poll` runs the poll (to count its statements, say).
 */
export async function pollReaching(hub: EventHub, db: Database, workspaceId: string, poll: () => Promise<unknown> = () => hub.poll()): Promise<boolean> {
  const [xid, id] = (await settledMark(db, workspaceId)).split('.');
  await poll();
  return comparePositions(hub.readPosition!, { xid: BigInt(xid!), id: Number(id) }) >= 0;
}

/** Polls until the poller has read up to the workspace's newest event: one poll, but for the case pollReaching describes. */
export async function pollThrough(hub: EventHub, db: Database, workspaceId: string): Promise<void> {
  for (let attempt = 0; attempt < 50 && !(await pollReaching(hub, db, workspaceId)); attempt += 1) await new Promise((resolve) => setTimeout(resolve, 100));
}

type Rows = Record<string, unknown>[];

/**
 * Puts `override` in front of the hub's replays' database until the returned `restore`: a
 * property it answers `undefined` for is the database's own.
 */
export function interposeOnReplays(hub: EventHub, override: (target: Database, property: string | symbol) => unknown): () => void {
  const poller = hub as unknown as { replays: Database };
  const original = poller.replays;
  poller.replays = new Proxy(original, { get: (target, property, receiver) => override(target, property) ?? Reflect.get(target, property, receiver) });
  return () => (poller.replays = original);
}

/** `select(…).from(…).where(…)` of `target` (what loadEventSubjects sends), its statement run through `around`. */
export function selectThrough(target: Database, around: (rows: () => Promise<Rows>) => Promise<Rows>) {
  return (...args: Parameters<Database['select']>) => {
    const builder = target.select(...args);
    return {
      from: (...fromArgs: Parameters<typeof builder.from>) => {
        const query = builder.from(...fromArgs);
        return { where: (...whereArgs: Parameters<typeof query.where>) => around(() => query.where(...whereArgs) as unknown as Promise<Rows>) };
      },
    };
  };
}

/** Watches the replays' database: the content (memories' and versions' contentSizeBytes) its statements read, the most one read and all together, while watching. */
export function watchContentRead(hub: EventHub) {
  let most = 0;
  let total = 0;
  const restore = interposeOnReplays(hub, (target, property) =>
    property === 'select'
      ? selectThrough(target, async (rows) => {
          const read = await rows();
          const content = read.reduce((sum, row) => sum + Number(row.contentSizeBytes ?? 0), 0);
          most = Math.max(most, content);
          total += content;
          return read;
        })
      : undefined,
  );
  return { most: () => most, total: () => total, restore };
}
