/**
 * The flags memstore's commands give `node`: `npm start`, the production command in the
 * README (`node --min-semi-space-size=16 --max-semi-space-size=16 dist/server.js`) and the
 * benchmark's memstore. A test holds all three to this list.
 *
 * They fix the young generation of the JavaScript heap, where every request's objects are
 * made, at V8's largest default size (16 MB a semi-space on 64-bit Node 20). Left to itself
 * V8 starts it at 1 MB, grows it under load and shrinks it again when load drops, so a
 * server that has been idle for a minute adds up to 30 MB when requests come back (in
 * two-minute runs of `npm run bench -- --long`, RSS grew up to 20 % while the old generation
 * stayed flat). Fixed, the memory the server holds after its first requests is what it
 * keeps.
 *
 * V8 reads these sizes when it sets the heap up, before any JavaScript runs: unlike
 * `--heap-growing-percent` (server.ts), they cannot be set from inside the process, nor
 * through NODE_OPTIONS, which does not admit them. A server started without them works as
 * before; in production it says so once at startup.
 */
export const NODE_FLAGS = ['--min-semi-space-size=16', '--max-semi-space-size=16'] as const;

/**
 * The flags of NODE_FLAGS that node was not started with. A flag's name may be spelled with
 * `_` for `-`, and its value given after `=` or as the next argument.
 */
export function missingNodeFlags(execArgv: readonly string[]): string[] {
  const given = new Set(
    execArgv.map((argument, index) => {
      const [name, value = execArgv[index + 1]] = argument.split('=', 2) as [string, string?];
      return `${name.replaceAll('_', '-')}=${value}`;
    }),
  );
  return NODE_FLAGS.filter((flag) => !given.has(flag));
}
