/**
 * Statements a handle's top-level database may send on the pipelined reads' part of its
 * PostgreSQL pool (client.ts, poolSizes): those that never wait for a lock a write holds.
 * openPostgres registers the part's drizzle database for its top-level one; a transaction,
 * PGlite and a pool of one connection have none, and run such statements themselves.
 */
const lockFree = new WeakMap<object, object>();

export function registerLockFreeReads<Db extends object>(db: Db, reads: Db): void {
  lockFree.set(db, reads);
}

/**
 * Where a statement that never waits for a lock (a key lookup) runs: the reads' part of
 * `db`'s pool, pipelined with compiled reads, or `db` itself.
 */
export function lockFreeReads<Db extends object>(db: Db): Db {
  return (lockFree.get(db) as Db | undefined) ?? db;
}
