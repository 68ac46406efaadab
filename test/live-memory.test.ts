import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken } from '../src/domain/api-keys.js';
import { eventsOf, subscribeSse, type TestStream } from './support/live.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { startServerProcess, type ServerProcess } from './support/process.js';

/**
 * Server memory stays flat with 500 idle streams, and with one stream whose consumer stopped
 * reading while large events keep coming: measured on a server process of its own (RSS
 * from /proc), against its RSS after a warm-up. On PGlite the embedded database lives in the
 * server process and grows with the 30 MB written; the bound is asserted on PostgreSQL.
 */
const token = generateToken();
const MB = 1024 * 1024;
let server: ServerProcess;
let url: string;
let drop: (() => Promise<void>) | undefined;
let databaseUrl: string | undefined;

function rss(): number {
  const status = fs.readFileSync(`/proc/${server.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

async function post(query: string, variables: Record<string, unknown> = {}): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) });
  return response.json();
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 1500));

describe.skipIf(process.platform !== 'linux')('server memory with many streams', () => {
  beforeAll(async () => {
    // On PostgreSQL when there is one: the embedded database's own growth would count as the server's.
    if (postgresUrl !== undefined) {
      const database = await createScratchPostgresDatabase('memstore_rss');
      drop = database.drop;
      databaseUrl = database.url;
    }
    server = startServerProcess({
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      MEMSTORE_DATA_DIR: 'memory://',
      MEMSTORE_BOOTSTRAP_KEYS: `memory:${token}`,
      MEMSTORE_RATE_LIMIT_PER_SECOND: '0',
      MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY: '1000',
      NODE_ENV: 'production',
      // What is measured is memory held, not garbage V8 has not collected yet: each 100 KB
      // event leaves its strings behind (large objects, freed only by a full collection),
      // and with the default heap limit a full collection may come late or early, which
      // moved the figures below by ±40 MB between runs. A heap of 256 MB (the server lives
      // in about 100) makes V8 collect them as it goes; memory truly held still counts.
      NODE_OPTIONS: '--max-old-space-size=256',
    });
    url = await server.ready.catch(async () => {
      throw new Error(server.stderr());
    });
  }, 60_000);
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    await drop?.();
  });

  it('stays within 50 MB of its warmed-up RSS with 500 idle streams, and a stalled stream adds less than 35 MB over the same writes without it (it holds at most its buffer and the live events held while it is behind)', async () => {
    const store = (await post('mutation { createMemoryStore(input: { name: "rss" }) { ... on CreateMemoryStoreSuccess { memoryStore { id } } } }')).data.createMemoryStore.memoryStore.id;
    const write = (path: string, content: string) =>
      post('mutation($s: ID!, $p: String!, $c: String!) { createMemory(input: { memoryStoreId: $s, path: $p, content: $c }) { __typename } }', { s: store, p: path, c: content });
    const query = 'subscription { memoryEvents { cursor kind memoryId version { path } } }';
    // Warm-up: a few streams and writes, so that what is measured later is the streams themselves.
    const warm: TestStream[] = [];
    for (let index = 0; index < 20; index += 1) warm.push(await subscribeSse(fetch, url, token, query));
    for (let index = 0; index < 20; index += 1) await write(`warm/${index}.md`, 'x'.repeat(1000));
    for (const stream of warm) await stream.waitFor(20);
    for (const stream of warm) stream.close();
    await settle();
    const start = rss();

    const idle: TestStream[] = [];
    for (let index = 0; index < 500; index += 1) idle.push(await subscribeSse(fetch, url, token, query));
    await settle();
    const withIdle = rss();
    // They are alive: one write reaches all 500.
    await write('all.md', 'to everyone');
    for (const stream of idle) expect(eventsOf(await stream.waitFor(1, 10_000))[0]!.version.path).toBe('all.md');
    for (const stream of idle) stream.close();
    await settle();

    // The control: 300 writes of 100 KB with no stream open (requests, statements and garbage not yet collected).
    const big = 'y'.repeat(100_000);
    let control = rss();
    for (let index = 0; index < 300; index += 1) {
      await write(`control/${index}.md`, big);
      if (index % 25 === 0) control = Math.max(control, rss());
    }
    await settle();
    control = Math.max(control, rss());

    // One consumer stops reading while 300 more events of 100 KB each are written.
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const body = JSON.stringify({ query: 'subscription { memoryEvents { cursor memory { content } } }' });
    socket.write(`POST /graphql HTTP/1.1\r\nHost: memstore.test\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socket.pause();
    await settle();
    let peak = rss();
    for (let index = 0; index < 300; index += 1) {
      await write(`big/${index}.md`, big);
      if (index % 25 === 0) peak = Math.max(peak, rss());
    }
    await settle();
    peak = Math.max(peak, rss());
    socket.destroy();

    console.log(
      `RSS: ${(start / MB).toFixed(1)} MB after warm-up; ${(withIdle / MB).toFixed(1)} MB with 500 idle streams (+${((withIdle - start) / MB).toFixed(1)} MB); ` +
        `peak ${(control / MB).toFixed(1)} MB over 300 writes of 100 KB with no stream; peak ${(peak / MB).toFixed(1)} MB over 300 more with one stalled stream (+${((peak - control) / MB).toFixed(1)} MB over the control)`,
    );
    expect(withIdle - start).toBeLessThan(50 * MB);
    // Its buffer (4 MiB of content), the live events held while it is behind (1 MiB) and the
    // socket's bytes, kept until it is cut off after 30 s of reading nothing, and the garbage
    // they leave; all 300 events held would be 60 MB (each holds its memory's and its
    // version's 100 KB).
    if (databaseUrl) expect(peak - control).toBeLessThan(35 * MB);
  }, 120_000);
});
