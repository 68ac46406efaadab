import type { SQL } from 'drizzle-orm';

/**
 * The parts of a PostgreSQL pool, and which statements go to which. postgres.js hands a
 * statement to an idle connection while one is left, and pipelines it on a busy one only
 * once none is: on a pool of 20, each of 32 concurrent statements went alone to a backend of
 * its own, one socket write and one backend wake-up each. On a few connections they go
 * several to a write, and the backends answer them in turn. So the statements that are
 * many, short and alone get small parts of their own, where they are pipelined:
 *
 * - `reads`: compiled reads and key lookups — one statement each, that never waits for a
 *   lock a write holds (`npm run bench`, one run: one memory by id 1.2 ×, a store's memories
 *   1.13 ×). The price: a read waits behind those sent before it on its connection, so while
 *   dashboards keep the database busy a quick read takes a little longer (one memory by id
 *   beside eight clients polling the dashboard, two runs: p50 12–15 ms against 11–13).
 * - `writes`: one-statement writes (domain/memories/one-statement-writes.ts). These wait for
 *   their store's lock, and a statement waiting for a lock holds up every statement sent
 *   after it on its connection; so the part's connections give up a lock after
 *   PIPELINED_WRITE_LOCK_TIMEOUT_MS (`lock_timeout`), and a write that gives up runs again
 *   on the general part, where it waits as long as the lock is held. A write waiting for a
 *   lock thus holds up other stores' writes for that long at most, and never a read.
 * - `general`: everything else — transactions (a read snapshot holds its connection
 *   throughout) and the statements drizzle sends outside them — each statement on a
 *   connection of its own while one is idle.
 */

/**
 * How long a write on the pipelined part waits for a lock before it goes to the general
 * part instead, in milliseconds. Memory writes hold their store's lock for one statement or
 * one short transaction (a few milliseconds); a longer wait means a long transaction holds
 * it, and the writes behind it on the same connection should not wait with it.
 */
export const PIPELINED_WRITE_LOCK_TIMEOUT_MS = 50;

export interface PoolSizes {
  reads: number;
  writes: number;
  general: number;
}

/**
 * How a pool of `size` connections is split: a quarter, rounded up, for compiled reads and
 * key lookups, a quarter, rounded down, for one-statement writes, and the rest (at least as
 * many as the reads') for everything else. A pool of one connection is not split; in a pool
 * of fewer than four, writes stay in the general part.
 */
export function poolSizes(size: number): PoolSizes {
  if (size < 2) return { reads: 0, writes: 0, general: size };
  const reads = Math.ceil(size / 4);
  const writes = Math.floor(size / 4);
  return { reads, writes, general: size - reads - writes };
}

/** What a handle's top-level database sends to its pipelined parts (openPostgres registers it). */
export interface Pipelines<Db> {
  /** The reads' part, through drizzle: statements that never wait for a lock. */
  lockFree: Db;
  /** A one-statement write: on the writes' part, or where that gives up a lock (or has no connection), the general part. */
  write(statement: SQL): Promise<unknown>;
}

const registered = new WeakMap<object, Pipelines<unknown>>();

export function registerPipelines<Db extends object>(db: Db, pipelines: Pipelines<Db>): void {
  registered.set(db, pipelines as Pipelines<unknown>);
}

/**
 * Where a statement that never waits for a lock (a key lookup) runs: the reads' part of
 * `db`'s pool, or `db` itself (a transaction, PGlite, a pool of one connection).
 */
export function lockFreeReads<Db extends object>(db: Db): Db {
  return (registered.get(db)?.lockFree as Db | undefined) ?? db;
}

/** Runs a one-statement write (outside any transaction) where its pool sends those. */
export function executeOneStatementWrite<Db extends { execute(statement: SQL): PromiseLike<unknown> }>(db: Db, statement: SQL): Promise<unknown> {
  const pipelines = registered.get(db);
  return pipelines ? pipelines.write(statement) : Promise.resolve(db.execute(statement));
}

/** Whether the database gave up waiting for a lock (SQLSTATE 55P03, lock_not_available), here or in what caused the error. */
export function isLockTimeout(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    if ((current as { code?: unknown }).code === '55P03') return true;
  }
  return false;
}
