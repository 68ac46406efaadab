/**
 * Run as its own process (test/promise-hooks.test.ts): serves one request of each kind
 * through a memstore app — on DATABASE_URL's PostgreSQL when set, else on PGlite in memory —
 * then prints one JSON line: the answers' statuses, and whether promise hooks were on (a
 * promise's reaction runs under an async id of its own only while they are).
 */
import { executionAsyncId } from 'node:async_hooks';
import { createApp } from '../../src/app.js';
import { createDb } from '../../src/db/client.js';
import { ensureAdminKey, generateToken } from '../../src/domain/api-keys.js';
import { RestClient } from './rest.js';

const promiseHooksOn = async () => (await Promise.resolve().then(() => executionAsyncId())) !== 0;

const hooksAtStart = await promiseHooksOn();
const database = await createDb({ databaseUrl: process.env.DATABASE_URL || undefined, dataDir: 'memory://' });
const token = generateToken();
await ensureAdminKey(database.db, 'ws_hooks', token, new Date(), 'probe key');
const app = createApp({ config: { nodeEnv: 'test', graphiql: false, requestTimeoutMs: 5_000 }, database });
const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
const graphql = async (query: string, variables: Record<string, unknown> = {}) => {
  const response = await app.fetch('http://memstore.test/graphql', { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  return { status: response.status, body: (await response.json()) as { data?: any; errors?: unknown[] } };
};

const statuses: Record<string, number> = {};
const store = await graphql('mutation { createMemoryStore(input: { name: "hooks" }) { ... on CreateMemoryStoreSuccess { memoryStore { id } } } }');
statuses.mutation = store.status;
const storeId = store.body.data.createMemoryStore.memoryStore.id as string;
const written = await graphql(
  'mutation ($input: CreateMemoryInput!) { createMemory(input: $input) { ... on CreateMemorySuccess { memory { id latestVersion { id } } } } }',
  { input: { memoryStoreId: storeId, path: 'notes/a.md', content: 'hello' } },
);
statuses.write = written.status;
const memoryId = written.body.data.createMemory.memory.id as string;
// A compiled read, twice (the second as a polling dashboard would send it), and one the resolvers answer in a snapshot (latestVersion is theirs).
statuses.compiledRead = (await graphql('query ($id: ID!) { memory(id: $id) { id path content } }', { id: memoryId })).status;
statuses.resolverRead = (await graphql('{ searchMemories(query: "hello", first: 5) { edges { node { id latestVersion { id } versions(first: 2) { edges { node { id } } } } } } }')).status;
const rest = new RestClient(app, token);
statuses.restRead = (await rest.send('GET', `/memory_stores/${storeId}/memories`)).status;
statuses.restWrite = (await rest.send('POST', '/memory_stores', { json: { name: 'hooks again' }, headers: { 'idempotency-key': 'probe-1' } })).status;
const hooksAfterRequests = await promiseHooksOn();
await database.close();
process.stdout.write(`${JSON.stringify({ hooksAtStart, hooksAfterRequests, statuses })}\n`);
process.exit(0);
