/**
 * History and browsing on a large store (PostgreSQL, DATABASE_URL): seeds workspace
 * "history-large" with ONE store of 100,000 memories in a folder tree, with word-like
 * content (through SQL: the search column is generated as for API writes, the folder
 * rollups are filled in one statement as migration 0003 fills them), then measures through
 * the full HTTP handling (app.fetch, one ADMIN key, resolvers):
 *   - MemoryStore.entries of the root, of a deep folder, and a second page of a big folder,
 *   - a two-word searchMemories,
 * each run many times, one at a time (p50, p95, p99, max), and prints EXPLAIN (ANALYZE, BUFFERS)
 * of the statements each one sends. Seeding is idempotent (skipped when the workspace
 * exists). Figures of one run: test/scripts/bench-history.results.txt.
 * Usage: `DATABASE_URL=postgres://… npx tsx test/scripts/bench-history.ts [--runs 200]`.
 */
import { sql } from 'drizzle-orm';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDb, rowsOf } from '../../src/db/client.js';
import { recordStatements } from '../../src/db/statement-count.js';
import { ensureAdminKey, generateToken } from '../../src/domain/api-keys.js';
import { percentile } from '../support/percentile.js';
import { explainAnalyze } from './explain.js';

export const HISTORY_WORKSPACE = 'history-large';
export const HISTORY_STORE = 'memstore_00000000000000000001';
export const HISTORY_MEMORIES = 100_000;

const runsArgument = process.argv.indexOf('--runs');
const RUNS = runsArgument > 0 ? Number(process.argv[runsArgument + 1]) : 200;
const WARMUP = 20;

const config = loadConfig();
if (!config.databaseUrl) {
  console.error('Set DATABASE_URL to a PostgreSQL database: the large data set is for PostgreSQL.');
  process.exit(1);
}
const database = await createDb({ databaseUrl: config.databaseUrl, dataDir: 'memory://', poolSize: 4 });
const { db } = database;

/** 2,000 pronounceable words; content draws from them with a skew (a few common, most rare), as text does. */
function vocabulary(): string[] {
  const onsets = ['b', 'd', 'f', 'g', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'ch', 'st', 'tr', 'pl', 'gr', 'br'];
  const vowels = ['a', 'e', 'i', 'o', 'u'];
  const codas = ['', 'n', 'r', 'l', 's'];
  const words: string[] = [];
  for (const first of onsets) for (const vowel of vowels) for (const second of onsets.slice(0, 4)) for (const coda of codas) words.push(`${first}${vowel}${second}${vowels[(words.length * 7) % 5]}${coda}`);
  return words.slice(0, 2000);
}

async function seed(): Promise<void> {
  const exists = rowsOf(await db.execute(sql`select 1 from workspaces where id = ${HISTORY_WORKSPACE}`)).length > 0;
  if (exists) {
    console.log(`Workspace "${HISTORY_WORKSPACE}" exists: not seeding again.`);
    return;
  }
  const started = performance.now();
  const words = vocabulary();
  await db.transaction(async (tx) => {
    await tx.execute(sql`insert into workspaces (id) values (${HISTORY_WORKSPACE})`);
    await tx.execute(sql`
      insert into memory_stores (workspace_id, id, name, description, status, entry_count, total_size, metadata, system_managed, created_at, updated_at)
      values (${HISTORY_WORKSPACE}, ${HISTORY_STORE}, 'one large store', '', 'active', 0, 0, '{"created_by":"forward"}'::jsonb, false, '2026-01-01', '2026-01-01')`);
    // One statement writing 100,000 memories would make the per-row folder trigger update the
    // same few folder rows 10,000 times in one transaction: the trigger is off for the bulk
    // insert, and the folders are filled the way migration 0003 fills them for existing data.
    await tx.execute(sql`alter table memories disable trigger memories_folder_rollup`);
    // Paths: team-T/project-P/notes/[archive/2026/]note-N.md (10 × 20 folders, a deep archive
    // in each), and a few memories at the root. Content: 30–80 words of the vocabulary.
    await tx.execute(sql`
      with source as (
        select i,
          case when i < 5 then 'README-' || i || '.md'
               else 'team-' || (i % 10) || '/project-' || ((i / 10) % 20) || '/notes/' || case when i % 7 = 0 then 'archive/2026/' else '' end || 'note-' || lpad(i::text, 6, '0') || '.md'
          end as path,
          (select string_agg((${sql.param(words)}::text[])[1 + floor(power(((i::bigint * 2654435761 + j * 40503) % 1000003) / 1000003.0, 2) * ${words.length})::int], ' ')
             from generate_series(1, 30 + i % 50) j) as content
        from generate_series(0, ${HISTORY_MEMORIES - 1}) i)
      insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata, version_sequence, created_at, updated_at)
      select ${HISTORY_WORKSPACE}, 'mem_' || lpad(i::text, 20, '0'), ${HISTORY_STORE}, path, content, octet_length(content),
        encode(sha256(convert_to(content, 'UTF8')), 'hex'), '{}'::jsonb, 1,
        timestamptz '2026-01-01' + make_interval(secs => i), timestamptz '2026-01-01' + make_interval(secs => i)
      from source`);
    await tx.execute(sql`alter table memories enable trigger memories_folder_rollup`);
    await tx.execute(sql`
      insert into memory_folders (workspace_id, memory_store_id, path, parent, name, memory_count, total_size, updated_at)
      select m.workspace_id, m.memory_store_id, f.folder,
          coalesce(substring(f.folder from '^(.*/)[^/]+/$'), ''), substring(f.folder from '([^/]+)/$'),
          count(*)::int, sum(m.content_size_bytes)::bigint, max(m.updated_at)
        from memories m
        cross join lateral (select left(m.path, cut) collate "C" as folder from generate_series(1, length(m.path)) as cut where substr(m.path, cut, 1) = '/') f
        where m.workspace_id = ${HISTORY_WORKSPACE}
        group by m.workspace_id, m.memory_store_id, f.folder`);
    await tx.execute(sql`
      insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
      select workspace_id, 'memver_' || substr(id, 5), memory_store_id, id, path, content, content_size_bytes, content_sha256, 'created', 1, 'key_seed', created_at
      from memories where workspace_id = ${HISTORY_WORKSPACE}`);
    await tx.execute(sql`
      update memory_stores s set entry_count = agg.entries, total_size = agg.bytes
      from (select count(*)::int as entries, sum(content_size_bytes)::bigint as bytes from memories where workspace_id = ${HISTORY_WORKSPACE}) agg
      where s.workspace_id = ${HISTORY_WORKSPACE} and s.id = ${HISTORY_STORE}`);
  });
  await db.execute(sql`analyze memories`);
  await db.execute(sql`analyze memory_folders`);
  console.log(`Seeded ${HISTORY_MEMORIES} memories in one store in ${Math.round((performance.now() - started) / 1000)} s.`);
}

/** Two words of medium frequency, as a person would type them. */
async function twoWordQuery(): Promise<string> {
  const words = vocabulary();
  const counts: { word: string; documents: number }[] = [];
  for (const word of [words[40]!, words[90]!, words[150]!, words[300]!]) {
    const [row] = rowsOf(await db.execute(sql`select count(*)::int as documents from memories where workspace_id = ${HISTORY_WORKSPACE} and search_vector @@ to_tsquery('simple', ${word})`));
    counts.push({ word, documents: Number(row!.documents) });
  }
  console.log(`Word frequencies: ${counts.map((count) => `${count.word} ${count.documents}`).join(', ')}`);
  return `${counts[1]!.word} ${counts[3]!.word}`;
}



try {
  await seed();
  const token = generateToken();
  await ensureAdminKey(db, HISTORY_WORKSPACE, token, new Date(), 'history bench');
  const app = createApp({ config: { nodeEnv: 'production', graphiql: false, rateLimit: null }, database });
  const ask = async (query: string) => {
    const response = await app.fetch('http://bench/graphql', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query }) });
    const body = (await response.json()) as { data?: unknown; errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data as any;
  };
  const query = await twoWordQuery();
  const cases: [string, string][] = [
    ['entries of the root', `{ memoryStore(id: "${HISTORY_STORE}") { entries(first: 20) { totalCount edges { node { __typename ... on MemoryFolder { path memoryCount totalSize updatedAt } ... on Memory { path contentSizeBytes } } } } } }`],
    ['entries of a deep folder', `{ memoryStore(id: "${HISTORY_STORE}") { entries(folder: "team-3/project-7/notes/archive/2026/", first: 20) { totalCount edges { node { __typename ... on Memory { path contentSizeBytes updatedAt } } } } } }`],
    ['entries of a folder of 460 memories, second page', ''],
    [`searchMemories "${query}"`, `{ searchMemories(query: ${JSON.stringify(query)}, memoryStoreId: "${HISTORY_STORE}", first: 20) { totalCount edges { score snippet { text matches { start end } } node { path } } } }`],
  ];
  // The second page of a big folder, from the first page's cursor.
  const bigFolder = 'team-3/project-7/notes/';
  const first = await ask(`{ memoryStore(id: "${HISTORY_STORE}") { entries(folder: "${bigFolder}", first: 20) { pageInfo { endCursor } } } }`);
  cases[2]![1] = `{ memoryStore(id: "${HISTORY_STORE}") { entries(folder: "${bigFolder}", first: 20, after: "${first.memoryStore.entries.pageInfo.endCursor}") { totalCount edges { node { __typename ... on Memory { path } } } } } }`;

  const sample = await ask(cases[0]![1]);
  console.log(`Root: ${sample.memoryStore.entries.totalCount} entries, e.g. ${JSON.stringify(sample.memoryStore.entries.edges[0].node)}`);
  const hits = await ask(cases[3]![1]);
  console.log(`Search: ${hits.searchMemories.totalCount} hits; best ${JSON.stringify(hits.searchMemories.edges[0]?.node)} score ${hits.searchMemories.edges[0]?.score}`);

  console.log(`\n${RUNS} runs each (after ${WARMUP} warm-up runs), one at a time, milliseconds:`);
  for (const [name, text] of cases) {
    for (let index = 0; index < WARMUP; index += 1) await ask(text);
    const times: number[] = [];
    for (let index = 0; index < RUNS; index += 1) {
      const started = performance.now();
      await ask(text);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    console.log(`  ${name.padEnd(52)} p50 ${percentile(times, 0.5).toFixed(2).padStart(7)}  p95 ${percentile(times, 0.95).toFixed(2).padStart(7)}  p99 ${percentile(times, 0.99).toFixed(2).padStart(7)}  max ${times.at(-1)!.toFixed(2).padStart(7)}`);
  }

  console.log('\nEXPLAIN (ANALYZE, BUFFERS) of the statements each case sends (after authentication):');
  for (const [name, text] of cases) {
    const { statements } = await recordStatements(() => ask(text));
    console.log(`\n== ${name}`);
    for (const statement of statements.slice(1)) {
      if (/^\s*(begin|commit|rollback|set )/i.test(statement.sql)) continue;
      const plan = await explainAnalyze(db, statement);
      console.log(`-- ${statement.sql.replace(/\s+/g, ' ').slice(0, 160)}…`);
      for (const line of plan) console.log(`   ${line}`);
    }
  }
} finally {
  await database.close();
}
