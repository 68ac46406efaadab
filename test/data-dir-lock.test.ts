import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DataDirInUseError, lockDataDir } from '../src/db/data-dir-lock.js';

/**
 * One process per PGlite data directory, whatever happened before: a lock file left by a
 * crash blocks nothing (even when its pid now belongs to some other live process), a holder
 * killed with SIGKILL frees the directory at once, and of several processes starting
 * together exactly one gets it.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOLDER = path.join(ROOT, 'test/support/lock-holder.ts');
const dirs: string[] = [];

function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-lock-'));
  dirs.push(dir);
  return dir;
}

/** A pid no process has now (that of a process that just exited). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

/** A child process that takes locks on command (test/support/lock-holder.ts). */
async function holder() {
  const child = spawn(process.execPath, ['--import', 'tsx', HOLDER], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      const next = waiting.shift();
      if (next) next(line);
      else lines.push(line);
    }
  });
  const answer = () => new Promise<string>((resolve) => (lines.length > 0 ? resolve(lines.shift()!) : waiting.push(resolve)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  expect(await answer()).toBe('READY');
  return {
    child,
    exited,
    ask: (command: string) => {
      child.stdin.write(`${command}\n`);
      return answer();
    },
    end: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the PGlite data directory lock', () => {
  it('is not blocked by a lock file left behind, even one naming the pid of another live process', async () => {
    for (const leftover of [String(deadPid()), String(process.ppid), String(process.pid), 'garbage']) {
      const dir = dataDir();
      fs.writeFileSync(path.join(dir, 'pglite.lock'), leftover);
      const release = await lockDataDir(dir);
      expect(fs.readFileSync(path.join(dir, 'pglite.lock'), 'utf8')).toBe(String(process.pid));
      release();
      expect(fs.existsSync(path.join(dir, 'pglite.lock'))).toBe(false);
    }
  });

  it('refuses a second holder, in this process or another, naming the holder', async () => {
    const dir = dataDir();
    const release = await lockDataDir(dir);
    await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirInUseError);
    const other = await holder();
    expect(await other.ask(`try ${dir}`)).toBe(`REFUSED ${process.pid}`);
    await other.end();
    release();
    const again = await lockDataDir(dir);
    again();
  });

  it('is free at once when its holder is killed with SIGKILL', async () => {
    const dir = dataDir();
    const killed = await holder();
    expect(await killed.ask(`try ${dir}`)).toBe('HELD');
    await expect(lockDataDir(dir)).rejects.toThrow(`pid ${killed.child.pid}`);
    killed.child.kill('SIGKILL');
    await killed.exited;
    const release = await lockDataDir(dir);
    release();
  });

  it('goes to exactly one of four processes asking at the same moment for a directory with a stale lock, 100 times over', { timeout: 120_000 }, async () => {
    const starters = await Promise.all(Array.from({ length: 4 }, () => holder()));
    const stale = String(deadPid());
    try {
      for (let round = 0; round < 100; round += 1) {
        const dir = dataDir();
        fs.writeFileSync(path.join(dir, 'pglite.lock'), stale);
        const outcomes = await Promise.all(starters.map((starter) => starter.ask(`try ${dir}`)));
        expect(outcomes.filter((outcome) => outcome === 'HELD'), `round ${round}: ${outcomes.join(', ')}`).toHaveLength(1);
        expect(await Promise.all(starters.map((starter) => starter.ask('release')))).toEqual(Array(4).fill('RELEASED'));
      }
    } finally {
      await Promise.all(starters.map((starter) => starter.end()));
    }
  });
});
