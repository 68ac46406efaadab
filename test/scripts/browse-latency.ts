/**
 * The latency of search and folder browsing on the large data set (npm run db:seed-large):
 * one client sends each request after the previous answer (no queueing), through the
 * server's whole HTTP handling in this process (`app.fetch`), and the p50, p99 and maximum
 * of each kind are printed. Usage: `DATABASE_URL=… npm run db:browse-latency [-- N]` (N
 * requests of each kind after 20 to warm up; 500 by default).
 *
 *   S1  searchMemories, two words ("memory <m>": that memory in each of the 100 stores)
 *   S1' searchMemories, one word of one store's every memory ("store <s>": its 1,000 memories, the first 10 ranked)
 *   E1  MemoryStore.entries: the top level ("notes/") of a store, then "notes/" itself (1,000 memories, the first 20)
 */
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/client.js';
import { ensureAdminKey, generateToken } from '../../src/domain/api-keys.js';
import { percentile } from '../support/percentile.js';
import { LARGE_SHAPE, LARGE_WORKSPACE } from './seed-large-shape.js';

const config = loadConfig();
if (!config.databaseUrl) {
  console.error('Set DATABASE_URL to the PostgreSQL database seeded by `npm run db:seed-large`.');
  process.exit(1);
}
const count = Number(process.argv[2] ?? 500);
const database = await createDb({ databaseUrl: config.databaseUrl, dataDir: 'memory://', poolSize: 2 });
const token = generateToken();
await ensureAdminKey(database.db, LARGE_WORKSPACE, token, new Date(), 'browse-latency script');
const app = createApp({ config: { nodeEnv: 'production', graphiql: false }, database });

const SEARCH = `query ($query: String!) { searchMemories(query: $query, first: 10) {
  edges { score snippet { text matches { start end } } node { id path } } pageInfo { hasNextPage } } }`;
const ENTRIES = `query ($id: ID!, $folder: String!) { memoryStore(id: $id) { entries(folder: $folder, first: 20) {
  edges { node { __typename ... on MemoryFolder { path name memoryCount totalSize updatedAt } ... on Memory { id path contentSizeBytes updatedAt } } }
  pageInfo { hasNextPage } } } }`;
const storeId = (s: number) => `memstore_${String(s).padStart(20, '0')}`;

const kinds: { name: string; request: (k: number) => { query: string; variables: Record<string, unknown> }; check: (data: any) => number }[] = [
  { name: 'S1 "memory <m>" (100 hits)', request: (k) => ({ query: SEARCH, variables: { query: `memory ${k % LARGE_SHAPE.memoriesPerStore}` } }), check: (data) => data.searchMemories.edges.length },
  { name: 'S1\' "store <s>" (1,000 hits)', request: (k) => ({ query: SEARCH, variables: { query: `store ${k % LARGE_SHAPE.stores}` } }), check: (data) => data.searchMemories.edges.length },
  {
    name: 'E1 entries (top level, then notes/)',
    request: (k) => ({ query: ENTRIES, variables: { id: storeId(k % LARGE_SHAPE.stores), folder: k % 2 === 0 ? '' : 'notes/' } }),
    check: (data) => data.memoryStore.entries.edges.length,
  },
];


try {
  for (const kind of kinds) {
    const times: number[] = [];
    for (let k = -20; k < count; k += 1) {
      const { query, variables } = kind.request(k + 20);
      const started = performance.now();
      const response = await app.fetch('http://latency/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query, variables }),
      });
      const body = (await response.json()) as { data?: unknown; errors?: unknown };
      const elapsed = performance.now() - started;
      if (response.status !== 200 || body.errors || kind.check(body.data) === 0) throw new Error(`${kind.name}: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
      if (k >= 0) times.push(elapsed);
    }
    times.sort((left, right) => left - right);
    console.log(`${kind.name.padEnd(38)} p50 ${percentile(times, 0.5).toFixed(1).padStart(6)} ms   p99 ${percentile(times, 0.99).toFixed(1).padStart(6)} ms   max ${times.at(-1)!.toFixed(1).padStart(6)} ms   (${count} requests)`);
  }
} finally {
  await database.close();
}
