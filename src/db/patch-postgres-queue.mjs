#!/usr/bin/env node
// Patches the connection queue of postgres.js 3.4.9 in node_modules. Runs as the npm
// `postinstall` script, so `npm install` and `npm ci` apply it; plain Node, no dependencies.
//
// The bug: the pool moves each connection between queues (open, busy, full, ...) on every
// query with `move()`, which calls `Queue.remove` on the queue it leaves and `push` on the
// next. `Queue.shift` only marks the head slot as spent (sets it to undefined) and frees the
// array only when a shift empties the queue; a connection that leaves by `remove` never
// empties it. Under steady load the pool's `busy` queue is never empty, so it gains one
// spent slot per query, and `remove` (`xs.indexOf(x)` from slot 0) scans all of them: every
// query gets slower (select 1 throughput: about a fifth of the start after two minutes).
//
// The fix, in queue.js of each build (src for `import`, cjs/src for `require`, cf/src for
// workerd): `remove` searches the live entries only, and the spent head is dropped once it
// is as long as the live part (amortized O(1)) or when a `remove` empties the queue.
// Behaviour is otherwise unchanged.
//
// Usage: node src/db/patch-postgres-queue.mjs          apply (idempotent)
//        node src/db/patch-postgres-queue.mjs --check  verify only; exit 1 unless patched
//
// It refuses (exit 1) any postgres version other than 3.4.9, and any queue.js that is
// neither the 3.4.9 original nor this patch: on an upgrade, check whether upstream fixed
// Queue (porsager/postgres src/queue.js), then update or delete this script and its
// postinstall entry.

import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const EXPECTED_VERSION = '3.4.9';

const ORIGINAL_BODY = `
function Queue(initial = []) {
  let xs = initial.slice()
  let index = 0

  return {
    get length() {
      return xs.length - index
    },
    remove: (x) => {
      const index = xs.indexOf(x)
      return index === -1
        ? null
        : (xs.splice(index, 1), x)
    },
    push: (x) => (xs.push(x), x),
    shift: () => {
      const out = xs[index++]

      if (index === xs.length) {
        index = 0
        xs = []
      } else {
        xs[index - 1] = undefined
      }

      return out
    }
  }
}
`;

const PATCHED_BODY = `
// memstore patch (src/db/patch-postgres-queue.mjs): remove() scans live entries only, and
// the spent head of the array is dropped, so queues that never drain no longer grow.
function Queue(initial = []) {
  let xs = initial.slice()
  let index = 0

  return {
    get length() {
      return xs.length - index
    },
    remove: (x) => {
      const at = xs.indexOf(x, index)
      if (at === -1)
        return null

      xs.splice(at, 1)
      if (index === xs.length) {
        index = 0
        xs = []
      }
      return x
    },
    push: (x) => (xs.push(x), x),
    shift: () => {
      const out = xs[index++]

      if (index === xs.length) {
        index = 0
        xs = []
      } else if (index >= 32 && index >= xs.length - index) {
        xs = xs.slice(index)
        index = 0
      } else {
        xs[index - 1] = undefined
      }

      return out
    }
  }
}
`;

const ESM = 'export default Queue\n';
const CJS = 'module.exports = Queue\n';
/** The builds in the 3.4.9 tarball; cf (Cloudflare workerd) is patched when present. */
const BUILDS = [
  { dir: 'src', header: ESM, required: true },
  { dir: 'cjs/src', header: CJS, required: true },
  { dir: 'cf/src', header: ESM, required: false },
];

class PatchError extends Error {}

/** The installed postgres package seen from the project (this file is <root>/src/db/). */
function findPackage() {
  const require = createRequire(import.meta.url);
  let entry;
  try {
    entry = require.resolve('postgres');
  } catch (error) {
    throw new PatchError(`cannot resolve the postgres package: ${error.message}`);
  }
  let dir = path.dirname(entry);
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (pkg.name === 'postgres') return { root: dir, version: pkg.version };
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new PatchError(`no package.json of postgres above ${entry}`);
    dir = parent;
  }
}

/** Status of every build: 'original' | 'patched' | 'missing' | 'unknown'. */
export function inspect() {
  const { root, version } = findPackage();
  if (version !== EXPECTED_VERSION) {
    throw new PatchError(
      `postgres ${version} is installed at ${root}; this patch is for exactly ${EXPECTED_VERSION}. ` +
        'Check whether upstream fixed Queue.remove, then update or delete src/db/patch-postgres-queue.mjs and its postinstall entry.',
    );
  }
  const builds = BUILDS.map((build) => {
    const file = path.join(root, build.dir, 'queue.js');
    if (!fs.existsSync(file)) return { ...build, file, status: 'missing' };
    const text = fs.readFileSync(file, 'utf8');
    const status =
      text === build.header + PATCHED_BODY ? 'patched' : text === build.header + ORIGINAL_BODY ? 'original' : 'unknown';
    return { ...build, file, status };
  });

  // The builds Node loads for `import` and `require` must be among those handled here.
  const esmEntry = fileURLToPath(import.meta.resolve('postgres'));
  const cjsEntry = createRequire(import.meta.url).resolve('postgres');
  for (const entry of [esmEntry, cjsEntry]) {
    const queue = path.join(path.dirname(entry), 'queue.js');
    if (!builds.some((build) => build.file === queue)) {
      throw new PatchError(`postgres resolves to ${entry}, whose queue.js is not one of the known builds`);
    }
  }
  return { root, version, builds };
}

function check(builds) {
  for (const build of builds) {
    if (build.status === 'unknown') {
      throw new PatchError(`${build.file} is neither the ${EXPECTED_VERSION} original nor the patched queue: not touching it`);
    }
    if (build.status === 'missing' && build.required) throw new PatchError(`${build.file} is missing`);
  }
}

function apply() {
  const { root, builds } = inspect();
  check(builds);
  for (const build of builds) {
    if (build.status !== 'original') continue;
    // Write beside, then rename: a reader never sees half a file.
    const temporary = `${build.file}.memstore-patch-${process.pid}`;
    fs.writeFileSync(temporary, build.header + PATCHED_BODY);
    fs.renameSync(temporary, build.file);
  }
  const after = inspect().builds;
  check(after);
  const patched = after.filter((build) => build.status === 'patched');
  const changed = builds.filter((build) => build.status === 'original').map((build) => build.dir);
  if (patched.length === 0) throw new PatchError(`no queue.js patched under ${root}`);
  console.log(
    `postgres ${EXPECTED_VERSION} queue patch: ${changed.length ? `applied to ${changed.join(', ')}` : 'already applied'} ` +
      `(${patched.map((build) => build.dir).join(', ')})`,
  );
}

function verify() {
  const { builds } = inspect();
  check(builds);
  const unpatched = builds.filter((build) => build.status === 'original');
  if (unpatched.length > 0) {
    throw new PatchError(
      `not patched: ${unpatched.map((build) => build.file).join(', ')}. Run: node src/db/patch-postgres-queue.mjs`,
    );
  }
  console.log(`postgres ${EXPECTED_VERSION} queue patch: present`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    if (process.argv.includes('--check')) verify();
    else apply();
  } catch (error) {
    console.error(`\nERROR postgres queue patch (src/db/patch-postgres-queue.mjs): ${error.message}\n`);
    process.exit(1);
  }
}
