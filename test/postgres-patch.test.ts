import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { postgresUrl } from './support/database.js';

// src/db/patch-postgres.mjs (the npm postinstall script) patches postgres.js 3.4.9 in
// node_modules; these tests fail when it has not run. The queue tests need no database:
// its pool queues keep one spent slot per query, and Queue.remove scans them all. The
// connection tests (PostgreSQL only) cut sessions the way a failover does.

interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T | undefined): T | null | undefined;
}
type QueueFactory = <T>(initial?: T[]) => Queue<T>;

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

function postgresPackage(): { dir: string; exports: { import: string; default: string } } {
  let dir = path.dirname(require.resolve('postgres'));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name: string; exports: { import: string; default: string } };
      if (pkg.name === 'postgres') return { dir, exports: pkg.exports };
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('postgres package not found');
    dir = parent;
  }
}

const pkg = postgresPackage();
/** queue.js next to the entry that `import 'postgres'` (ESM) and `require('postgres')` load. */
const builds = {
  esm: path.join(pkg.dir, path.dirname(pkg.exports.import), 'queue.js'),
  cjs: path.join(pkg.dir, path.dirname(pkg.exports.default), 'queue.js'),
};

async function loadQueue(kind: keyof typeof builds): Promise<QueueFactory> {
  if (kind === 'cjs') return require(builds.cjs) as QueueFactory;
  const module = (await import(pathToFileURL(builds.esm).href)) as { default: QueueFactory };
  return module.default;
}

describe('postgres.js queue patch', () => {
  it('is applied to every build in node_modules', () => {
    const result = spawnSync(process.execPath, ['src/db/patch-postgres.mjs', '--check'], { cwd: root, encoding: 'utf8' });
    expect(result.stderr + result.stdout).toContain('patches: present');
    expect(result.status).toBe(0);
  });

  for (const kind of ['esm', 'cjs'] as const) {
    describe(`${kind} build`, () => {
      it('never scans the spent head of the queue on remove', async () => {
        const Queue = await loadQueue(kind);
        const queue = Queue<{ id: number }>();
        const [a, b] = [{ id: 1 }, { id: 2 }];
        queue.push(a);
        queue.push(b);
        expect(queue.shift()).toBe(a);
        // Unpatched, remove() runs indexOf from slot 0, finds the spent (undefined) slot
        // left by shift() and splices it, dropping b from the queue.
        expect(queue.remove(undefined)).toBeNull();
        expect(queue.length).toBe(1);
        expect(queue.shift()).toBe(b);
        expect(queue.length).toBe(0);
      });

      it('keeps move() cheap on a queue that never drains, as the busy queue under load', async () => {
        const Queue = await loadQueue(kind);
        const busy = Queue<{ id: number }>();
        for (let id = 0; id < 10; id += 1) busy.push({ id });
        // What the pool does per query: take a busy connection, move() it to busy again.
        const moves = (count: number) => {
          const start = performance.now();
          for (let i = 0; i < count; i += 1) {
            const connection = busy.shift()!;
            busy.remove(connection);
            busy.push(connection);
          }
          return performance.now() - start;
        };
        const fresh = moves(2_000);
        // 200k queries later (shift + push only: O(1) either way). Unpatched, the array
        // now holds ~200k spent slots and those 2,000 moves scan them all (~0.3 s here).
        for (let i = 0; i < 200_000; i += 1) busy.push(busy.shift()!);
        const aged = moves(2_000);
        expect(busy.length).toBe(10);
        expect(aged).toBeLessThan(Math.max(25, fresh * 20));
      });
    });
  }
});

describe.skipIf(postgresUrl === undefined)('postgres.js when PostgreSQL ends a session', () => {
  const url = postgresUrl!;

  async function terminate(pid: number): Promise<void> {
    const killer = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await killer`select pg_terminate_backend(${pid})`;
    } finally {
      await killer.end();
    }
  }

  it('a transaction whose session ended fails its next statements, never runs them on a new session, and the process lives on', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const table = `patch_probe_${process.pid}_${Date.now()}`;
    try {
      await sql.unsafe(`create table ${table} (n int)`);
      let waiting: Promise<unknown> | undefined;
      const statements: string[] = [];
      let bodyDone!: () => void;
      const body = new Promise<void>((resolve) => (bodyDone = resolve));
      const transaction = sql.begin(async (tx) => {
        try {
          const [{ pid }] = (await tx<{ pid: number }[]>`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
          // A query waiting for the pool's one connection: when the session ends, the pool
          // reconnects that connection for it at once.
          waiting = sql`select 1 as one`;
          await terminate(pid);
          await new Promise((resolve) => setTimeout(resolve, 100));
          // Unpatched, these run on the reconnected session, in autocommit (or crash the
          // process from a timer: "Cannot read properties of null (reading 'write')").
          for (const n of [1, 2]) {
            statements.push(await tx.unsafe(`insert into ${table} values (${n})`).then(() => 'ran', (error: { code?: string }) => error.code ?? 'failed'));
          }
        } finally {
          bodyDone();
        }
      });
      await expect(transaction).rejects.toMatchObject({ code: expect.stringMatching(/^(CONNECTION_CLOSED|57P01)$/) });
      await body;
      expect(statements).toEqual(['CONNECTION_CLOSED', 'CONNECTION_CLOSED']);
      await expect(waiting).resolves.toEqual([{ one: 1 }]);
      expect(await sql.unsafe(`select count(*)::int as rows from ${table}`)).toEqual([{ rows: 0 }]);
    } finally {
      await sql.unsafe(`drop table if exists ${table}`).catch(() => {});
      await sql.end();
    }
  });

  it('a session cut in the middle of a long answer leaves nothing behind for the next one', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      for (let round = 0; round < 5; round += 1) {
        const [{ pid }] = (await sql<{ pid: number }[]>`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
        const long = sql`select n from generate_series(1, 2000000) as n`.then(() => 'finished', (error: { code?: string }) => error.code);
        await new Promise((resolve) => setTimeout(resolve, 30));
        await terminate(pid);
        expect(await long).toMatch(/^(CONNECTION_CLOSED|57P01|ECONNRESET)$/);
        // Unpatched, these can resolve with a hole where their first row belongs, or fail with
        // the old session's "terminating connection due to administrator command".
        for (let query = 0; query < 3; query += 1) {
          const rows = await sql<{ n: number }[]>`select ${query}::int as n`;
          expect(rows.length).toBe(1);
          expect(rows[0]).toEqual({ n: query });
        }
      }
    } finally {
      await sql.end();
    }
  });
});
