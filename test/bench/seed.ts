/**
 * The benchmark's data set, written set-based (a few statements, however many rows):
 * BENCH_SHAPE.stores stores × memoriesPerStore memories × versionsPerMemory versions in
 * workspace "bench", with deterministic pseudo-random content of 1–4 KiB per version and
 * exact store counters. The same SQL seeds PostgreSQL and PGlite.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';

export const BENCH_WORKSPACE = 'bench';
export const BENCH_SHAPE = { stores: 200, memoriesPerStore: 50, versionsPerMemory: 6 } as const;
export const CONTENT_MIN_BYTES = 1024;
export const CONTENT_MAX_BYTES = 4096;
/** Every seeded path starts with this (Q3 lists a store by it). */
export const SEEDED_PATH_PREFIX = 'notes/';

/** Ids are well-formed (`<prefix>` + 20 base36 characters) and sort like their counters. */
export const storeId = (store: number) => `memstore_bench${String(store).padStart(15, '0')}`;
export const memoryId = (store: number, memory: number) =>
  `mem_bench${String(store * BENCH_SHAPE.memoriesPerStore + memory).padStart(15, '0')}`;
export const seededPath = (memory: number) => `${SEEDED_PATH_PREFIX}topic-${memory % 5}/${String(memory).padStart(3, '0')}.md`;

const WORDS = [
  'memory', 'agent', 'store', 'version', 'the', 'of', 'and', 'a', 'to', 'in', 'is', 'for', 'that', 'with', 'project',
  'deploy', 'review', 'config', 'schema', 'customer', 'latency', 'request', 'answer', 'decision', 'because', 'should',
  'never', 'always', 'prefer', 'database', 'index', 'migration', 'release', 'incident', 'ticket', 'meeting', 'notes',
  'summary', 'context', 'template', 'identity', 'session', 'mount', 'policy', 'budget', 'quarter', 'roadmap', 'owner',
  'backend', 'frontend', 'testing', 'coverage', 'flaky', 'retry', 'timeout', 'cache', 'queue', 'worker', 'token',
  'metric', 'dashboard', 'alert', 'rollback', 'feature', 'pricing', 'contract', 'api', 'user', 'team', 'weekly',
];

/** A deterministic 31-bit hash of a text expression, the same on every PostgreSQL (md5-based). */
const hash = (expression: string) => `(('x' || substr(md5(${expression}), 1, 8))::bit(32)::int & 2147483647)`;

const CHUNKS = 1024;
const WORDS_PER_CHUNK = 180;
const CHUNKS_PER_CONTENT = 4;

/**
 * Rows (s, m, v, content) for stores × memories × the given versions: a header plus chunks
 * picked by hash, one hash join per chunk slot, cut to 1–4 KiB picked by hash. Computed
 * inline by each insert: a temporary table of the contents would be compressed (TOAST)
 * once more for nothing.
 */
function contentRows(firstVersion: number, lastVersion: number): string {
  const { stores, memoriesPerStore } = BENCH_SHAPE;
  const slots = Array.from({ length: CHUNKS_PER_CONTENT }, (_, k) => k);
  return `(select g.s, g.m, g.v,
             left('store ' || g.s || ', memory ' || g.m || ', version ' || g.v || E'\\n' || ${slots.map((k) => `c${k}.text`).join(" || E'\\n' || ")},
                  ${CONTENT_MIN_BYTES} + ${hash("g.s || '/' || g.m || '/' || g.v")} % ${CONTENT_MAX_BYTES - CONTENT_MIN_BYTES + 1}) as content
      from (select s, m, v, ${slots.map((k) => `${hash(`s || '/' || m || '/' || v || '/${k}'`)} % ${CHUNKS} as h${k}`).join(', ')}
            from generate_series(0, ${stores - 1}) s, generate_series(0, ${memoriesPerStore - 1}) m, generate_series(${firstVersion}, ${lastVersion}) v) g
      ${slots.map((k) => `join bench_chunks c${k} on c${k}.idx = g.h${k}`).join('\n      ')})`;
}

/** Seeds the bench workspace (which must exist, with its ADMIN key `apiKeyId`). Returns the seconds taken. */
export async function seedBenchData(db: Database, apiKeyId: string): Promise<number> {
  const started = performance.now();
  const { stores, memoriesPerStore, versionsPerMemory } = BENCH_SHAPE;
  const ws = BENCH_WORKSPACE;
  await db.transaction(async (tx) => {
    // A pool of word chunks for contentRows (a temporary table lives on this transaction's connection).
    await tx.execute(sql.raw(`
      create temp table bench_chunks on commit drop as
      select c as idx, string_agg((array['${WORDS.join("','")}'])[1 + ${hash("c || ':' || i")} % ${WORDS.length}], ' ' order by i) as text
      from generate_series(0, ${CHUNKS - 1}) c, generate_series(1, ${WORDS_PER_CHUNK}) i
      group by c`));
    await tx.execute(sql`
      insert into memory_stores (workspace_id, id, name, description, status, entry_count, total_size, metadata, system_managed, created_at, updated_at)
      select ${ws}, 'memstore_bench' || lpad(s::text, 15, '0'), 'bench store ' || s, 'Benchmark store ' || s, 'active', 0, 0,
             '{"created_by":"forward"}'::jsonb, false,
             timestamptz '2026-01-01' + make_interval(mins => s), timestamptz '2026-01-01' + make_interval(mins => s)
      from generate_series(0, ${stores - 1}) s`);
    await tx.execute(sql`
      insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata, version_sequence, created_at, updated_at)
      select ${ws}, 'mem_bench' || lpad((c.s * ${memoriesPerStore} + c.m)::text, 15, '0'), 'memstore_bench' || lpad(c.s::text, 15, '0'),
             ${SEEDED_PATH_PREFIX} || 'topic-' || (c.m % 5) || '/' || lpad(c.m::text, 3, '0') || '.md',
             c.content, octet_length(c.content), encode(sha256(convert_to(c.content, 'UTF8')), 'hex'), '{}'::jsonb, ${versionsPerMemory},
             timestamptz '2026-01-02' + make_interval(mins => c.s, secs => c.m),
             timestamptz '2026-01-02' + make_interval(mins => c.s, secs => c.m, hours => ${versionsPerMemory - 1})
      from ${sql.raw(contentRows(versionsPerMemory, versionsPerMemory))} c`);
    await tx.execute(sql`
      insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
      select ${ws}, 'memver_bench' || lpad(((c.s * ${memoriesPerStore} + c.m) * ${versionsPerMemory} + c.v)::text, 15, '0'),
             'memstore_bench' || lpad(c.s::text, 15, '0'), 'mem_bench' || lpad((c.s * ${memoriesPerStore} + c.m)::text, 15, '0'),
             ${SEEDED_PATH_PREFIX} || 'topic-' || (c.m % 5) || '/' || lpad(c.m::text, 3, '0') || '.md',
             c.content, octet_length(c.content), encode(sha256(convert_to(c.content, 'UTF8')), 'hex'),
             (case when c.v = 1 then 'created' else 'updated' end)::memory_operation, c.v, ${apiKeyId},
             timestamptz '2026-01-02' + make_interval(mins => c.s, secs => c.m, hours => c.v - 1)
      from ${sql.raw(contentRows(1, versionsPerMemory))} c`);
    await tx.execute(sql`
      update memory_stores st set entry_count = agg.entries, total_size = agg.bytes
      from (select memory_store_id, count(*)::int as entries, sum(content_size_bytes)::bigint as bytes
            from memories where workspace_id = ${ws} group by memory_store_id) agg
      where st.workspace_id = ${ws} and st.id = agg.memory_store_id`);
  });
  await db.execute(sql`analyze workspaces, api_keys, memory_stores, memories, memory_versions`);
  return (performance.now() - started) / 1000;
}

/**
 * The §6 invariants over the bench workspace, as a list of problems (empty when they
 * hold): counters equal the live memories' count and byte sum, each memory's content,
 * sha and sequence equal its newest version's, version sequences run 1..n without gaps,
 * and seeded contents are 1–4 KiB.
 */
export async function benchInvariantViolations(db: Database): Promise<string[]> {
  const ws = BENCH_WORKSPACE;
  const rowsOf = (result: unknown) => (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, unknown>[];
  const problems: string[] = [];
  const counters = rowsOf(
    await db.execute(sql`
      select st.id, st.entry_count, st.total_size, coalesce(agg.entries, 0) as entries, coalesce(agg.bytes, 0) as bytes
      from memory_stores st
      left join (select memory_store_id, count(*)::int as entries, sum(content_size_bytes)::bigint as bytes
                 from memories where workspace_id = ${ws} group by memory_store_id) agg on agg.memory_store_id = st.id
      where st.workspace_id = ${ws} and (st.entry_count <> coalesce(agg.entries, 0) or st.total_size <> coalesce(agg.bytes, 0))`),
  );
  for (const row of counters) problems.push(`store ${row.id}: counters ${row.entry_count}/${row.total_size}, actual ${row.entries}/${row.bytes}`);
  const latest = rowsOf(
    await db.execute(sql`
      select m.id from memories m
      left join memory_versions v on v.workspace_id = m.workspace_id and v.memory_id = m.id and v.sequence = m.version_sequence
      where m.workspace_id = ${ws}
        and (v.id is null or v.content is distinct from m.content or v.content_sha256 <> m.content_sha256
             or v.content_size_bytes <> m.content_size_bytes or v.content_sha256 <> encode(sha256(convert_to(m.content, 'UTF8')), 'hex')
             or m.content_size_bytes <> octet_length(m.content))
      limit 10`),
  );
  for (const row of latest) problems.push(`memory ${row.id}: differs from its newest version`);
  const gaps = rowsOf(
    await db.execute(sql`
      select memory_id from memory_versions where workspace_id = ${ws}
      group by memory_id having count(*) <> max(sequence) or min(sequence) <> 1 limit 10`),
  );
  for (const row of gaps) problems.push(`memory ${row.memory_id}: version sequence has gaps`);
  return problems;
}

/** Checks the freshly seeded shape: row counts and content sizes. */
export async function seededShapeProblems(db: Database): Promise<string[]> {
  const ws = BENCH_WORKSPACE;
  const result = await db.execute(sql`
    select (select count(*)::int from memory_stores where workspace_id = ${ws}) as stores,
           (select count(*)::int from memories where workspace_id = ${ws}) as memories,
           (select count(*)::int from memory_versions where workspace_id = ${ws}) as versions,
           (select min(content_size_bytes) from memory_versions where workspace_id = ${ws}) as min_bytes,
           (select max(content_size_bytes) from memory_versions where workspace_id = ${ws}) as max_bytes,
           (select count(distinct content_sha256)::int from memory_versions where workspace_id = ${ws}) as distinct_contents`);
  const row = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows)[0] as Record<string, number>;
  const { stores, memoriesPerStore, versionsPerMemory } = BENCH_SHAPE;
  const problems: string[] = [];
  if (row.stores !== stores) problems.push(`expected ${stores} stores, found ${row.stores}`);
  if (row.memories !== stores * memoriesPerStore) problems.push(`expected ${stores * memoriesPerStore} memories, found ${row.memories}`);
  if (row.versions !== stores * memoriesPerStore * versionsPerMemory) problems.push(`expected ${stores * memoriesPerStore * versionsPerMemory} versions, found ${row.versions}`);
  if (Number(row.min_bytes) < CONTENT_MIN_BYTES || Number(row.max_bytes) > CONTENT_MAX_BYTES) {
    problems.push(`content sizes ${row.min_bytes}..${row.max_bytes} outside ${CONTENT_MIN_BYTES}..${CONTENT_MAX_BYTES}`);
  }
  if (row.distinct_contents !== row.versions) problems.push(`only ${row.distinct_contents} distinct contents for ${row.versions} versions`);
  return problems;
}
