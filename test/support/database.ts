import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { createDb, type Database, type DatabaseHandle } from '../../src/db/client.js';

/**
 * The database a test file runs against. Without DATABASE_URL: the worker's one in-memory
 * PGlite, shared by the files of that worker (each test seeds its own workspace). With
 * DATABASE_URL: a fresh PostgreSQL database for this file, dropped afterwards.
 */
export interface TestDatabase {
  handle: DatabaseHandle;
  /** The connection string of this file's own database (PostgreSQL only). */
  url: string | undefined;
  release(): Promise<void>;
}

/**
 * The database's session time zone in tests: away from UTC (+05:45), as the process's is
 * (vitest.config.ts). An answer that depends on either time zone is then wrong in a test.
 */
export const DATABASE_TIME_ZONE = 'Asia/Kathmandu';

let workerPglite: Promise<DatabaseHandle> | undefined;

async function openWorkerPglite(): Promise<DatabaseHandle> {
  const handle = await createDb({ databaseUrl: undefined, dataDir: 'memory://' });
  await handle.db.execute(sql.raw(`set time zone '${DATABASE_TIME_ZONE}'`));
  return handle;
}

export const postgresUrl: string | undefined = process.env.DATABASE_URL || undefined;

/** PostgreSQL: the connections of a test database's pool (MEMSTORE_DB_POOL_SIZE). */
export const TEST_POOL_SIZE = 10;

export async function openTestDatabase(): Promise<TestDatabase> {
  if (postgresUrl === undefined) {
    workerPglite ??= openWorkerPglite();
    return { handle: await workerPglite, url: undefined, release: async () => {} };
  }
  const { url, drop } = await createScratchPostgresDatabase();
  const handle = await createDb({ databaseUrl: url, dataDir: 'memory://', poolSize: TEST_POOL_SIZE });
  return {
    handle,
    url,
    release: async () => {
      await handle.close();
      await drop();
    },
  };
}

/** An empty PostgreSQL database next to `nextTo`'s (DATABASE_URL), its name, and a function that drops it. */
export async function createScratchPostgresDatabase(
  prefix = 'memstore_test',
  nextTo: string | undefined = postgresUrl,
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  if (nextTo === undefined) throw new Error('DATABASE_URL is not set');
  const adminUrl = nextTo;
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
    await admin.unsafe(`alter database "${name}" set timezone to '${DATABASE_TIME_ZONE}'`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const cleanup = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await cleanup.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/**
 * An app's database handle on a stand-in for the database (one that fails, stalls or is never
 * reached): every request uses `db` as it is, without a scope of its own, and its read
 * snapshots are transactions of it.
 */
export function standInHandle(db: Database, ping: () => Promise<void> = async () => {}): Pick<DatabaseHandle, 'db' | 'ping' | 'scoped'> {
  const readSnapshot = <T>(work: (tx: Database) => Promise<T>) => db.transaction((tx) => work(tx as unknown as Database)) as Promise<T>;
  return { db, ping, scoped: () => ({ db, readSnapshot }) };
}
