import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { MIGRATIONS_FOLDER, type Database } from '../../src/db/client.js';
import * as schema from '../../src/db/schema.js';
import { createScratchPostgresDatabase, postgresUrl } from './database.js';

/**
 * A database at an earlier migration level, for upgrade tests: the migrations up to and
 * including `lastTag` are applied, the later ones by `migrateToLatest`. Raw SQL fills it as
 * the server of that level would have. PGlite in memory, or a scratch PostgreSQL database
 * when DATABASE_URL is set.
 */
export interface DatabaseAtLevel {
  /** Runs raw SQL (several statements allowed). */
  exec(text: string): Promise<void>;
  query<Row>(text: string, params?: unknown[]): Promise<Row[]>;
  /** A drizzle handle on the same database (for invariant checks after the upgrade). */
  db: Database;
  migrateToLatest(): Promise<void>;
  close(): Promise<void>;
}

/** A migrations folder holding the migrations up to `lastTag` only. */
function migrationsThrough(lastTag: string): { folder: string; remove: () => void } {
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  const last = journal.entries.findIndex((entry) => entry.tag === lastTag);
  if (last < 0) throw new Error(`no migration ${lastTag}`);
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-migrations-'));
  fs.mkdirSync(path.join(folder, 'meta'));
  const entries = journal.entries.slice(0, last + 1);
  fs.writeFileSync(path.join(folder, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }));
  for (const entry of entries) fs.copyFileSync(path.join(MIGRATIONS_FOLDER, `${entry.tag}.sql`), path.join(folder, `${entry.tag}.sql`));
  return { folder, remove: () => fs.rmSync(folder, { recursive: true, force: true }) };
}

export async function openDatabaseAtLevel(lastTag: string): Promise<DatabaseAtLevel> {
  const { folder, remove } = migrationsThrough(lastTag);
  try {
    if (postgresUrl === undefined) {
      const client = await PGlite.create();
      const db = drizzlePglite({ client, schema }) as unknown as Database;
      await migratePglite(db as never, { migrationsFolder: folder });
      return {
        exec: async (text) => {
          await client.exec(text);
        },
        query: async <Row>(text: string, params: unknown[] = []) => (await client.query<Row>(text, params)).rows,
        db,
        migrateToLatest: () => migratePglite(db as never, { migrationsFolder: MIGRATIONS_FOLDER }),
        close: () => client.close(),
      };
    }
    const scratch = await createScratchPostgresDatabase('memstore_upgrade');
    const client = postgres(scratch.url, { max: 1, onnotice: () => {} });
    const db = drizzlePostgres({ client, schema }) as unknown as Database;
    await migratePostgres(db as never, { migrationsFolder: folder });
    return {
      exec: async (text) => {
        await client.unsafe(text);
      },
      query: async <Row>(text: string, params: unknown[] = []) => (await client.unsafe(text, params as never[])) as unknown as Row[],
      db,
      migrateToLatest: () => migratePostgres(db as never, { migrationsFolder: MIGRATIONS_FOLDER }),
      close: async () => {
        await client.end();
        await scratch.drop();
      },
    };
  } finally {
    remove();
  }
}
