import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The boundaries of src/, checked on every import (type-only ones included): a module may
 * import its own layer and the layers below it, never one above; there is no import cycle;
 * only src/server.ts listens.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const SOURCE = path.join(ROOT, 'src');

/** Lowest first. A file belongs to the first layer one of whose prefixes it starts with. */
const LAYERS: [name: string, prefixes: string[]][] = [
  ['foundation', ['src/logger.ts']],
  ['db', ['src/db/']],
  ['domain', ['src/domain/']],
  ['transports', ['src/graphql/', 'src/read-compiler/', 'src/rest/', 'src/subscriptions/', 'src/context.ts']],
  ['http', ['src/http/']],
  ['app', ['src/app.ts', 'src/app-options.ts', 'src/config.ts']],
  ['entry points', ['src/server.ts', 'src/node-flags.ts', 'src/listen-errors.ts', 'src/startup.ts', 'src/apikey-cli.ts', 'src/print-schema.ts']],
];

/** Packages a layer must not import, whatever it imports of ours. */
const FORBIDDEN_PACKAGES: Record<string, RegExp> = {
  db: /^(graphql|graphql-yoga|@pothos\/|@graphql-|node:http$)/,
  domain: /^(graphql|graphql-yoga|@pothos\/|@graphql-|node:http$|dataloader$)/,
};

function sourceFiles(directory: string): string[] {
  return fs.readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|mjs)$/.test(entry.name) ? [path.relative(ROOT, full)] : [];
  });
}

function layerOf(file: string): number {
  const index = LAYERS.findIndex(([, prefixes]) => prefixes.some((prefix) => file === prefix || file.startsWith(prefix)));
  if (index < 0) throw new Error(`${file} belongs to no layer: add it to LAYERS`);
  return index;
}

/** Every module a file imports or re-exports: our files (relative to the root) and package names. */
function importsOf(file: string): { ours: string[]; packages: string[] } {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const { importedFiles } = ts.preProcessFile(text, true, true);
  const ours: string[] = [];
  const packages: string[] = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) {
      packages.push(fileName);
      continue;
    }
    const target = path.relative(ROOT, path.resolve(path.dirname(path.join(ROOT, file)), fileName)).replace(/\.js$/, '.ts');
    ours.push(fs.existsSync(path.join(ROOT, target)) ? target : target.replace(/\.ts$/, '.mjs'));
  }
  return { ours, packages };
}

const files = sourceFiles(SOURCE);
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe('the boundaries of src/', () => {
  it('puts every file in a layer, and no import runs from a lower layer to a higher one', () => {
    const upward: string[] = [];
    for (const [file, { ours }] of graph) {
      for (const target of ours) {
        if (layerOf(target) > layerOf(file)) upward.push(`${file} (${LAYERS[layerOf(file)]![0]}) imports ${target} (${LAYERS[layerOf(target)]![0]})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('keeps GraphQL, HTTP and Yoga out of src/domain and src/db', () => {
    const forbidden: string[] = [];
    for (const [file, { packages }] of graph) {
      const rule = FORBIDDEN_PACKAGES[LAYERS[layerOf(file)]![0]];
      for (const name of packages) if (rule?.test(name)) forbidden.push(`${file} imports ${name}`);
    }
    expect(forbidden).toEqual([]);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const trail: string[] = [];
    const visit = (file: string) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(' → '));
        return;
      }
      state.set(file, 'open');
      trail.push(file);
      for (const target of graph.get(file)?.ours ?? []) visit(target);
      trail.pop();
      state.set(file, 'done');
    };
    for (const file of files) visit(file);
    expect(cycles).toEqual([]);
  });

  it('lets only src/server.ts listen for connections (the data dir lock binds a name and accepts none)', () => {
    const listening = files.filter((file) => /\.listen\(|createServer\(/.test(fs.readFileSync(path.join(ROOT, file), 'utf8')));
    // src/db/client.ts LISTENs on a PostgreSQL notification channel (live updates), not on a port.
    expect(listening.sort()).toEqual(['src/db/client.ts', 'src/db/data-dir-lock.ts', 'src/server.ts']);
    expect(fs.readFileSync(path.join(ROOT, 'src/db/client.ts'), 'utf8').match(/\.listen\([^)]*/g)).toEqual(['.listen(channel, (']);
    // The lock's socket exists for its name alone: every connection to it is dropped at once.
    expect(fs.readFileSync(path.join(ROOT, 'src/db/data-dir-lock.ts'), 'utf8')).toContain('net.createServer((socket) => socket.destroy())');
  });

  it('keeps every file of src/ within 400 lines, and createApp\'s module under 100 (a longer file is a module boundary still missing)', () => {
    const lineCount = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(files.filter((file) => lineCount(file) > 400).map((file) => `${file}: ${lineCount(file)} lines`)).toEqual([]);
    expect(lineCount('src/app.ts')).toBeLessThan(100);
  });

  it('knows each layer it names (a renamed folder must not silently leave the check)', () => {
    for (const [name, prefixes] of LAYERS) {
      const present = prefixes.filter((prefix) => files.some((file) => file === prefix || file.startsWith(prefix)));
      expect(present.length, name).toBeGreaterThan(0);
    }
  });
});
