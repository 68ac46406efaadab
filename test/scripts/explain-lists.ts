/**
 * Runs every list query of the API against the large data set (npm run db:seed-large) on
 * PostgreSQL, records the SQL the server sends, and prints each statement's plan summary
 * (EXPLAIN ANALYZE): the scans it uses and its execution time, for a first page and for a
 * page deep in the list. Usage: `npm run db:explain`.
 */
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/client.js';
import { recordStatements } from '../../src/db/statement-count.js';
import { ensureAdminKey, generateToken } from '../../src/domain/api-keys.js';
import { explainAnalyze } from './explain.js';

const WORKSPACE = 'large';
const config = loadConfig();
if (!config.databaseUrl) {
  console.error('Set DATABASE_URL to the PostgreSQL database seeded by `npm run db:seed-large`.');
  process.exit(1);
}
const database = await createDb({ databaseUrl: config.databaseUrl, dataDir: 'memory://', poolSize: 2 });
const token = generateToken();
await ensureAdminKey(database.db, WORKSPACE, token, new Date(), 'explain script');
const app = createApp({ config: { nodeEnv: 'production', graphiql: false }, database });

const cursor = (...values: unknown[]) => Buffer.from(JSON.stringify(values)).toString('base64url');
const store = 'memstore_00000000000000000042';
const memory = 'mem_00000000000000042500';

const cases: [string, string][] = [
  ['stores, first page', '{ memoryStores(first: 20) { edges { node { id } } } }'],
  ['stores, deep page', `{ memoryStores(first: 20, after: "${cursor('stores', '2026-01-01T00:00:10.000Z', 'memstore_00000000000000000010')}") { edges { node { id } } } }`],
  ['memories by path, first page', `{ memoryStore(id: "${store}") { memories(first: 20) { edges { node { path } } } } }`],
  ['memories by path, deep page', `{ memoryStore(id: "${store}") { memories(first: 20, after: "${cursor('memories:path', 'notes/0900.md')}") { edges { node { path } } } } }`],
  ['memories by path, backward from the end', `{ memoryStore(id: "${store}") { memories(last: 20) { edges { node { path } } } } }`],
  ['memories by path prefix', `{ memoryStore(id: "${store}") { memories(first: 20, pathPrefix: "notes/09") { edges { node { path } } } } }`],
  ['memories by updatedAt, first page', `{ memoryStore(id: "${store}") { memories(first: 20, orderBy: UPDATED_AT_DESC) { edges { node { path } } } } }`],
  ['memories by updatedAt, deep page', `{ memoryStore(id: "${store}") { memories(first: 20, orderBy: UPDATED_AT_DESC, after: "${cursor('memories:updated', '2026-01-05T12:00:00.000Z', 'mem_00000000000000042000')}") { edges { node { path } } } } }`],
  ['memories by createdAt, deep page', `{ memoryStore(id: "${store}") { memories(first: 20, orderBy: CREATED_AT_DESC, after: "${cursor('memories:created', '2026-01-01T11:48:20.000Z', 'mem_00000000000000042100')}") { edges { node { path } } } } }`],
  ['versions of a memory, first page', `{ memory(id: "${memory}") { versions(first: 5) { edges { node { id } } } } }`],
  ['versions of a memory, deep page', `{ memory(id: "${memory}") { versions(first: 5, after: "${cursor('memory-versions', 3)}") { edges { node { id } } } } }`],
  ['versions of a store, first page', `{ memoryStore(id: "${store}") { versions(first: 20) { edges { node { id } } } } }`],
  ['versions of a store, deep page', `{ memoryStore(id: "${store}") { versions(first: 20, after: "${cursor('store-versions', '2026-01-02T11:50:00.000Z', 'memver_00000000000000212000')}") { edges { node { id } } } } }`],
  ['versions of a store by operation', `{ memoryStore(id: "${store}") { versions(first: 20, operation: CREATED) { edges { node { id } } } } }`],
  ['versions of a store by memory', `{ memoryStore(id: "${store}") { versions(first: 20, memoryId: "${memory}") { edges { node { id } } } } }`],
  ['versions of a store created after', `{ memoryStore(id: "${store}") { versions(first: 20, createdAfter: "2026-01-03T00:00:00Z") { edges { node { id } } } } }`],
  ['memory by path', `{ memoryStore(id: "${store}") { memory(path: "notes/0500.md") { id } } }`],
  ['latest version', `{ memory(id: "${memory}") { latestVersion { id } } }`],
  ['counts', `{ memoryStore(id: "${store}") { memories { totalCount } versions { totalCount } } }`],
];

function planSummary(plan: string[]): string {
  const scans = plan
    .map((line) => /(Index Only Scan|Index Scan|Bitmap Index Scan|Seq Scan)(?: Backward)?(?: using (\S+))? on (\S+)/.exec(line))
    .filter((match) => match !== null)
    .map((match) => `${match![1]}${match![2] ? ` ${match![2]}` : ''} on ${match![3]}`);
  return [...new Set(scans)].join('; ') || '(no table scan)';
}


try {
  for (const [name, query] of cases) {
    const { result, statements } = await recordStatements(async () => {
      const response = await app.fetch('http://explain/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query }),
      });
      return (await response.json()) as { errors?: unknown };
    });
    if (result.errors) throw new Error(`${name}: ${JSON.stringify(result.errors)}`);
    console.log(`\n${name}`);
    // The first statement authenticates the key; the rest answer the query.
    for (const statement of statements.slice(1)) {
      const plan = await explainAnalyze(database.db, statement);
      const time = plan.find((line) => line.startsWith('Execution Time'))?.replace('Execution Time: ', '') ?? '?';
      console.log(`  ${time.padStart(10)}  ${planSummary(plan)}`);
    }
  }
} finally {
  await database.close();
}
