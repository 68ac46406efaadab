/**
 * The flags memstore's commands give `node`: `npm start`, the production command in the
 * README (`node --min-semi-space-size=8 --max-semi-space-size=8 dist/server.js`) and the
 * benchmark's memstore (which takes them from `npm start`). test/node-flags.test.ts holds
 * these to this list.
 *
 * They fix the size of the young generation of the JavaScript heap, where every request's
 * objects are made, at 8 MB a semi-space. Left to itself V8 starts it at 1 MB and grows it
 * under load up to 16 MB a semi-space on 64-bit Node 20 and 22 (in a trace of the
 * benchmark's dashboard, from 4 to 32 MB in the first 10 s of a two-minute run, while the
 * old generation stayed flat), and shrinks it again when allocation slows. Fixed, its size
 * no longer follows load. V8 still gives back the pages of its idle half while the server
 * idles and touches them again under load; at 8 MB that swing is 8 MB, and a scavenge comes
 * twice as often as at 16, so the buffers that only a scavenge frees (socket reads, a
 * compiled read's answer) wait half as long: under the dashboard's load RSS ran 139–147 MB
 * at 8 against 145–163 at 16 (four alternated two-minute runs, 2026-12-07).
 *
 * V8 reads these sizes when it sets the heap up, before any JavaScript runs: unlike
 * `--heap-growing-percent` (server.ts), they cannot be set from inside the process, and
 * NODE_OPTIONS does not admit `--min-semi-space-size`. A server started without them works
 * as before; in production it says so once at startup.
 */
export const NODE_FLAGS = ['--min-semi-space-size=8', '--max-semi-space-size=8'] as const;

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
