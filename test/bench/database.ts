/** Creating, migrating and seeding the benchmark's databases (PostgreSQL and PGlite). */
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { createDb, type Database } from '../../src/db/client.js';
import { ensureAdminKey } from '../../src/domain/api-keys.js';
import { BENCH_WORKSPACE, benchInvariantViolations, seedBenchData, seededShapeProblems } from './seed.js';

/** MEMSTORE_BENCH_DATABASE names another database (two checkouts benchmarking on one PostgreSQL at once). */
export const BENCH_DATABASE = process.env.MEMSTORE_BENCH_DATABASE || 'memstore_bench';

/** The URL of database `name` on the server of `databaseUrl`. */
export function databaseUrlFor(databaseUrl: string, name: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops (with force: a previous run may have left servers behind) and creates the bench database. */
export async function recreateDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
  } finally {
    await admin.end();
  }
}

/**
 * Migrates (createDb runs memstore's migrations), makes the bench workspace's ADMIN key
 * exist as MEMSTORE_BOOTSTRAP_KEYS would, and seeds. Returns the seeding time in seconds.
 */
export async function migrateAndSeed(options: {
  databaseUrl: string | undefined;
  dataDir: string;
  token: string;
  /** Runs on the seeded database before it is closed (PGlite cannot be read while memstore holds it). */
  afterSeed?: (db: Database) => Promise<void>;
}): Promise<{ seconds: number; apiKeyId: string }> {
  const database = await createDb({
    databaseUrl: options.databaseUrl,
    dataDir: options.dataDir,
    afterMigrate: async (db) => {
      await ensureAdminKey(db, BENCH_WORKSPACE, options.token, new Date(), 'bench key');
    },
  });
  try {
    const result = await database.db.execute(sql`select id from api_keys where workspace_id = ${BENCH_WORKSPACE} limit 1`);
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as { id: string }[];
    const apiKeyId = rows[0]!.id;
    const seconds = await seedBenchData(database.db, apiKeyId);
    const problems = await seededShapeProblems(database.db);
    if (problems.length > 0) throw new Error(`The seeded data is not as intended:\n${problems.join('\n')}`);
    const violations = await benchInvariantViolations(database.db);
    if (violations.length > 0) throw new Error(`The seeded data breaks the invariants:\n${violations.join('\n')}`);
    await options.afterSeed?.(database.db);
    return { seconds, apiKeyId };
  } finally {
    await database.close();
  }
}
