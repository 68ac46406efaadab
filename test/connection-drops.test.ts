import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DatabaseHandle } from '../src/db/client.js';
import { generateToken } from '../src/domain/api-keys.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { startServerProcess, type ServerProcess } from './support/process.js';
import { WriteStory } from './support/write-story.js';

/**
 * The server's PostgreSQL connections dropped under it (a failover, pg_terminate_backend, a
 * database restart) while concurrent writers use transactions and one-statement writes: the
 * process lives, each request gets a success, a typed error or 503 DATABASE_UNAVAILABLE, it
 * recovers by itself, and every acknowledged write is present with the §6 invariants intact.
 */

const CYCLES = 10;
const WORKSPACE_ID = 'connection-drops';
const TOKEN = generateToken();
/** The application_name of this file's own connections, told apart from the server's. */
const CHECKER = 'memstore-drop-check';

describe.skipIf(postgresUrl === undefined)('database connections dropped in the middle of concurrent writes, on PostgreSQL', { timeout: 300_000 }, () => {
  let server: ServerProcess;
  let url: string;
  let story: WriteStory;
  let checker: DatabaseHandle;
  let dataDir: string;
  let drop = async () => {};

  /** Terminates every session the server holds; returns how many there were. */
  async function terminateServerSessions(): Promise<number> {
    const rows = (await checker.run(
      `select count(pg_terminate_backend(pid))::int as terminated from pg_stat_activity
       where datname = current_database() and backend_type = 'client backend' and application_name <> $1 and pid <> pg_backend_pid()`,
      [CHECKER],
    )) as { terminated: number }[];
    return rows[0]!.terminated;
  }

  beforeAll(async () => {
    const scratch = await createScratchPostgresDatabase();
    drop = scratch.drop;
    const checkerUrl = new URL(scratch.url);
    checkerUrl.searchParams.set('application_name', CHECKER);
    checker = await createDb({ databaseUrl: checkerUrl.toString(), dataDir: 'memory://', poolSize: 2 });
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-drops-'));
    server = startServerProcess({
      MEMSTORE_BOOTSTRAP_KEYS: `${WORKSPACE_ID}:${TOKEN}`,
      MEMSTORE_RATE_LIMIT_PER_SECOND: '0',
      DATABASE_URL: scratch.url,
      MEMSTORE_DATA_DIR: dataDir,
    });
    url = await server.ready;
    // Every request has been answered when the writers stop: nothing runs on in the database.
    story = new WriteStory(WORKSPACE_ID, TOKEN, async () => ({ handle: checker, done: async () => {} }));
  });

  afterAll(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    await checker?.close();
    await drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(`lives, answers 503 DATABASE_UNAVAILABLE at worst, recovers by itself and keeps every acknowledged write, across ${CYCLES} cuts`, async () => {
    let terminated = 0;
    for (let cycle = 1; cycle <= CYCLES; cycle += 1) {
      if (cycle === 1) await story.seed(url);
      else await story.verifyThroughServer(url);
      const report = await story.writeUntilInterrupted(url, cycle, {
        kind: 'drop',
        // Twice: the second cut meets connections that are reconnecting or just reconnected.
        begin: async () => {
          terminated += await terminateServerSessions();
          await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 40));
          terminated += await terminateServerSessions();
        },
        recoveredAfter: 12,
      }).catch((error: unknown) => {
        throw new Error(`cycle ${cycle}: ${String(error)}; the server's stderr: ${server.stderr().slice(-3000)}; exit ${server.child.exitCode}`, { cause: error });
      });
      story.reports.push(report);
      expect(server.child.exitCode, `cycle ${cycle}: the server exited:\n${server.stderr()}`).toBeNull();
      expect(await story.verifyAfterKill(cycle), `after the cut of cycle ${cycle}`).toEqual([]);
    }
    const totals = story.reports.reduce((sum, report) => ({
      acknowledged: sum.acknowledged + report.acknowledged,
      rejected: sum.rejected + report.rejected,
      cutOff: sum.cutOff + report.cutOff,
      cutOffApplied: sum.cutOffApplied + report.cutOffApplied,
      unavailable: sum.unavailable + report.unavailable,
    }));
    expect(terminated).toBeGreaterThan(CYCLES);
    expect(totals.acknowledged).toBeGreaterThanOrEqual(CYCLES * 20);
    console.log(`connection drops: ${terminated} sessions terminated, ${JSON.stringify(totals)}, ${story.live.length} live memories`);
    await story.verifyThroughServer(url);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });
});
