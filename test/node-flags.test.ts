import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { missingNodeFlags, NODE_FLAGS } from '../src/node-flags.js';
import { nodeArgumentsOf, startFlagsOf } from './bench/measure.js';
import { SOURCE_SERVER_COMMAND } from './support/process.js';

/**
 * `npm start`, the production command of the README, the tests' server processes and the
 * benchmark's memstore give `node` the flags of src/node-flags.ts. (A production server
 * started without them: test/process-lifecycle.test.ts, "the production build".)
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const flags = NODE_FLAGS.join(' ');

describe("memstore's node flags", () => {
  it('npm start runs src/server.ts with them', () => {
    const manifest = JSON.parse(fs.readFileSync(`${ROOT}/package.json`, 'utf8')) as { scripts: Record<string, string> };
    expect(manifest.scripts.start).toBe(`exec node ${flags} --import tsx src/server.ts`);
  });

  it("the README's production command gives them", () => {
    const readme = fs.readFileSync(`${ROOT}/README.md`, 'utf8');
    expect(readme).toContain(`  node ${flags} dist/server.js\n`);
    expect(readme).toContain(`\`node ${flags} dist/server.js\` is the production`);
  });

  it("the tests' server processes and the benchmark's memstore get them, the baseline does not; a compared checkout gets its own", () => {
    expect(SOURCE_SERVER_COMMAND.slice(1, 1 + NODE_FLAGS.length)).toEqual(NODE_FLAGS);
    expect(nodeArgumentsOf('memstore', 'dist/server.js').slice(0, NODE_FLAGS.length)).toEqual(NODE_FLAGS);
    expect(nodeArgumentsOf('memstore (PGlite)', 'dist/server.js').slice(0, NODE_FLAGS.length)).toEqual(NODE_FLAGS);
    expect(nodeArgumentsOf('baseline', 'test/bench/baseline.ts').some((argument) => (NODE_FLAGS as readonly string[]).includes(argument))).toBe(false);
    const before = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-checkout-'));
    try {
      fs.writeFileSync(path.join(before, 'package.json'), JSON.stringify({ scripts: { start: 'exec node --import tsx src/server.ts' } }));
      expect(nodeArgumentsOf('memstore at f74eba7', 'dist/server.js', before)).toEqual(['dist/server.js']);
      fs.writeFileSync(path.join(before, 'package.json'), JSON.stringify({ scripts: { start: 'exec node --max-old-space-size=512 --import tsx src/server.ts' } }));
      expect(startFlagsOf(before)).toEqual(['--max-old-space-size=512']);
    } finally {
      fs.rmSync(before, { recursive: true, force: true });
    }
  });

  it("start node's young generation at 8 MB a semi-space and keep it there under allocation (V8 on its own: 1 MB, then growing)", async () => {
    /** The young generation's committed size (both semi-spaces once the second is in use), in MB, at the start and after allocating. */
    const youngGenerationMb = async (flags: readonly string[]) => {
      const script = `
        const size = () => require('node:v8').getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size / 2 ** 20;
        const start = size();
        let kept = [];
        for (let i = 0; i < 4e6; i++) { kept.push({ i, text: 'x' + i }); if (kept.length > 20000) kept = []; }
        process.stdout.write(JSON.stringify({ start, after: size() }));`;
      const { stdout } = await promisify(execFile)(process.execPath, [...flags, '-e', script]);
      return JSON.parse(stdout) as { start: number; after: number };
    };
    const fixed = await youngGenerationMb(NODE_FLAGS);
    expect(fixed.start).toBe(8);
    expect(fixed.after).toBeLessThanOrEqual(16);
    expect((await youngGenerationMb([])).start).toBeLessThan(8);
    // A larger maximum would let it grow past 8 MB a semi-space under the same allocation.
    expect((await youngGenerationMb([...NODE_FLAGS, '--max-semi-space-size=16'])).after).toBeGreaterThan(16);
  });

  it('names the flags node was started without or with another value, the last value of a name counting', () => {
    expect(missingNodeFlags([])).toEqual([...NODE_FLAGS]);
    expect(missingNodeFlags([...NODE_FLAGS, '--import', 'tsx'])).toEqual([]);
    expect(missingNodeFlags(['--min_semi_space_size=8', '--max-semi-space-size=8'])).toEqual([]);
    expect(missingNodeFlags(['--min-semi-space-size=8'])).toEqual(['--max-semi-space-size=8']);
    expect(missingNodeFlags(['--min-semi-space-size=16', '--max-semi-space-size=8'])).toEqual(['--min-semi-space-size=8']);
    // Given again later with another value, that value is the one node uses.
    expect(missingNodeFlags([...NODE_FLAGS, '--min-semi-space-size=1'])).toEqual(['--min-semi-space-size=8']);
    expect(missingNodeFlags(['--max-semi-space-size=32', ...NODE_FLAGS])).toEqual([]);
    // node takes these flags' values only after "=".
    expect(missingNodeFlags(['--min-semi-space-size', '8', '--max-semi-space-size=8'])).toEqual(['--min-semi-space-size=8']);
  });
});
