/**
 * `npm run bench:fan-out`: the fan-out workload of `npm run bench` alone (fan-out-run.ts).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:fan-out -- [--subscribers 1000] [--seconds 10] [--writers 16] [--stores 200] [--alone-seconds N]
 *
 * BENCH_CPU_PROF=DIR writes the server's CPU profile there; BENCH_PERF=1 starts it with
 * --perf-basic-prof (JavaScript names for `perf`). Prints the report as JSON.
 */
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { FAN_OUT_STORES, measureFanOut } from './fan-out-run.js';
import { numberFlag, ROOT } from './measure.js';

const { values: flags } = parseArgs({
  options: { subscribers: { type: 'string', default: '1000' }, seconds: { type: 'string', default: '10' }, writers: { type: 'string', default: '16' }, stores: { type: 'string', default: String(FAN_OUT_STORES) }, 'alone-seconds': { type: 'string' } },
});

if (!process.env.DATABASE_URL) {
  process.stderr.write('bench:fan-out needs DATABASE_URL (PostgreSQL)\n');
  process.exit(1);
}

const subscribers = numberFlag('subscribers', flags.subscribers, 'whole');
const seconds = numberFlag('seconds', flags.seconds, 'whole');
const writers = numberFlag('writers', flags.writers, 'whole');
const stores = numberFlag('stores', flags.stores, 'whole');

execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
const report = await measureFanOut({
  adminUrl: process.env.DATABASE_URL,
  subscribers,
  seconds,
  aloneSeconds: flags['alone-seconds'] === undefined ? undefined : Number(flags['alone-seconds']),
  writers,
  stores,
  profileDirectory: process.env.BENCH_CPU_PROF,
});
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
