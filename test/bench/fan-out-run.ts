/**
 * The fan-out workload of `npm run bench` (and of `npm run bench:fan-out`, alone): live-update
 * fan-out while a W1-style write load runs.
 *
 * memstore's production build (`node <src/node-flags.ts> dist/server.js`, built by the caller) runs on a scratch
 * database, on core 1 (PostgreSQL is not pinned); the writers and the subscribers run on
 * core 0, the subscribers in a process of their own (fan-out-subscribers.ts). The same write
 * load is measured alone, then with `subscribers` open streams of the workspace (half SSE, half
 * graphql-ws), each receiving every write, then alone again (the ratio is to the mean of
 * the two runs alone). Reports write throughput both ways, delivery
 * latency p50/p99 from the write's response (its commit) to each stream's receipt of its
 * event, and the CPU each process spent.
 *
 * The write load is W1's (workloads.ts): updateMemory with W1's 1–4 KiB contents, by
 * `writers` concurrent clients, rotating over `stores` stores (200, as the benchmark's data)
 * so that a write comes back to a store only after every other store has had one. With
 * `stores: 1` every write waits for the one store's lock (the load F1 ran until 2026-12-07):
 * the writes are then as many as one store's lock lets through, and anything that slows the
 * backend holding it (a busy core) slows them all.
 */
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { generateToken } from '../../src/domain/api-keys.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { createScratchPostgresDatabase } from '../support/database.js';
import { startServerProcess } from '../support/process.js';
import { cpuDelta, cpuOf, pinLoadGenerator, ROOT, type Pinning } from './measure.js';
import { BENCH_SHAPE } from './seed.js';
import { WRITE_CONTENTS } from './workloads.js';

export interface FanOutOptions {
  /** A PostgreSQL URL: the scratch database is made next to its database. */
  adminUrl: string;
  subscribers: number;
  seconds: number;
  /** The length of the run without subscribers (default: `seconds`). */
  aloneSeconds?: number;
  writers: number;
  /** The stores the writes rotate over (default FAN_OUT_STORES): one memory each, or 200 in a single store. */
  stores?: number;
  /** Where the server writes its CPU profile, if anywhere. */
  profileDirectory?: string;
  /** The cores, when the caller pinned itself already (npm run bench); else this process pins itself to core 0. */
  pinning?: Pinning;
}

export interface FanOutReport {
  subscribers: number;
  writers: number;
  stores: number;
  seconds: number;
  pinning: string;
  /** The mean of the writes alone before the streams open and after they close. */
  writesPerSecondAlone: number;
  writesPerSecondAloneBeforeAndAfter: [number, number];
  writesPerSecondWithSubscribers: number;
  throughputRatio: number;
  deliveries: number;
  missingDeliveries: number;
  readsPerStreamPerSecond: number;
  latencyMs: { p50: number; p99: number; max: number };
  cpuMsPerSecondAlone: Record<string, number>;
  cpuMsPerSecondWithSubscribers: Record<string, number>;
}

/** The stores F1's writes rotate over by default: as many as the benchmark's data has (W1 rotates over them all). */
export const FAN_OUT_STORES = BENCH_SHAPE.stores;
/** The memories the writes update: W1's number of them per store when there is one store, else one a store. */
const memoriesPerStore = (stores: number) => (stores === 1 ? BENCH_SHAPE.stores : 1);
const UPDATE = 'mutation($id: ID!, $c: String!) { updateMemory(input: { id: $id, content: $c }) { ... on UpdateMemorySuccess { memory { latestVersion { id } } } } }';
interface UpdateAnswer {
  data?: { updateMemory?: { memory?: { latestVersion?: { id: string } } } };
}

export async function measureFanOut(options: FanOutOptions): Promise<FanOutReport> {
  const { subscribers: SUBSCRIBERS, seconds: SECONDS, writers: WRITERS } = options;
  const ALONE_SECONDS = options.aloneSeconds ?? SECONDS;
  const STORES = options.stores ?? FAN_OUT_STORES;
  const pinning = options.pinning ?? pinLoadGenerator();
  const token = generateToken();
  const database = await createScratchPostgresDatabase('memstore_fanout', options.adminUrl);
  const serverCommand = [process.execPath, ...NODE_FLAGS, ...(process.env.BENCH_PERF ? ['--perf-basic-prof'] : []), ...(options.profileDirectory ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDirectory}`] : []), 'dist/server.js'];
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
  let subscribers: ReturnType<typeof spawn> | null = null;
  try {
    const url = await server.ready;
    const now = () => performance.timeOrigin + performance.now();

    async function post(query: string, variables: Record<string, unknown>): Promise<any> {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) });
      return response.json();
    }

    // memories[k]: the k-th memory of a rotation that visits every store before coming back to one.
    const memories: string[] = [];
    const perStore = memoriesPerStore(STORES);
    const storeIds: string[] = [];
    for (let index = 0; index < STORES; index += 1) {
      const created = await post('mutation($n: String!) { createMemoryStore(input: { name: $n }) { ... on CreateMemoryStoreSuccess { memoryStore { id } } } }', { n: `fan-out ${index}` });
      storeIds.push(created.data.createMemoryStore.memoryStore.id);
    }
    for (let memory = 0; memory < perStore; memory += 1) {
      for (const store of storeIds) {
        const data = await post('mutation($s: ID!, $p: String!) { createMemory(input: { memoryStoreId: $s, path: $p, content: "seed" }) { ... on CreateMemorySuccess { memory { id } } } }', { s: store, p: `m/${memory}.md` });
        memories.push(data.data.createMemory.memory.id);
      }
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

    /**
     * Runs the write load, through autocannon as W1 runs (a lighter client than fetch: the
     * writers share their core with the subscribers); the time each written version's
     * response arrived, by version id.
     */
    let written = 0;
    async function writeLoad(seconds: number): Promise<{ perSecond: number; committed: Record<string, number> }> {
      const committed: Record<string, number> = {};
      let writes = 0;
      await new Promise<autocannon.Result>((resolve, reject) =>
        autocannon(
          {
            url,
            connections: WRITERS,
            duration: seconds,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            requests: [
              {
                method: 'POST',
                setupRequest: (request) => {
                  const n = written++;
                  const id = memories[n % memories.length]!;
                  // W1's contents, each made unique (an update to the same content writes nothing).
                  const content = `${WRITE_CONTENTS[n % WRITE_CONTENTS.length]}\n(#${n})`;
                  return { ...request, body: JSON.stringify({ query: UPDATE, variables: { id, c: content } }) };
                },
                onResponse: (status, body) => {
                  const versionId = status === 200 ? (JSON.parse(body) as UpdateAnswer).data?.updateMemory?.memory?.latestVersion?.id : undefined;
                  if (versionId) {
                    committed[versionId] = now();
                    writes += 1;
                  }
                },
              },
            ],
          },
          (error, result) => (error ? reject(error) : resolve(result)),
        ),
      );
      return { perSecond: writes / seconds, committed };
    }

    await writeLoad(2); // warm-up
    const { result: alone, cpu: cpuAlone } = await cpuDuring({ server: server.child.pid!, writers: process.pid }, ALONE_SECONDS, () => writeLoad(ALONE_SECONDS));

    subscribers = spawn(process.execPath, ['--import', 'tsx', 'test/bench/fan-out-subscribers.ts', url, token, String(SUBSCRIBERS)], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = readline.createInterface({ input: subscribers.stdout! })[Symbol.asyncIterator]();
    const ready = await lines.next();
    if (ready.value !== 'ready') throw new Error(`the subscribers did not start: ${ready.value}`);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const { result: loaded, cpu: cpuLoaded } = await cpuDuring({ server: server.child.pid!, writers: process.pid, subscribers: subscribers.pid! }, SECONDS, () => writeLoad(SECONDS));
    await new Promise((resolve) => setTimeout(resolve, 3000));
    subscribers.stdin!.write(`${JSON.stringify({ committed: loaded.committed })}\n`);
    const delivery = JSON.parse((await lines.next()).value as string) as { deliveries: number; missing: number; p50: number; p99: number; max: number; chunksPerStream: number };
    // The streams are gone (the subscribers exit once they have reported): the writes alone
    // again, so that the machine's drift over the run (the database's background work) is
    // in both arms.
    await new Promise((resolve) => subscribers!.exitCode === null ? subscribers!.once('exit', resolve) : resolve(undefined));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const { result: aloneAfter } = await cpuDuring({ server: server.child.pid!, writers: process.pid }, ALONE_SECONDS, () => writeLoad(ALONE_SECONDS));
    const alonePerSecond = (alone.perSecond + aloneAfter.perSecond) / 2;

    const report: FanOutReport = {
      subscribers: SUBSCRIBERS,
      writers: WRITERS,
      stores: STORES,
      seconds: SECONDS,
      pinning: pinning.serverCore === null ? pinning.note : 'the writers and the subscribers on core 0, the server on core 1; PostgreSQL not pinned',
      writesPerSecondAlone: Math.round(alonePerSecond),
      writesPerSecondAloneBeforeAndAfter: [Math.round(alone.perSecond), Math.round(aloneAfter.perSecond)],
      writesPerSecondWithSubscribers: Math.round(loaded.perSecond),
      throughputRatio: Number((loaded.perSecond / alonePerSecond).toFixed(3)),
      deliveries: delivery.deliveries,
      missingDeliveries: delivery.missing,
      /** Reads per stream per second: how often the server wrote to each stream's socket. */
      readsPerStreamPerSecond: Number((delivery.chunksPerStream / SECONDS).toFixed(1)),
      latencyMs: { p50: Math.round(delivery.p50), p99: Math.round(delivery.p99), max: Math.round(delivery.max) },
      cpuMsPerSecondAlone: cpuAlone,
      cpuMsPerSecondWithSubscribers: cpuLoaded,
    };
    await probe.end();
    return report;
  } finally {
    if (subscribers && subscribers.exitCode === null) subscribers.kill();
    server.child.kill('SIGTERM');
    await server.exited;
    await database.drop();
  }
}
