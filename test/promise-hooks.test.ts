import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';

/**
 * A request's statements find its time limit through the handles it is given, not through
 * an AsyncLocalStorage (db/deadline.ts): on Node 20 one in use turns on promise hooks for
 * every promise of the process, a cost every request pays. The probe runs in a process of
 * its own, since the test runner may use such storage itself.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const PROBE = path.join(ROOT, 'test/support/promise-hooks-probe.ts');

describe('serving requests', { timeout: 60_000 }, () => {
  it('leaves promise hooks off: writes, compiled and resolver reads, Forward REST reads and writes', async () => {
    const scratch = postgresUrl === undefined ? null : await createScratchPostgresDatabase('memstore_hooks');
    try {
      const env = { ...process.env, DATABASE_URL: scratch?.url ?? '' };
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', PROBE], { cwd: ROOT, env, timeout: 50_000 });
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!);
      expect(report.statuses).toEqual({ mutation: 200, write: 200, compiledRead: 200, resolverRead: 200, restRead: 200, restWrite: 200 });
      expect(report.hooksAtStart).toBe(false);
      expect(report.hooksAfterRequests).toBe(false);
    } finally {
      await scratch?.drop();
    }
  });
});
