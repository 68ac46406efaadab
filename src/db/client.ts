import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { ANNOUNCEMENTS_APPLICATION_NAME, announcementsUrl, announcingTransactions, createAnnouncer, EVENTS_CHANNEL, localAnnouncements, ReservedApplicationNameError } from './announcements.js';
import { lockDataDir } from './data-dir-lock.js';
import type { Database } from './database.js';
import * as schema from './schema.js';
import type { StatementScope } from './deadline.js';
import { preparingStatements, watched } from './postgres-statements.js';
import { beforeStatement, RequestDatabase, statementLogger, type ScopedDatabase } from './request-database.js';
import { PGLITE_PREPARED_TEXTS, preparedStatements } from './pglite-prepared.js';
import { oneStatementAtATime } from './pglite-statements.js';
import { PoolDemand, type PoolPart, type PoolUses } from './statement-observer.js';

/** `MEMSTORE_DATA_DIR=memory://` keeps the embedded database in memory (gone at exit). */
export const IN_MEMORY_DATA_DIR = 'memory://';

export type { Database } from './database.js';

/** How a statement run outside drizzle is sent. */
export interface RunOptions {
  /** PostgreSQL: prepare it on the connection (the default) or send it unnamed, parsed again each time. */
  prepare?: boolean;
  /** The request it is sent for (deadline.ts): checked before it is sent, and told of it. */
  scope?: StatementScope;
}

/** The rows of `db.execute` on either driver (postgres.js: an array; PGlite: `.rows`). */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  return (Array.isArray(result) ? result : (result as { rows: Record<string, unknown>[] }).rows) as Record<string, unknown>[];
}

/** Runs one statement given as text and `$n` parameters; resolves with its rows. */
export type RunStatement = (text: string, params: unknown[], options?: RunOptions) => Promise<Record<string, unknown>[]>;

/** Like RunStatement, but each row is its columns' raw UTF-8 text as bytes (null for NULL), undecoded. */
export type RunStatementRaw = (text: string, params: unknown[], options?: RunOptions) => Promise<(Uint8Array | null)[][]>;

export interface DatabaseHandle {
  /** The database outside any request (startup, expired events' sweeps). */
  db: Database;
  /**
   * The live-update reader's database: statements that only read, each alone (events, what
   * they are about, keys). On PostgreSQL, a read-only connection of its own, so that its
   * reads wait neither behind the pool's statements (writes waiting for a store's lock,
   * slow reads) nor they behind its replays. PGlite: `db`.
   */
  reads: Database;
  /**
   * The live-update replays' database (a resuming stream, or one that fell behind): reads of
   * the same kind as `reads`. On PostgreSQL a read-only connection of its own, so that many
   * streams replaying at once (after a burst of large writes, say) do not hold up the
   * reader's new events for every other stream. PGlite: `db`.
   */
  replays: Database;
  /** The database for one request's statements, under its scope (deadline.ts). */
  scoped(scope: StatementScope): ScopedDatabase;
  /** One statement outside drizzle, for statements built on every request (prepared on PostgreSQL). */
  run: RunStatement;
  /**
   * PostgreSQL only: the same, with the columns' bytes as they arrived, so that a large
   * JSON answer goes to the client without being decoded and encoded again.
   */
  runRaw?: RunStatementRaw;
  kind: 'pglite' | 'postgres';
  /**
   * Resolves when the database answers a trivial query (for /readyz, which bounds the wait).
   * On PostgreSQL it uses a connection of its own, so that a busy pool does not make a
   * reachable database look down.
   */
  ping(): Promise<void>;
  /** Closes every connection (PGlite: flushes and releases the data dir). Idempotent. */
  close(): Promise<void>;
  /**
   * Runs several reads against one snapshot: a read-only REPEATABLE READ transaction on
   * PostgreSQL, begun in one statement; on PGlite a transaction, which no other runs beside.
   */
  readSnapshot<T>(work: (db: Database) => Promise<T>): Promise<T>;
  /** Starts counting the work that holds or waits for connections (metrics); returns how the pool is used now. */
  watchPool(): () => PoolUses;
  /**
   * LISTEN on a channel (PostgreSQL: one connection of its own, reconnected by postgres.js;
   * PGlite, which one process holds: this process's announcements). Resolves with the
   * function that stops listening. Writes are announced on EVENTS_CHANNEL when they end
   * (./announcements.ts).
   */
  listen(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
}

/**
 * Default number of PostgreSQL connections one process may open for requests
 * (MEMSTORE_DB_POOL_SIZE). A read the resolvers answer holds its connection for its whole
 * snapshot, so many such reads at once need many; one-statement reads and writes need few,
 * as statements beyond the open connections are pipelined on them, and every backend more
 * competes for the database's cores. Measured with `npm run bench` (server and PostgreSQL
 * sharing one core, 32 clients; 2026-12-06, alternated runs): updates and creates at 10
 * 0.99 and 0.98 × the hand-written baseline's throughput (p99 1.30 and 1.34 ×), at 12 0.91
 * and 0.96 ×, at 20 0.79–0.80 and 0.83 × (p99 1.50–1.57 ×): the backends of 15 writers
 * preempted each other and the server. The reads, split as poolSizes() says, kept their
 * ratios at 10 (the dashboard 1.29 ×, one memory 0.83 ×, a search 0.90 ×, every p99 ≤ 1.26
 * ×). An earlier measurement, before the split, found folder listings slower at 10 and chose 20.
 */
export const DEFAULT_DB_POOL_SIZE = 10;

/**
 * How a pool of `size` connections is split. Compiled reads (one statement each, that never
 * waits for a lock a write holds) get a quarter, rounded up: postgres.js hands a statement to
 * an idle connection while one is left and pipelines it on a busy one only once none is, so
 * on a pool of 20 each of 32 concurrent reads went alone to a backend of its own, one socket
 * write and one backend wake-up each; on a few connections they go several to a write, and
 * the backends answer them in turn (`npm run bench`, one run: one memory by id 1.2 ×, a
 * store's memories 1.13 ×). The price: a read waits behind those sent before it on its
 * connection, so while dashboards keep the database busy a quick read takes a little longer
 * (one memory by id beside eight clients polling the dashboard, two runs: p50 12–15 ms
 * against 11–13). Everything else — transactions, one-statement writes (which wait for their
 * store's lock), key checks — takes the rest, each statement on a connection of its own
 * while one is idle, as before: a write waiting for a lock never holds up a read, nor a
 * write to another store. A pool of one connection is not split.
 */
export function poolSizes(size: number): { reads: number; general: number } {
  if (size < 2) return { reads: 0, general: size };
  const reads = Math.ceil(size / 4);
  return { reads, general: size - reads };
}

export interface DatabaseOptions {
  /** `DATABASE_URL`: PostgreSQL when set, else PGlite. */
  databaseUrl: string | undefined;
  /** PGlite lives in `<dataDir>/pglite`, or in memory for `memory://`. */
  dataDir: string;
  /** Connections in the postgres.js pool (default DEFAULT_DB_POOL_SIZE). */
  poolSize?: number;
  /**
   * PostgreSQL's `statement_timeout` for the pool's connections (not for migrations), in
   * milliseconds: a statement running longer is cancelled and its transaction rolled back.
   * PGlite runs in this process and cannot cancel a statement; the request time limit applies there.
   */
  statementTimeoutMs?: number;
  /**
   * Runs right after the migrations, under the same lock on PostgreSQL, so that work such
   * as creating the first API key happens once even when several servers start together.
   */
  afterMigrate?: (db: Database) => Promise<void>;
}

/**
 * How long opening a PostgreSQL connection may take, in seconds: during an outage a request
 * fails after this (503 DATABASE_UNAVAILABLE) rather than after postgres.js' default 30 s.
 */
const CONNECT_TIMEOUT_SECONDS = 5;

/** The migrations drizzle-kit generates, applied in order at startup (tests apply prefixes of them). */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));
/** Any fixed number: the key of the advisory lock that serializes migrations. */
const MIGRATION_LOCK_KEY = 7_214_889_301;

const logger = statementLogger();

export async function createDb(options: DatabaseOptions): Promise<DatabaseHandle> {
  return options.databaseUrl === undefined ? openPglite(options) : openPostgres(options, options.databaseUrl);
}

/**
 * Durability on PGlite: every commit writes its WAL to the data dir's files before it is
 * acknowledged (synchronous_commit stays on: in PGlite's single-user mode nothing would flush
 * the WAL later), so acknowledged writes survive the process being killed
 * (test/crash-safety.test.ts). PGlite runs with fsync off, so they do not survive a power
 * loss or OS crash: that needs PostgreSQL.
 */
async function openPglite(options: DatabaseOptions): Promise<DatabaseHandle> {
  // Loaded only when used: a server on PostgreSQL does not carry the embedded database.
  const [{ PGlite, protocol, parse }, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ]);
  const inMemory = options.dataDir === IN_MEMORY_DATA_DIR;
  const releaseLock = inMemory ? () => {} : await lockDataDir(options.dataDir);
  let client: PGlite;
  try {
    client = inMemory ? await PGlite.create() : await PGlite.create(path.join(options.dataDir, 'pglite'));
  } catch (error) {
    releaseLock();
    throw error;
  }
  const demand = new PoolDemand(1);
  const statements = oneStatementAtATime(client, demand, preparedStatements(client, { serialize: protocol.serialize, Parser: protocol.Parser, ...parse }, PGLITE_PREPARED_TEXTS));
  const db = drizzlePglite({ client: statements, schema, logger }) as unknown as Database;
  let closed = false;
  const { announcer, listen } = localAnnouncements();
  const close = async () => {
    if (closed) return;
    closed = true;
    announcer.close();
    try {
      await client.close();
    } finally {
      releaseLock();
    }
  };
  try {
    await migratePglite(db as never, { migrationsFolder: MIGRATIONS_FOLDER });
    await options.afterMigrate?.(db);
  } catch (error) {
    await close();
    throw error;
  }
  const readTransaction = announcingTransactions(db, announcer);
  /** A statement outside drizzle, checked and counted as drizzle's are: the line to send it on (its request's, if any). */
  const lineFor = (text: string, params: unknown[], options: RunOptions | undefined) => {
    beforeStatement(options?.scope, text, params);
    return options?.scope ? statements.withScope(options.scope) : statements;
  };
  return {
    db,
    reads: db,
    replays: db,
    scoped: (scope) => new RequestDatabase({ base: db, scope, announcer, client: () => statements.withScope(scope), snapshotClient: null }),
    run: async (text, params, options) => {
      const line = lineFor(text, params, options);
      return options?.prepare ? line.queryPrepared(text, params) : (await line.queryUnprepared(text, params)).rows;
    },
    // A text built for one request only runs unprepared, through run (its answer decoded).
    runRaw: async (text, params, options) => {
      const line = lineFor(text, params, options);
      if (options?.prepare) return line.queryPreparedRaw(text, params);
      const { rows } = await line.queryUnprepared(text, params);
      return rows.map((row) => Object.values(row).map((value) => (value == null ? null : Buffer.from(String(value)))));
    },
    kind: 'pglite',
    ping: async () => {
      await client.query('select 1');
    },
    // One transaction at a time runs on PGlite: a transaction is a snapshot already.
    readSnapshot: (work) => readTransaction((tx) => work(tx as unknown as Database)),
    watchPool: () => partsOf({ all: demand }),
    listen: async (channel, onNotify) => listen(channel, onNotify),
    close,
  };
}

/** How a read snapshot's transaction begins (postgres-statements.ts). */
const READ_SNAPSHOT_BEGIN = 'isolation level repeatable read read only';

async function openPostgres(options: DatabaseOptions, databaseUrl: string): Promise<DatabaseHandle> {
  // Migrations run over one dedicated connection that holds an advisory lock, so that
  // several servers starting at once against an empty database migrate it exactly once.
  const lockClient = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: CONNECT_TIMEOUT_SECONDS });
  try {
    const lockDb = drizzlePostgres({ client: lockClient, schema, logger }) as unknown as Database;
    const [session] = rowsOf(await lockDb.execute(sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY}), current_setting('application_name') as name`));
    try {
      // A session of this server under the announcement session's name would write events
      // that readers pass over: refuse it, however the name was given (its sessions are named
      // as this one is).
      if (session?.name === ANNOUNCEMENTS_APPLICATION_NAME) throw new ReservedApplicationNameError();
      await migratePostgres(lockDb as never, { migrationsFolder: MIGRATIONS_FOLDER });
      await options.afterMigrate?.(lockDb);
    } finally {
      await lockDb.execute(sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
    }
  } finally {
    await lockClient.end();
  }

  const sizes = poolSizes(options.poolSize ?? DEFAULT_DB_POOL_SIZE);
  const poolOptions = {
    onnotice: () => {},
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    ...(options.statementTimeoutMs === undefined ? {} : { connection: { statement_timeout: options.statementTimeoutMs } }),
  };
  const pool = postgres(databaseUrl, { ...poolOptions, max: sizes.general });
  // Compiled reads' connections, and the live-update reader's, refuse writes: each statement
  // is a read-only transaction of its own (a read running alone has no READ ONLY transaction
  // around it to refuse one).
  const readOnly = { ...poolOptions, connection: { ...poolOptions.connection, default_transaction_read_only: true } };
  const reads = sizes.reads === 0 ? pool : postgres(databaseUrl, { ...readOnly, max: sizes.reads });
  const demand = new PoolDemand(sizes.general);
  const readDemand = reads === pool ? demand : new PoolDemand(sizes.reads);
  const client = preparingStatements(pool, demand);
  const db = drizzlePostgres({ client, schema, logger }) as unknown as Database;
  // drizzle sets its parsers and serializers (dates as text) on the client it is given;
  // compiled reads read the same types the same way.
  Object.assign(reads.options.parsers, pool.options.parsers);
  Object.assign(reads.options.serializers, pool.options.serializers);
  /** A compiled read on the reads' connections: prepared (postgres-statements.ts), or unprepared. */
  const read = (text: string, params: unknown[], runOptions: RunOptions | undefined) => {
    beforeStatement(runOptions?.scope, text, params);
    return watched(reads.unsafe(text, params as never[], { prepare: runOptions?.prepare !== false }), text, readDemand, runOptions?.scope);
  };
  const pingClient = postgres(databaseUrl, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 1,
    idle_timeout: 60,
  });
  // Announcements go over a connection of their own whose commits do not wait for the WAL flush.
  const announcing = postgres(announcementsUrl(databaseUrl), {
    max: 1,
    onnotice: () => {},
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    idle_timeout: 60,
    connection: { synchronous_commit: 'off' },
  });
  const announcer = createAnnouncer(() => announcing`select pg_notify(${EVENTS_CHANNEL}, '')`);
  /** A read-only connection of its own, opened on its first statement: its client (to end) and its database. */
  const ownReadConnection = () => {
    const client = postgres(databaseUrl, { ...readOnly, max: 1 });
    return { client, db: drizzlePostgres({ client: preparingStatements(client, null), schema, logger }) as unknown as Database };
  };
  // The live-update reader's (DatabaseHandle.reads) and its replays' (DatabaseHandle.replays).
  const liveReading = ownReadConnection();
  const replaying = ownReadConnection();
  announcingTransactions(db, announcer);
  const snapshots = new RequestDatabase({ base: db, scope: undefined, announcer, client: () => client, snapshotClient: () => preparingStatements(pool, demand, undefined, READ_SNAPSHOT_BEGIN) });
  let closed = false;
  return {
    db,
    reads: liveReading.db,
    replays: replaying.db,
    run: async (text, params, options) => read(text, params, options),
    runRaw: async (text, params, options) => (await read(text, params, options).raw()) as unknown as (Uint8Array | null)[][],
    kind: 'postgres',
    ping: async () => {
      await pingClient`select 1`;
    },
    scoped: (scope) =>
      new RequestDatabase({
        base: db,
        scope,
        announcer,
        client: () => preparingStatements(pool, demand, scope),
        snapshotClient: () => preparingStatements(pool, demand, scope, READ_SNAPSHOT_BEGIN),
      }),
    readSnapshot: (work) => snapshots.readSnapshot(work),
    watchPool: () => partsOf(reads === pool ? { all: demand } : { reads: readDemand, general: demand }),
    listen: async (channel, onNotify) => {
      const { unlisten } = await pool.listen(channel, () => onNotify());
      return async () => {
        if (!closed) await unlisten();
      };
    },
    close: async () => {
      if (closed) return;
      closed = true;
      announcer.close();
      await Promise.all([pool.end({ timeout: 5 }), reads === pool ? null : reads.end({ timeout: 5 }), liveReading.client.end({ timeout: 5 }), replaying.client.end({ timeout: 5 }), pingClient.end({ timeout: 1 }), announcing.end({ timeout: 1 })]);
    },
  };
}

/** Starts watching each part's demand; returns how each is used now. */
function partsOf(demands: Partial<Record<PoolPart, PoolDemand>>): () => PoolUses {
  const uses = Object.entries(demands).map(([part, demand]) => [part, demand.watch()] as const);
  return () => Object.fromEntries(uses.map(([part, use]) => [part, use()]));
}
