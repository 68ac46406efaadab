import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createDb, poolSizes, type DatabaseHandle } from '../src/db/client.js';
import { generateToken } from '../src/domain/api-keys.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { startServerProcess, type ServerProcess } from './support/process.js';
import { parsePrometheusText } from './support/prometheus.js';

/**
 * MEMSTORE_DB_POOL_SIZE bounds the PostgreSQL connections a server opens for its requests:
 * many concurrent requests, reads that hold a snapshot and writes, share that many
 * connections and all succeed. Besides the pool, a server keeps one connection for its
 * readiness check, one that announces committed writes, one that listens for live updates,
 * one that reads them and one that replays them to streams that resume or fall behind.
 */

const POOL_SIZE = 2;
const OWN_CONNECTIONS = 5;
const CONCURRENT = 40;
const WORKSPACE_ID = 'pool-size';
const TOKEN = generateToken();
const CHECKER = 'pool-size-checker';

describe.skipIf(postgresUrl === undefined)('the database pool, on PostgreSQL', { timeout: 120_000 }, () => {
  let server: ServerProcess;
  let url: string;
  let checker: postgres.Sql;
  let scratch: Awaited<ReturnType<typeof createScratchPostgresDatabase>>;
  let dataDir: string;

  beforeAll(async () => {
    scratch = await createScratchPostgresDatabase();
    const checkerUrl = new URL(scratch.url);
    checkerUrl.searchParams.set('application_name', CHECKER);
    checker = postgres(checkerUrl.toString(), { max: 1, onnotice: () => {} });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-pool-'));
    server = startServerProcess({
      DATABASE_URL: scratch.url,
      MEMSTORE_DATA_DIR: dataDir,
      MEMSTORE_BOOTSTRAP_KEYS: `${WORKSPACE_ID}:${TOKEN}`,
      MEMSTORE_RATE_LIMIT_PER_SECOND: '0',
      MEMSTORE_DB_POOL_SIZE: String(POOL_SIZE),
    });
    url = await server.ready;
  });

  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    await checker?.end();
    await scratch?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const send = async (query: string, variables: Record<string, unknown> = {}) => {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ query, variables }) });
    return { status: response.status, body: (await response.json()) as { data?: Record<string, unknown>; errors?: unknown[] } };
  };

  it(`opens at most MEMSTORE_DB_POOL_SIZE connections for ${CONCURRENT} concurrent reads and writes, which all succeed`, async () => {
    const backends = async () =>
      Number((await checker`select count(*)::int as n from pg_stat_activity where datname = ${scratch.name} and application_name <> ${CHECKER}`)[0]!.n);
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, await backends());
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, n) =>
        n % 2 === 0
          ? send('mutation ($name: String!) { createMemoryStore(input: { name: $name }) { __typename } }', { name: `store ${n}` })
          : // Resolved field by field, in one read snapshot that holds its connection throughout.
            send('{ memoryStores(first: 50) { totalCount edges { node { name bindingInfo { identityTemplateCount } } } } }'),
      ),
    );
    sampling = false;
    await sampler;
    expect(answers.map((answer) => answer.status)).toEqual(Array(CONCURRENT).fill(200));
    expect(answers.filter((answer) => answer.body.errors !== undefined)).toEqual([]);
    expect(answers.filter((answer) => answer.body.data!.createMemoryStore !== undefined).map((answer) => answer.body.data!.createMemoryStore)).toEqual(
      Array(CONCURRENT / 2).fill({ __typename: 'CreateMemoryStoreSuccess' }),
    );
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(POOL_SIZE + OWN_CONNECTIONS);

    const metrics = parsePrometheusText(await (await fetch(new URL('/metrics', url))).text());
    // One connection for compiled reads, one for the rest (poolSizes).
    expect(Object.fromEntries(metrics.get('memstore_db_pool_size')!.samples.map((sample) => [sample.labels.part, sample.value]))).toEqual({ reads: 1, general: 1 });
  });
});

describe('how a pool is split', () => {
  it('gives compiled reads a quarter of the connections, rounded up, and everything else the rest; a pool of one is shared', () => {
    expect(poolSizes(1)).toEqual({ reads: 0, general: 1 });
    expect(poolSizes(2)).toEqual({ reads: 1, general: 1 });
    expect(poolSizes(8)).toEqual({ reads: 2, general: 6 });
    expect(poolSizes(20)).toEqual({ reads: 5, general: 15 });
    expect(poolSizes(100)).toEqual({ reads: 25, general: 75 });
    expect(poolSizes(3)).toEqual({ reads: 1, general: 2 });
    for (let size = 1; size <= 200; size += 1) {
      const { reads, general } = poolSizes(size);
      expect(reads + general).toBe(size);
      expect(general).toBeGreaterThan(0);
    }
  });
});

describe.skipIf(postgresUrl === undefined)('the two parts of a pool, on PostgreSQL', { timeout: 60_000 }, () => {
  let scratch: Awaited<ReturnType<typeof createScratchPostgresDatabase>>;
  let handle: DatabaseHandle;

  beforeAll(async () => {
    scratch = await createScratchPostgresDatabase();
    handle = await createDb({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 8 });
  });

  afterAll(async () => {
    await handle?.close();
    await scratch?.drop();
  });

  const backendOf = async (rows: Promise<unknown[]>) => Number((await rows).map((row) => Object.values(row as object)[0])[0]);

  it('pipelines 60 concurrent compiled reads on two connections, and runs six transactions at once on six others', async () => {
    // Compiled reads (handle.run), all sent at once: two backends answer them all.
    const readBackends = new Set(await Promise.all(Array.from({ length: 60 }, () => backendOf(handle.run!('select pg_backend_pid() as pid', [])))));
    expect(readBackends.size).toBeLessThanOrEqual(2);
    // Six transactions that wait for each other: they can only all finish if each has a
    // connection of its own at the same time, and none of them is a reads' connection.
    let arrived = 0;
    let allArrived!: () => void;
    let release!: () => void;
    const together = new Promise<void>((resolve) => (allArrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const transactions = Promise.all(
      Array.from({ length: 6 }, () =>
        handle.db.transaction(async (tx) => {
          const backend = await backendOf(tx.execute(sql`select pg_backend_pid() as pid`) as unknown as Promise<unknown[]>);
          arrived += 1;
          if (arrived === 6) allArrived();
          await released;
          return backend;
        }),
      ),
    );
    await together;
    // While all six are open, a read still gets its answer, from a reads' connection.
    expect(readBackends.has(await backendOf(handle.run!('select pg_backend_pid() as pid', [])))).toBe(true);
    release();
    const transactionBackends = await transactions;
    expect(new Set(transactionBackends).size).toBe(6);
    expect(transactionBackends.filter((backend) => readBackends.has(backend))).toEqual([]);
  });

  it('refuses a write sent on the compiled reads\' connections, which read as any other', async () => {
    await handle.db.execute(sql`create table if not exists guarded (id int primary key)`);
    // Every connection of the two: sent at once, the statements spread over both.
    const refusals = await Promise.all(Array.from({ length: 8 }, () => handle.run!('insert into guarded values (1)', []).then(() => null, (error: { code?: string }) => error.code)));
    expect(refusals).toEqual(Array.from({ length: 8 }, () => '25006'));
    expect(await handle.db.execute(sql`select count(*)::int as n from guarded`)).toEqual([{ n: 0 }]);
    expect(await handle.run!('select count(*)::int as n from guarded', [])).toEqual([{ n: 0 }]);
  });

  it('answers compiled reads at once while writes outside transactions wait for a lock another session holds', async () => {
    const holder = postgres(scratch.url, { max: 1, onnotice: () => {} });
    const watcher = postgres(scratch.url, { max: 1, onnotice: () => {} });
    try {
      await holder.unsafe('create table held (id int primary key, n int)');
      await holder.unsafe('insert into held values (1, 0)');
      let locked!: () => void;
      let release!: () => void;
      const holding = new Promise<void>((resolve) => (locked = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      const lock = holder.begin(async (tx) => {
        await tx.unsafe('select * from held where id = 1 for update');
        locked();
        await released;
      });
      await holding;
      // Six writes (statements outside transactions, as one-statement writes are) wait for the row.
      const writes = Promise.all(Array.from({ length: 6 }, () => handle.db.execute(sql`update held set n = n + 1 where id = 1`)));
      const waiting = async () => Number((await watcher.unsafe(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like 'update held%'`))[0]!.n);
      for (let waited = 0; (await waiting()) < 6 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await waiting()).toBe(6);
      const started = performance.now();
      await Promise.all(Array.from({ length: 20 }, () => handle.run!('select 1 as one', [])));
      const readsMs = performance.now() - started;
      release();
      await lock;
      await writes;
      expect(readsMs).toBeLessThan(1_000);
      expect(Number((await holder.unsafe('select n from held where id = 1'))[0]!.n)).toBe(6);
    } finally {
      await holder.end();
      await watcher.end();
    }
  });
});
