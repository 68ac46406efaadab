#!/usr/bin/env node
// Patches postgres.js 3.4.9 in node_modules. Runs as the npm `postinstall` script, so
// `npm install` and `npm ci` apply it; plain Node, no dependencies. Each patch replaces
// exact pieces of one file in every build (src for `import`, cjs/src for `require`, cf/src
// for workerd); a file that is neither the 3.4.9 original nor patched is refused.
//
// 1. queue.js — throughput decays under steady load. The pool moves each connection
//    between queues (open, busy, full, ...) on every query with `move()`, which calls
//    `Queue.remove` on the queue it leaves and `push` on the next. `Queue.shift` only marks
//    the head slot as spent and frees the array only when a shift empties the queue; a
//    connection that leaves by `remove` never empties it. Under steady load the pool's
//    `busy` queue is never empty, so it gains one spent slot per query, and `remove` scans
//    all of them (select 1 throughput: about a fifth of the start after two minutes). Fix:
//    `remove` searches the live entries only, and the spent head is dropped once it is as
//    long as the live part (amortized O(1)) or when a `remove` empties the queue.
//    Upstream: porsager/postgres#747.
//
// 2. connection.js — a dropped connection crashes the process. `closed()` sets the socket
//    to null and reconnects only later; a query executed on the connection meanwhile (a
//    transaction's next statement or its ROLLBACK) schedules `nextWrite` on a timer, which
//    then calls `socket.write` on null: an uncaught TypeError from a timer, so no caller can
//    catch it. Fix: `execute` on a connection without a socket rejects the query with
//    CONNECTION_CLOSED, and `nextWrite` without a socket settles what is pending with that
//    error instead of writing. Upstream: porsager/postgres#1154, #1208 (open). Also: a
//    connection closed while it fetches the array types (right after connecting) rejects a
//    promise nothing awaits, and Node ends the process on the unhandled rejection; that
//    rejection is now caught (the next connection fetches the types again). And: a session
//    that ends in the middle of a response leaves its parser state behind (the count of rows
//    read so far, a FATAL error response), and the next session of that connection applies
//    it to its first queries: a query resolves with a hole where its first row should be, or
//    fails with the old session's error. closed() now resets that state.
//
// 3. index.js — a transaction can go on outside its transaction. When its connection closes
//    while other queries wait for the pool, the pool reconnects that same connection at
//    once, and the transaction's later statements would be executed on the new session, in
//    autocommit, without the locks taken before. Fix: once a transaction's connection has
//    closed, every further statement of that transaction (and those it had queued) is
//    rejected with the close error. Upstream: porsager/postgres#1155 (open).
//
// Usage: node src/db/patch-postgres.mjs          apply (idempotent)
//        node src/db/patch-postgres.mjs --check  verify only; exit 1 unless patched
//
// It refuses (exit 1) any postgres version other than 3.4.9: on an upgrade, check which of
// these upstream fixed, then update or delete this script and its postinstall entry.

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
// memstore patch (src/db/patch-postgres.mjs): remove() scans live entries only, and
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


const PATCHES = [
  { file: 'queue.js', name: 'queue', edits: [[ORIGINAL_BODY, PATCHED_BODY]] },
  {
    file: 'connection.js',
    name: 'closed-socket',
    edits: [
      [
        `    if (terminated)
      return queryError(q, Errors.connection('CONNECTION_DESTROYED', options))
`,
        `    if (terminated)
      return queryError(q, Errors.connection('CONNECTION_DESTROYED', options))

    // memstore patch (src/db/patch-postgres.mjs): the socket closed and no reconnect has begun.
    if (!socket)
      return queryError(q, Errors.connection('CONNECTION_CLOSED', options))
`,
      ],
      [
        `      if (needsTypes) {
        initial.reserve && (initial = null)
        return fetchArrayTypes()
      }
`,
        `      if (needsTypes) {
        initial.reserve && (initial = null)
        // memstore patch (src/db/patch-postgres.mjs): a connection closed during the type
        // fetch rejected this promise, which nothing awaits; the next connection fetches again.
        return fetchArrayTypes().catch(() => { needsTypes = options.fetch_types })
      }
`,
      ],
      [
        `  async function closed(hadError) {
    incoming = Buffer.alloc(0)
    remaining = 0
    incomings = null
`,
        `  async function closed(hadError) {
    incoming = Buffer.alloc(0)
    remaining = 0
    incomings = null
    // memstore patch (src/db/patch-postgres.mjs): forget the half-read response of the old
    // session, or the next session's first query gets its row count and its error.
    rows = 0
    result = new Result()
    results = null
    errorResponse = null
`,
      ],
      [
        `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)
`,
        `  function nextWrite(fn) {
    // memstore patch (src/db/patch-postgres.mjs): settle, never write to a closed socket.
    if (!socket) {
      nextWriteTimer !== null && clearImmediate(nextWriteTimer)
      chunk = nextWriteTimer = null
      error(Errors.connection('CONNECTION_CLOSED', options))
      return false
    }
    const x = socket.write(chunk, fn)
`,
      ],
    ],
  },
  {
    file: 'index.js',
    name: 'closed-transaction',
    edits: [
      [
        `    let savepoints = 0
      , connection
      , prepare = null
`,
        `    let savepoints = 0
      , connection
      , prepare = null
      , closedError = null // memstore patch (src/db/patch-postgres.mjs)
`,
      ],
      [
        `        new Promise((_, reject) => connection.onclose = reject)
`,
        `        new Promise((_, reject) => connection.onclose = (e) => {
          // memstore patch: the transaction is over; so are the statements it had queued.
          closedError = e
          while (queries.length)
            queries.shift().reject(e)
          reject(e)
        })
`,
      ],
      [
        `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        c.queue === full
`,
        `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        // memstore patch: never run a statement of this transaction on a reconnected session.
        if (closedError)
          return q.reject(closedError)
        c.queue === full
`,
      ],
    ],
  },
];

/** The builds in the 3.4.9 tarball; cf (Cloudflare workerd) is patched when present. */
const BUILDS = [
  { dir: 'src', required: true },
  { dir: 'cjs/src', required: true },
  { dir: 'cf/src', required: false },
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

function occurrences(text, piece) {
  let count = 0;
  for (let at = text.indexOf(piece); at !== -1; at = text.indexOf(piece, at + piece.length)) count += 1;
  return count;
}

/** 'original' (every original piece once, no patched one), 'patched' (every patched piece once) or 'unknown'. */
function statusOf(text, patch) {
  if (patch.edits.every(([, patched]) => occurrences(text, patched) === 1)) return 'patched';
  if (patch.edits.every(([original, patched]) => occurrences(text, original) === 1 && occurrences(text, patched) === 0)) return 'original';
  return 'unknown';
}

/** Status of every patched file of every build. */
export function inspect() {
  const { root, version } = findPackage();
  if (version !== EXPECTED_VERSION) {
    throw new PatchError(
      `postgres ${version} is installed at ${root}; these patches are for exactly ${EXPECTED_VERSION}. ` +
        'Check which of them upstream fixed, then update or delete src/db/patch-postgres.mjs and its postinstall entry.',
    );
  }
  const files = [];
  for (const build of BUILDS) {
    for (const patch of PATCHES) {
      const file = path.join(root, build.dir, patch.file);
      if (!fs.existsSync(file)) {
        files.push({ build, patch, file, status: 'missing' });
        continue;
      }
      files.push({ build, patch, file, status: statusOf(fs.readFileSync(file, 'utf8'), patch) });
    }
  }

  // The builds Node loads for `import` and `require` must be among those handled here.
  const esmEntry = fileURLToPath(import.meta.resolve('postgres'));
  const cjsEntry = createRequire(import.meta.url).resolve('postgres');
  for (const entry of [esmEntry, cjsEntry]) {
    const dir = path.dirname(entry);
    if (!files.some((file) => path.dirname(file.file) === dir)) {
      throw new PatchError(`postgres resolves to ${entry}, which is not one of the known builds`);
    }
  }
  return { root, version, files };
}

function check(files) {
  for (const file of files) {
    if (file.status === 'unknown') {
      throw new PatchError(`${file.file} is neither the ${EXPECTED_VERSION} original nor patched (${file.patch.name}): not touching it`);
    }
    if (file.status === 'missing' && file.build.required) throw new PatchError(`${file.file} is missing`);
  }
}

function apply() {
  const { root, files } = inspect();
  check(files);
  for (const file of files) {
    if (file.status !== 'original') continue;
    let text = fs.readFileSync(file.file, 'utf8');
    for (const [original, patched] of file.patch.edits) text = text.replace(original, () => patched);
    // Write beside, then rename: a reader never sees half a file.
    const temporary = `${file.file}.memstore-patch-${process.pid}`;
    fs.writeFileSync(temporary, text);
    fs.renameSync(temporary, file.file);
  }
  const after = inspect().files;
  check(after);
  if (!after.some((file) => file.status === 'patched')) throw new PatchError(`nothing patched under ${root}`);
  const changed = files.filter((file) => file.status === 'original').map((file) => `${file.build.dir}/${file.patch.file}`);
  console.log(
    `postgres ${EXPECTED_VERSION} patches (${PATCHES.map((patch) => patch.name).join(', ')}): ` +
      `${changed.length ? `applied to ${changed.join(', ')}` : 'already applied'}`,
  );
}

function verify() {
  const { files } = inspect();
  check(files);
  const unpatched = files.filter((file) => file.status === 'original');
  if (unpatched.length > 0) {
    throw new PatchError(`not patched: ${unpatched.map((file) => file.file).join(', ')}. Run: node src/db/patch-postgres.mjs`);
  }
  console.log(`postgres ${EXPECTED_VERSION} patches: present`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    if (process.argv.includes('--check')) verify();
    else apply();
  } catch (error) {
    console.error(`\nERROR postgres patches (src/db/patch-postgres.mjs): ${error.message}\n`);
    process.exit(1);
  }
}
