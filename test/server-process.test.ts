import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { startServerProcess, type ServerProcess } from './support/process.js';
import { HEAP_GROWING_PERCENT, heapGrowingFlag } from '../src/server.js';

const running: ServerProcess[] = [];
const scratchDirs: string[] = [];

function start(env: Record<string, string>): ServerProcess {
  const server = startServerProcess(env);
  running.push(server);
  return server;
}

function temporaryDataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-test-'));
  scratchDirs.push(dir);
  return dir;
}

afterAll(async () => {
  for (const server of running.splice(0)) {
    if (server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
  }
  for (const dir of scratchDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function graphql(url: string, token: string, query: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  return { status: response.status, body: (await response.json()) as { data?: any; errors?: unknown[] } };
}

// Each test starts real server processes (a few seconds each on PGlite, more on a loaded machine).
describe('the server process', { timeout: 120_000 }, () => {
  it('exits non-zero and lists every configuration problem at once', async () => {
    const server = start({ PORT: 'abc', DATABASE_URL: 'nope', LOG_LEVEL: 'loud' });
    expect(await server.exited).toBe(1);
    expect(server.stderr()).toMatch(/Invalid configuration/);
    expect(server.stderr()).toMatch(/PORT:/);
    expect(server.stderr()).toMatch(/DATABASE_URL:/);
    expect(server.stderr()).toMatch(/LOG_LEVEL:/);
  });

  // One story on one data dir, so that the suite starts as few PGlite processes as it can.
  describe('on a PGlite data dir', () => {
    const dataDir = temporaryDataDir();
    let first: ServerProcess;
    let url: string;
    let token: string;
    let acknowledged = 0;

    it('creates, prints and saves a development key on first start', async () => {
      first = start({ MEMSTORE_DATA_DIR: dataDir });
      url = await first.ready;
      token = fs.readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim();
      expect(token).toMatch(/^msk_[A-Za-z0-9]{40}$/);
      expect(first.stdout()).toContain(token);
      const created = await graphql(url, token, 'mutation { createMemoryStore(input: { name: "survives" }) { __typename } }');
      expect(created.body.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
      acknowledged += 1;
    });

    it('refuses a second process on the same data dir with a clear message', async () => {
      const second = start({ MEMSTORE_DATA_DIR: dataDir });
      expect(await second.exited).toBe(1);
      expect(second.stderr()).toMatch(/in use by another memstore process \(pid \d+\)/);
      // The first one is unharmed.
      expect((await fetch(new URL('/readyz', url))).status).toBe(200);
    });

    it('finishes in-flight requests on SIGTERM', async () => {
      let sigtermSent = false;
      const requests = Array.from({ length: 40 }, (_, index) =>
        graphql(url, token, `mutation { createMemoryStore(input: { name: "load ${index}" }) { __typename } }`).then(
          (result) => ({ ok: true as const, result, afterSigterm: sigtermSent }),
          (error: unknown) => ({ ok: false as const, error }),
        ),
      );
      await Promise.race(requests);
      first.child.kill('SIGTERM');
      sigtermSent = true;
      const outcomes = await Promise.all(requests);
      expect(await first.exited).toBe(0);
      const answered = outcomes.filter((outcome) => outcome.ok);
      // Every request that got an answer got a complete, successful one.
      for (const outcome of answered) {
        expect(outcome.result.status).toBe(200);
        expect(outcome.result.body.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
      }
      // Some were still in flight when the signal came, and were finished rather than dropped.
      expect(answered.filter((outcome) => outcome.ok && outcome.afterSigterm).length).toBeGreaterThan(0);
      acknowledged += answered.length;
    });

    it('reopens the same data dir cleanly with every acknowledged write, without printing the key again', async () => {
      const restarted = start({ MEMSTORE_DATA_DIR: dataDir });
      const restartedUrl = await restarted.ready;
      expect(restarted.stdout()).not.toContain(token);
      const count = await graphql(restartedUrl, token, '{ memoryStores { totalCount } }');
      expect(count.body.data.memoryStores.totalCount).toBe(acknowledged);
      restarted.child.kill('SIGTERM');
      expect(await restarted.exited).toBe(0);
    });
  });

  it.runIf(postgresUrl)('starts twice at once against one empty PostgreSQL database: both come up, migrations and the first key happen once', async () => {
    const scratch = await createScratchPostgresDatabase();
    try {
      const env = { DATABASE_URL: scratch.url };
      const [one, two] = [start({ ...env, MEMSTORE_DATA_DIR: temporaryDataDir() }), start({ ...env, MEMSTORE_DATA_DIR: temporaryDataDir() })];
      const urls = await Promise.all([one.ready, two.ready]);
      for (const url of urls) expect((await fetch(new URL('/readyz', url))).status).toBe(200);
      const sql = postgres(scratch.url, { max: 1, onnotice: () => {} });
      try {
        const migrationFiles = fs.readdirSync(new URL('../drizzle', import.meta.url)).filter((file) => file.endsWith('.sql'));
        const [migrations] = await sql`select count(*)::int as count from drizzle.__drizzle_migrations`;
        expect(migrations!.count).toBe(migrationFiles.length);
        const [keys] = await sql`select count(*)::int as count from api_keys`;
        expect(keys!.count).toBe(1);
      } finally {
        await sql.end();
      }
      for (const server of [one, two]) server.child.kill('SIGTERM');
      expect(await Promise.all([one.exited, two.exited])).toEqual([0, 0]);
    } finally {
      await scratch.drop();
    }
  });
});

describe("the server process's heap", () => {
  it('is kept within its growing factor of what the last full collection kept, unless node was started with its own', () => {
    expect(heapGrowingFlag(['--enable-source-maps'])).toBe(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
    expect(heapGrowingFlag(['--heap-growing-percent=0'])).toBeNull();
    expect(heapGrowingFlag(['--heap_growing_percent=200'])).toBeNull();
    expect(heapGrowingFlag(['--heap-growing-percent', '120'])).toBeNull();
  });

  it('sets a flag this node knows: node refuses one it does not', () => {
    const run = (flag: string) => spawnSync(process.execPath, [flag, '-e', '0'], { encoding: 'utf8' });
    expect(run(heapGrowingFlag([])!).status).toBe(0);
    expect(run('--heap-growing-percentage=50').status).not.toBe(0);
  });
});
