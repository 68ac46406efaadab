/**
 * The flags memstore's commands give `node`: `npm start`, the production command in the
 * README (`node --min-semi-space-size=16 --max-semi-space-size=16 dist/server.js`) and the
 * benchmark's memstore (which takes them from `npm start`). test/node-flags.test.ts holds
 * these to this list.
 *
 * They fix the size of the young generation of the JavaScript heap, where every request's
 * objects are made, at 16 MB a semi-space: the largest V8 grows it to by itself on 64-bit
 * Node 20 and 22 with their default heap limits. Left to itself V8 starts it at 1 MB and
 * grows it under load (in a trace of the benchmark's dashboard, from 4 to 32 MB in the
 * first 10 s of a two-minute run, while the old generation stayed flat), and shrinks it
 * again when allocation slows. Fixed, its size no longer follows load; V8 still gives back
 * the pages of its idle half while the server idles, and touches them again under load.
 *
 * V8 reads these sizes when it sets the heap up, before any JavaScript runs: unlike
 * `--heap-growing-percent` (server.ts), they cannot be set from inside the process, and
 * NODE_OPTIONS does not admit `--min-semi-space-size`. A server started without them works
 * as before; in production it says so once at startup.
 */
export const NODE_FLAGS = ['--min-semi-space-size=16', '--max-semi-space-size=16'] as const;

/**
 * The flags of NODE_FLAGS that node was not started with, or with another value: as node
 * does, the last value given for a name counts, and a name may be spelled with `_` for `-`.
 */
export function missingNodeFlags(execArgv: readonly string[]): string[] {
  const values = new Map<string, string>();
  for (const argument of execArgv) {
    const equals = argument.indexOf('=');
    if (!argument.startsWith('--') || equals < 0) continue;
    values.set(argument.slice(0, equals).replaceAll('_', '-'), argument.slice(equals + 1));
  }
  return NODE_FLAGS.filter((flag) => {
    const equals = flag.indexOf('=');
    return values.get(flag.slice(0, equals)) !== flag.slice(equals + 1);
  });
}
