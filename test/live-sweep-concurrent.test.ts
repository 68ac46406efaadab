import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rowsOf, type Database } from '../src/db/client.js';
import { deleteExpiredEvents } from '../src/domain/events.js';
import { postgresUrl } from './support/database.js';
import { createStoreNamed, useSecondPool } from './support/live.js';
import { useTestServer } from './support/server.js';

/** The retention sweep of two instances at once on PostgreSQL (each on its own connection): every expired event goes once, and each workspace's mark is the latest position deleted. */
const server = useTestServer();

async function agedEvents(db: Database, workspaceId: string, storeId: string, count: number): Promise<void> {
  // Several transactions, so that positions differ in xid as well as id.
  for (let part = 0; part < 4; part += 1) {
    await db.execute(sql`insert into memory_events (workspace_id, kind, memory_store_id, path, occurred_at)
      select ${workspaceId}, 'memory_created', ${storeId}, 'p' || n, now() - interval '30 days' from generate_series(1, ${count / 4}) n`);
  }
  await db.execute(sql`insert into memory_events (workspace_id, kind, memory_store_id, path, occurred_at) values (${workspaceId}, 'memory_created', ${storeId}, 'fresh', now())`);
}

describe.skipIf(postgresUrl === undefined)('concurrent sweeps', () => {
  const other = useSecondPool(server);

  it('two sweeps at once both succeed, delete every expired event once, and leave each mark at the latest deleted position', async () => {
    const workspaces = [];
    for (let index = 0; index < 3; index += 1) {
      const client = await server.newWorkspace();
      workspaces.push({ id: client.workspaceId, store: await createStoreNamed(client, 's') });
    }
    for (const workspace of workspaces) await agedEvents(server.db, workspace.id, workspace.store, 800);
    const expected = new Map<string, { xid: string; id: number }>();
    for (const workspace of workspaces) {
      const [row] = rowsOf(await server.db.execute(sql`select xid::text as xid, id::int as id from memory_events where workspace_id = ${workspace.id} and path <> 'fresh' order by xid desc, id desc limit 1`));
      expected.set(workspace.id, row as { xid: string; id: number });
    }
    const before = new Date(Date.now() - 7 * 86_400_000);
    const failures: unknown[] = [];
    const sweep = async (db: Database) => {
      let total = 0;
      for (;;) {
        try {
          const count = await deleteExpiredEvents(db, before, 500);
          total += count;
          if (count < 500) return total;
        } catch (error) {
          failures.push(String(error));
          return total;
        }
      }
    };
    const [one, two, three] = await Promise.all([sweep(server.db), sweep(other().db), sweep(server.db)]);
    expect(failures).toEqual([]);
    for (const workspace of workspaces) {
      const left = rowsOf(await server.db.execute(sql`select count(*)::int as n from memory_events where workspace_id = ${workspace.id} and occurred_at < now() - interval '7 days'`));
      expect(left[0]!.n).toBe(0);
      const mark = rowsOf(await server.db.execute(sql`select xid::text as xid, id::int as id from memory_event_sweeps where workspace_id = ${workspace.id}`));
      expect(mark).toEqual([expected.get(workspace.id)]);
    }
    expect(one + two + three).toBeGreaterThanOrEqual(2400);
  }, 60_000);
});
