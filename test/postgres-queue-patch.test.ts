import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// postgres.js 3.4.9 loses throughput under steady load: its pool queues keep one spent
// slot per query, and Queue.remove scans them all. src/db/patch-postgres-queue.mjs (the
// npm postinstall script) patches node_modules; these tests fail when it has not run.
// No database needed.

interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T | undefined): T | null | undefined;
}
type QueueFactory = <T>(initial?: T[]) => Queue<T>;

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

function postgresPackage(): { dir: string; exports: { import: string; default: string } } {
  let dir = path.dirname(require.resolve('postgres'));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name: string; exports: { import: string; default: string } };
      if (pkg.name === 'postgres') return { dir, exports: pkg.exports };
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('postgres package not found');
    dir = parent;
  }
}

const pkg = postgresPackage();
/** queue.js next to the entry that `import 'postgres'` (ESM) and `require('postgres')` load. */
const builds = {
  esm: path.join(pkg.dir, path.dirname(pkg.exports.import), 'queue.js'),
  cjs: path.join(pkg.dir, path.dirname(pkg.exports.default), 'queue.js'),
};

async function loadQueue(kind: keyof typeof builds): Promise<QueueFactory> {
  if (kind === 'cjs') return require(builds.cjs) as QueueFactory;
  const module = (await import(pathToFileURL(builds.esm).href)) as { default: QueueFactory };
  return module.default;
}

describe('postgres.js queue patch', () => {
  it('is applied to every build in node_modules', () => {
    const result = spawnSync(process.execPath, ['src/db/patch-postgres-queue.mjs', '--check'], { cwd: root, encoding: 'utf8' });
    expect(result.stderr + result.stdout).toContain('queue patch: present');
    expect(result.status).toBe(0);
  });

  for (const kind of ['esm', 'cjs'] as const) {
    describe(`${kind} build`, () => {
      it('never scans the spent head of the queue on remove', async () => {
        const Queue = await loadQueue(kind);
        const queue = Queue<{ id: number }>();
        const [a, b] = [{ id: 1 }, { id: 2 }];
        queue.push(a);
        queue.push(b);
        expect(queue.shift()).toBe(a);
        // Unpatched, remove() runs indexOf from slot 0, finds the spent (undefined) slot
        // left by shift() and splices it, dropping b from the queue.
        expect(queue.remove(undefined)).toBeNull();
        expect(queue.length).toBe(1);
        expect(queue.shift()).toBe(b);
        expect(queue.length).toBe(0);
      });

      it('keeps move() cheap on a queue that never drains, as the busy queue under load', async () => {
        const Queue = await loadQueue(kind);
        const busy = Queue<{ id: number }>();
        for (let id = 0; id < 10; id += 1) busy.push({ id });
        // What the pool does per query: take a busy connection, move() it to busy again.
        const moves = (count: number) => {
          const start = performance.now();
          for (let i = 0; i < count; i += 1) {
            const connection = busy.shift()!;
            busy.remove(connection);
            busy.push(connection);
          }
          return performance.now() - start;
        };
        const fresh = moves(2_000);
        // 200k queries later (shift + push only: O(1) either way). Unpatched, the array
        // now holds ~200k spent slots and those 2,000 moves scan them all (~0.3 s here).
        for (let i = 0; i < 200_000; i += 1) busy.push(busy.shift()!);
        const aged = moves(2_000);
        expect(busy.length).toBe(10);
        expect(aged).toBeLessThan(Math.max(25, fresh * 20));
      });
    });
  }
});
