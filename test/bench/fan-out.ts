/**
 * `npm run bench:fan-out`: live-update fan-out while a W1-style write load runs.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:fan-out -- [--subscribers 1000] [--seconds 10] [--writers 16]
 *
 * Starts one memstore process on a scratch database, then measures the same write load
 * (updateMemory with new 1–4 KiB content, as W1, by `--writers` concurrent clients) twice:
 * alone, and with `--subscribers` open streams (half SSE, half graphql-ws) of the workspace.
 * Reports write throughput both ways, and delivery latency p50/p99 from the write's
 * response (its commit) to each stream's receipt of its event.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { generateToken } from '../../src/domain/api-keys.js';
import { createScratchPostgresDatabase } from '../support/database.js';
import { subscribeSse, subscribeWs, type TestStream } from '../support/live.js';
import { startServerProcess } from '../support/process.js';

const { values: flags } = parseArgs({
  options: { subscribers: { type: 'string', default: '1000' }, seconds: { type: 'string', default: '10' }, writers: { type: 'string', default: '16' } },
});
const SUBSCRIBERS = Number(flags.subscribers);
const SECONDS = Number(flags.seconds);
const WRITERS = Number(flags.writers);
const MEMORIES = 200;

if (!process.env.DATABASE_URL) {
  process.stderr.write('bench:fan-out needs DATABASE_URL (PostgreSQL)\n');
  process.exit(1);
}

const token = generateToken();
const database = await createScratchPostgresDatabase('memstore_fanout', process.env.DATABASE_URL);
const server = startServerProcess({
  DATABASE_URL: database.url,
  MEMSTORE_BOOTSTRAP_KEYS: `fanout:${token}`,
  MEMSTORE_RATE_LIMIT_PER_SECOND: '0',
  MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY: String(SUBSCRIBERS + 10),
  NODE_ENV: 'production',
});
const url = await server.ready;
const wsUrl = url.replace(/^http/, 'ws');

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

  /** Runs the write load; the commit time of each version written, by version id. */
  async function writeLoad(seconds: number): Promise<{ perSecond: number; committed: Map<string, number> }> {
    const committed = new Map<string, number>();
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
            committed.set(versionId, performance.now());
            writes += 1;
          }
        }
      }),
    );
    return { perSecond: writes / seconds, committed };
  }

  await writeLoad(2); // warm-up
  const alone = await writeLoad(SECONDS);

  const query = 'subscription { memoryEvents { version { id } } }';
  const received: { versionId: string; at: number }[][] = [];
  const streams: TestStream[] = [];
  for (let index = 0; index < SUBSCRIBERS; index += 1) {
    const arrivals: { versionId: string; at: number }[] = [];
    received.push(arrivals);
    const stream = index % 2 === 0 ? await subscribeSse(fetch, url, token, query) : subscribeWs(wsUrl, token, query);
    // Timestamps as results arrive (the collector's array is watched by a getter).
    const results = stream.results;
    const push = results.push.bind(results);
    results.push = (...items) => {
      for (const item of items) arrivals.push({ versionId: item.data?.memoryEvents?.version?.id, at: performance.now() });
      return push(...items);
    };
    streams.push(stream);
  }
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const loaded = await writeLoad(SECONDS);
  await new Promise((resolve) => setTimeout(resolve, 3000));

  const latencies: number[] = [];
  let missing = 0;
  for (const arrivals of received) {
    const seen = new Map(arrivals.map((arrival) => [arrival.versionId, arrival.at]));
    for (const [versionId, at] of loaded.committed) {
      const arrival = seen.get(versionId);
      if (arrival === undefined) missing += 1;
      else latencies.push(arrival - at);
    }
  }
  latencies.sort((a, b) => a - b);
  const quantile = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  for (const stream of streams) stream.close();
  const report = {
    subscribers: SUBSCRIBERS,
    writers: WRITERS,
    seconds: SECONDS,
    writesPerSecondAlone: Math.round(alone.perSecond),
    writesPerSecondWithSubscribers: Math.round(loaded.perSecond),
    throughputRatio: Number((loaded.perSecond / alone.perSecond).toFixed(3)),
    deliveries: latencies.length,
    missingDeliveries: missing,
    latencyMs: { p50: Math.round(quantile(0.5)), p99: Math.round(quantile(0.99)) },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} finally {
  server.child.kill('SIGTERM');
  await server.exited;
  await database.drop();
}
