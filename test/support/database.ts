import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { createDb, type DatabaseHandle } from '../../src/db/client.js';

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

let workerPglite: Promise<DatabaseHandle> | undefined;

export const postgresUrl: string | undefined = process.env.DATABASE_URL || undefined;

export async function openTestDatabase(): Promise<TestDatabase> {
  if (postgresUrl === undefined) {
    workerPglite ??= createDb({ databaseUrl: undefined, dataDir: 'memory://' });
    return { handle: await workerPglite, url: undefined, release: async () => {} };
  }
  const { url, drop } = await createScratchPostgresDatabase();
  const handle = await createDb({ databaseUrl: url, dataDir: 'memory://', poolSize: 10 });
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
