/**
 * `npm run bench:fan-out`: live-update fan-out while a W1-style write load runs.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:fan-out -- [--subscribers 1000] [--seconds 10] [--writers 16] [--alone-seconds N]
 *
 * BENCH_CPU_PROF=DIR writes the server's CPU profile there.
 *
 * Builds memstore and starts its production build (`node dist/server.js`) on a scratch
 * database, on core 1 (PostgreSQL is not pinned); the writers and the subscribers run on
 * core 0, the subscribers in a process of their own (fan-out-subscribers.ts). The same write
 * load (updateMemory with new 1–4 KiB content, as W1, by `--writers` concurrent clients) is
 * measured twice: alone, and with `--subscribers` open streams of the workspace (half SSE,
 * half graphql-ws). Reports write throughput both ways, and delivery latency p50/p99 from
 * the write's response (its commit) to each stream's receipt of its event.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { generateToken } from '../../src/domain/api-keys.js';
import { createScratchPostgresDatabase } from '../support/database.js';
import { startServerProcess } from '../support/process.js';
import postgres from 'postgres';
import { cpuDelta, cpuOf, pinLoadGenerator, ROOT } from './measure.js';

const { values: flags } = parseArgs({
  options: { subscribers: { type: 'string', default: '1000' }, seconds: { type: 'string', default: '10' }, writers: { type: 'string', default: '16' }, 'alone-seconds': { type: 'string' } },
});
const SUBSCRIBERS = Number(flags.subscribers);
const SECONDS = Number(flags.seconds);
const WRITERS = Number(flags.writers);
/** The length of the run without subscribers (shorter when profiling the run with them). */
const ALONE_SECONDS = Number(flags['alone-seconds'] ?? SECONDS);
const MEMORIES = 200;

if (!process.env.DATABASE_URL) {
  process.stderr.write('bench:fan-out needs DATABASE_URL (PostgreSQL)\n');
  process.exit(1);
}

execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'ignore' });
const pinning = pinLoadGenerator();
const token = generateToken();
const database = await createScratchPostgresDatabase('memstore_fanout', process.env.DATABASE_URL);
const serverCommand = [process.execPath, ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), 'dist/server.js'];
const server = startServerProcess(
  {
    DATABASE_URL: database.url,
    MEMSTORE_BOOTSTRAP_KEYS: `fanout:${token}`,
    MEMSTORE_RATE_LIMIT_PER_SECOND: '0',
    MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY: String(SUBSCRIBERS + 10),
    NODE_ENV: 'production',
  },
  pinning.serverCore === null ? serverCommand : ['taskset', '-c', String(pinning.serverCore), ...serverCommand],
);
const url = await server.ready;
const now = () => performance.timeOrigin + performance.now();

async function post(query: string, variables: Record<string, unknown>): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) });
  return response.json();
}

try {
  const store = (await post('mutation { createMemoryStore(input: { name: "fan-out" }) { ... on CreateMemoryStoreSuccess { memoryStore { id } } } }', {})).data.createMemoryStore.memoryStore.id;
  const memories: string[] = [];
  for (let index = 0; index < MEMORIES; index += 1) {
    const data = await post('mutation($s: ID!, $p: String!) { createMemory(input: { memoryStoreId: $s, path: $p, content: "seed" }) { ... on CreateMemorySuccess { memory { id } } } }', { s: store, p: `m/${index}.md` });
    memories.push(data.data.createMemory.memory.id);
  }

  const probe = postgres(database.url, { max: 1 });
  const backendPids = async () => (await probe`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`).map((row) => row.pid as number);
  /** CPU ms per second of the run, of each process (and of the database's backends), while `work` runs. */
  async function cpuDuring<T>(pids: Record<string, number>, seconds: number, work: () => Promise<T>): Promise<{ result: T; cpu: Record<string, number> }> {
    const databaseBefore = await backendPids();
    const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuOf([pid])]));
    const databaseCpu = cpuOf(databaseBefore);
    const transactions = async () => Number((await probe`select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`)[0]!.n);
    const transactionsBefore = await transactions();
    const result = await work();
    const cpu: Record<string, number> = {};
    for (const [name, pid] of Object.entries(pids)) cpu[name] = Math.round(cpuDelta(before[name]!, cpuOf([pid])) / seconds);
    cpu.transactionsPerSecond = Math.round(((await transactions()) - transactionsBefore) / seconds);
    cpu.postgres = Math.round(cpuDelta(databaseCpu, cpuOf([...new Set([...databaseBefore, ...(await backendPids())])])) / seconds);
    return { result, cpu };
  }

  /** Runs the write load; the time each written version's response arrived, by version id. */
  async function writeLoad(seconds: number): Promise<{ perSecond: number; committed: Record<string, number> }> {
    const committed: Record<string, number> = {};
    const until = performance.now() + seconds * 1000;
    let writes = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (performance.now() < until) {
          const id = memories[Math.floor(Math.random() * memories.length)]!;
          const content = randomBytes(512 + Math.floor(Math.random() * 1536)).toString('hex');
          const data = await post('mutation($id: ID!, $c: String!) { updateMemory(input: { id: $id, content: $c }) { ... on UpdateMemorySuccess { memory { latestVersion { id } } } } }', { id, c: content });
          const versionId = data.data?.updateMemory?.memory?.latestVersion?.id;
          if (versionId) {
            committed[versionId] = now();
            writes += 1;
          }
        }
      }),
    );
    return { perSecond: writes / seconds, committed };
  }

  await writeLoad(2); // warm-up
  const { result: alone, cpu: cpuAlone } = await cpuDuring({ server: server.child.pid!, writers: process.pid }, ALONE_SECONDS, () => writeLoad(ALONE_SECONDS));

  const subscribers = spawn(process.execPath, ['--import', 'tsx', 'test/bench/fan-out-subscribers.ts', url, token, String(SUBSCRIBERS)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: subscribers.stdout! })[Symbol.asyncIterator]();
  const ready = await lines.next();
  if (ready.value !== 'ready') throw new Error(`the subscribers did not start: ${ready.value}`);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const { result: loaded, cpu: cpuLoaded } = await cpuDuring({ server: server.child.pid!, writers: process.pid, subscribers: subscribers.pid! }, SECONDS, () => writeLoad(SECONDS));
  await new Promise((resolve) => setTimeout(resolve, 3000));
  subscribers.stdin!.write(`${JSON.stringify({ committed: loaded.committed })}\n`);
  const delivery = JSON.parse((await lines.next()).value as string) as { deliveries: number; missing: number; p50: number; p99: number; max: number };

  const report = {
    subscribers: SUBSCRIBERS,
    writers: WRITERS,
    seconds: SECONDS,
    pinning: pinning.serverCore === null ? pinning.note : 'the writers and the subscribers on core 0, the server on core 1; PostgreSQL not pinned',
    writesPerSecondAlone: Math.round(alone.perSecond),
    writesPerSecondWithSubscribers: Math.round(loaded.perSecond),
    throughputRatio: Number((loaded.perSecond / alone.perSecond).toFixed(3)),
    deliveries: delivery.deliveries,
    missingDeliveries: delivery.missing,
    latencyMs: { p50: Math.round(delivery.p50), p99: Math.round(delivery.p99), max: Math.round(delivery.max) },
    cpuMsPerSecondAlone: cpuAlone,
    cpuMsPerSecondWithSubscribers: cpuLoaded,
  };
  await probe.end();
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} finally {
  server.child.kill('SIGTERM');
  await server.exited;
  await database.drop();
}
