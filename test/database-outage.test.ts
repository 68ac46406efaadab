import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../src/app.js';
import { createDb, type DatabaseHandle } from '../src/db/client.js';
import { recordStatements } from '../src/db/statement-count.js';
import { ensureAdminKey, generateToken } from '../src/domain/api-keys.js';
import { readsCompiledSoFar } from '../src/read-compiler/compile.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { askAgain } from './support/ask-again.js';

/**
 * Database trouble is not a bug of the request: an outage, a database that stops answering,
 * or no connection slot left answers 503 DATABASE_UNAVAILABLE with Retry-After (never a
 * masked 500); /readyz says so within a second either way; and the server recovers by
 * itself when the database is back.
 */

const WORKSPACE = 'outage';
const TOKEN = generateToken();
const LIST = '{ memoryStores(first: 5) { totalCount edges { node { id name } } } }';
const CREATE = 'mutation ($name: String!) { createMemoryStore(input: { name: $name }) { __typename } }';

async function post(app: App, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const response = await app.fetch('http://memstore.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: `Bearer ${TOKEN}`, ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), tag: response.headers.get('etag'), body: (await response.json()) as any };
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const start = performance.now();
  const result = await work();
  return { result, ms: performance.now() - start };
}

const readiness = (app: App) => timed(async () => (await app.fetch('http://memstore.test/readyz')).status);

describe.skipIf(postgresUrl === undefined)('when the database is in trouble (PostgreSQL)', { timeout: 60_000 }, () => {
  let scratch: Awaited<ReturnType<typeof createScratchPostgresDatabase>>;
  let proxy: TcpProxy;
  let database: DatabaseHandle;
  let app: App;

  beforeAll(async () => {
    scratch = await createScratchPostgresDatabase();
    proxy = await TcpProxy.start(scratch.url);
    database = await createDb({ databaseUrl: proxy.urlFor(scratch.url), dataDir: 'memory://', poolSize: 4 });
    await ensureAdminKey(database.db, WORKSPACE, TOKEN, new Date(), 'outage key');
    app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database });
  });

  afterAll(async () => {
    await proxy?.restore();
    await database?.close();
    await proxy?.close();
    await scratch?.drop();
  });

  it('down: reads and writes answer 503 DATABASE_UNAVAILABLE with Retry-After, /readyz says 503 within a second, /healthz 200; back up, it recovers without a restart', async () => {
    expect((await post(app, LIST)).status).toBe(200);
    const SEARCHED = '{ searchMemories(query: "outage") { totalCount } }';
    // A search's tag, to poll with (withheld while the workspace's change mark is unsettled for an instant).
    const { tag } = await askAgain(() => post(app, SEARCHED), (answer) => answer.tag === null);
    expect(tag).not.toBeNull();
    // Polled with it while the database is up: 304 (its check statement answered).
    const polled = async () =>
      app.fetch('http://memstore.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: `Bearer ${TOKEN}`, 'if-none-match': tag! },
        body: JSON.stringify({ query: SEARCHED }),
      });
    expect((await askAgain(polled, (response) => response.status !== 304)).status).toBe(304);
    await proxy.refuse();
    // A list and a search (compiled reads, each one statement), a polled search (its check statement), and a write.
    for (const [query, variables, headers] of [[LIST, {}, {}], [SEARCHED, {}, {}], [SEARCHED, {}, { 'if-none-match': tag! }], [CREATE, { name: 'during the outage' }, {}]] as const) {
      const answer = await post(app, query, variables, headers);
      expect(answer.status).toBe(503);
      expect(answer.retryAfter).toBe('1');
      expect(answer.body.errors[0].extensions.code).toBe('DATABASE_UNAVAILABLE');
      expect(JSON.stringify(answer.body)).not.toMatch(/ECONNREFUSED|5432|127\.0\.0\.1/);
    }
    const ready = await readiness(app);
    expect(ready.result).toBe(503);
    expect(ready.ms).toBeLessThan(1_500);
    expect((await app.fetch('http://memstore.test/healthz')).status).toBe(200);

    await proxy.restore();
    const created = await post(app, CREATE, { name: 'after the outage' });
    expect(created.status).toBe(200);
    expect(created.body.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
    expect((await readiness(app)).result).toBe(200);
    const listed = await post(app, LIST);
    expect(listed.body.data.memoryStores.edges.map((edge: any) => edge.node.name)).toEqual(['after the outage']);
  });

  it('down: a token no key has, asking a read not compiled yet, answers 503 DATABASE_UNAVAILABLE with nothing compiled (its key could not be looked up); back up, 401 and still nothing compiled', async () => {
    const stranger = { authorization: `Bearer ${generateToken()}` };
    const NEW_READ = '{ memoryStores(first: 3) { edges { node { id description createdAt } } } }';
    const before = readsCompiledSoFar();
    await proxy.refuse();
    try {
      const answer = await post(app, NEW_READ, {}, stranger);
      expect([answer.status, answer.retryAfter, answer.body.errors[0].extensions.code]).toEqual([503, '1', 'DATABASE_UNAVAILABLE']);
      expect(readsCompiledSoFar() - before).toBe(0);
    } finally {
      await proxy.restore();
    }
    const refused = await post(app, NEW_READ, {}, stranger);
    expect([refused.status, refused.body.errors[0].extensions.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(readsCompiledSoFar() - before).toBe(0);
    // The workspace's own key compiles and answers it.
    expect((await post(app, NEW_READ)).status).toBe(200);
    expect(readsCompiledSoFar() - before).toBe(1);
  });

  it('a query running alone (one statement, as it learned) whose connections drop answers 503 DATABASE_UNAVAILABLE, then answers alone again once the database is back', async () => {
    // The search's statement goes through db.execute: just before the next one, every connection is dropped.
    let beforeNextExecute: (() => Promise<void>) | null = null;
    let snapshots = 0;
    const watchedExecute = (db: DatabaseHandle['db']) =>
      new Proxy(db, {
        get(target, property, receiver) {
          if (property !== 'execute') return Reflect.get(target, property, receiver);
          return async (...args: Parameters<DatabaseHandle['db']['execute']>) => {
            const before = beforeNextExecute;
            beforeNextExecute = null;
            await before?.();
            return target.execute(...args);
          };
        },
      });
    // A request's statements go through its own database handle (DatabaseHandle.scoped).
    // The resolvers answer (compiled reads would answer the search in their one statement, with the key's lookup).
    const watched = createApp({
      config: { nodeEnv: 'test', graphiql: false },
      compiledReads: false,
      database: {
        ...database,
        scoped: (scope) => {
          const scoped = database.scoped(scope);
          const db = watchedExecute(scoped.db);
          return { db, readSnapshot: (work) => ((snapshots += 1), scoped.readSnapshot(work)) };
        },
      },
    });
    const SEARCH = '{ searchMemories(query: "outage") { totalCount edges { node { id } } } }';
    for (let round = 0; round < 2; round += 1) expect((await post(watched, SEARCH)).body.data.searchMemories.totalCount).toBe(0);
    expect(snapshots).toBe(1);
    beforeNextExecute = () => proxy.refuse();
    try {
      const { result: answer, statements } = await recordStatements(() => post(watched, SEARCH));
      // The key was found; the search's statement is the one that met the dropped connections.
      expect(statements.map((statement) => statement.sql.includes('ts_rank_cd'))).toEqual([false, true]);
      expect(answer.status).toBe(503);
      expect(answer.body.errors[0].extensions.code).toBe('DATABASE_UNAVAILABLE');
      // A failure is not a second statement: no run in a snapshot after it.
      expect(snapshots).toBe(1);
    } finally {
      await proxy.restore();
    }
    const again = await post(watched, SEARCH);
    expect(again.status).toBe(200);
    expect(again.body.data.searchMemories.totalCount).toBe(0);
    expect(snapshots).toBe(1);
  });

  it('a database that never answers: /readyz says 503 within a second, and a request answers 503 DATABASE_UNAVAILABLE before its time limit', async () => {
    await proxy.blackHole();
    try {
      const ready = await readiness(app);
      expect(ready.result).toBe(503);
      expect(ready.ms).toBeLessThan(1_500);
      const { result: answer, ms } = await timed(() => post(app, LIST));
      expect(answer.status).toBe(503);
      expect(answer.body.errors[0].extensions.code).toBe('DATABASE_UNAVAILABLE');
      expect(ms).toBeLessThan(9_000);
    } finally {
      await proxy.restore();
    }
    expect((await post(app, LIST)).status).toBe(200);
  });

  it('a pool whose every connection is busy does not hold up /readyz', async () => {
    const holder = postgres(scratch.url, { max: 1, onnotice: () => {} });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => (locked = resolve));
    try {
      const lock = holder.begin(async (tx) => {
        await tx`lock table memory_stores in access exclusive mode`;
        locked();
        await released;
      });
      await holding;
      // Four requests (the pool's size) wait for the table: every connection is taken.
      const waiting = Array.from({ length: 4 }, () => post(app, LIST));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const ready = await readiness(app);
      expect(ready.result).toBe(200);
      expect(ready.ms).toBeLessThan(1_000);
      release();
      await lock;
      for (const answer of await Promise.all(waiting)) expect(answer.status).toBe(200);
    } finally {
      release();
      await holder.end();
    }
  });

  it('no connection slot left: a request that cannot get a connection answers 503 DATABASE_UNAVAILABLE', async () => {
    const role = `memstore_limited_${process.pid}`;
    const admin = postgres(scratch.url, { max: 1, onnotice: () => {} });
    const holder = postgres(scratch.url, { max: 1, onnotice: () => {} });
    let limited: DatabaseHandle | undefined;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    try {
      await admin.unsafe(`create role ${role} login connection limit 2`);
      // The server migrates at start: the role may read the migration log and the tables.
      await admin.unsafe(`grant create on database "${scratch.name}" to ${role}`);
      await admin.unsafe(`grant all on schema drizzle, public to ${role}`);
      await admin.unsafe(`grant all on all tables in schema drizzle, public to ${role}`);
      await admin.unsafe(`grant all on all sequences in schema drizzle, public to ${role}`);
      const url = new URL(scratch.url);
      url.username = role;
      // Three of twelve connections are for compiled reads (poolSizes), as these reads are.
      limited = await createDb({ databaseUrl: url.toString(), dataDir: 'memory://', poolSize: 12 });
      const limitedApp = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: limited });
      let locked!: () => void;
      const holding = new Promise<void>((resolve) => (locked = resolve));
      const lock = holder.begin(async (tx) => {
        await tx`lock table memory_stores in access exclusive mode`;
        locked();
        await released;
      });
      await holding;
      // Six requests at once: the pool opens three connections for them; two get the role's two
      // (and wait for the table), the third is refused by PostgreSQL (53300), with the request
      // it was opened for.
      const answers = Array.from({ length: 6 }, () => post(limitedApp, LIST));
      const refused = await Promise.race([
        Promise.any(answers.map(async (answer) => ((await answer).status === 503 ? answer : Promise.reject(new Error('not refused'))))),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 8_000)),
      ]);
      expect(refused).not.toBeNull();
      const first = await refused!;
      expect(first.body.errors[0].extensions.code).toBe('DATABASE_UNAVAILABLE');
      expect(first.retryAfter).toBe('1');
      release();
      await lock;
      const statuses = (await Promise.all(answers)).map((answer) => answer.status);
      expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
      expect(statuses).toContain(200);
    } finally {
      release();
      await limited?.close();
      await holder.end();
      await admin.unsafe(`drop owned by ${role}`).catch(() => {});
      await admin.unsafe(`drop role if exists ${role}`).catch(() => {});
      await admin.end();
    }
  });
});
