import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { missingNodeFlags, NODE_FLAGS } from '../src/node-flags.js';
import { nodeArgumentsOf } from './bench/measure.js';
import { SOURCE_SERVER_COMMAND } from './support/process.js';

/**
 * Every command that starts memstore gives `node` the flags of src/node-flags.ts: `npm start`,
 * the production command of the README, the tests' server processes and the benchmark's.
 * (What the flags do to a running server: test/process-lifecycle.test.ts, "the production build".)
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

  it("the tests' server processes and the benchmark's memstore get them, the baseline does not", () => {
    expect(SOURCE_SERVER_COMMAND.slice(1, 1 + NODE_FLAGS.length)).toEqual(NODE_FLAGS);
    expect(nodeArgumentsOf('memstore', 'dist/server.js').slice(0, NODE_FLAGS.length)).toEqual(NODE_FLAGS);
    expect(nodeArgumentsOf('memstore (PGlite)', 'dist/server.js').slice(0, NODE_FLAGS.length)).toEqual(NODE_FLAGS);
    expect(nodeArgumentsOf('baseline', 'test/bench/baseline.ts').some((argument) => (NODE_FLAGS as readonly string[]).includes(argument))).toBe(false);
  });

  it("fix the young generation: with them node's starts at 16 MB, without them at less", async () => {
    const youngGenerationMb = async (flags: readonly string[]) => {
      const script = "process.stdout.write(String(require('node:v8').getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size))";
      const { stdout } = await promisify(execFile)(process.execPath, [...flags, '-e', script]);
      return Number(stdout) / 2 ** 20;
    };
    expect(await youngGenerationMb(NODE_FLAGS)).toBe(16);
    expect(await youngGenerationMb([])).toBeLessThan(16);
  });

  it('names the flags node was started without, however each is spelled', () => {
    expect(missingNodeFlags([])).toEqual([...NODE_FLAGS]);
    expect(missingNodeFlags([...NODE_FLAGS, '--import', 'tsx'])).toEqual([]);
    expect(missingNodeFlags(['--min_semi_space_size=16', '--max-semi-space-size=16'])).toEqual([]);
    expect(missingNodeFlags(['--min-semi-space-size', '16', '--max_semi_space_size', '16', 'dist/server.js'])).toEqual([]);
    expect(missingNodeFlags(['--min-semi-space-size=16'])).toEqual(['--max-semi-space-size=16']);
    // Another size is not memstore's.
    expect(missingNodeFlags(['--min-semi-space-size=8', '--max-semi-space-size=16'])).toEqual(['--min-semi-space-size=16']);
  });
});
