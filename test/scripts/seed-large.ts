/**
 * Seeds workspace "large" on PostgreSQL (DATABASE_URL) with 100 stores × 1,000 memories ×
 * 5 versions — 100,000 memories and 500,000 versions, consistent with the §6 invariants —
 * and 1,900 empty stores.
 * Idempotent: does nothing when the workspace exists. Usage: `npm run db:seed-large`.
 */
import { sql } from 'drizzle-orm';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/client.js';

import { EXTRA_EMPTY_STORES, LARGE_SHAPE, LARGE_WORKSPACE } from './seed-large-shape.js';

const config = loadConfig();
if (!config.databaseUrl) {
  console.error('Set DATABASE_URL to a PostgreSQL database: the large data set is for PostgreSQL.');
  process.exit(1);
}
const database = await createDb({ databaseUrl: config.databaseUrl, dataDir: 'memory://' });
const { db } = database;
const started = performance.now();
try {
  const existing = await db.execute(sql`select 1 from workspaces where id = ${LARGE_WORKSPACE}`);
  if ((Array.isArray(existing) ? existing : (existing as { rows: unknown[] }).rows).length > 0) {
    console.log(`Workspace "${LARGE_WORKSPACE}" already exists: nothing to do.`);
  } else {
    const { stores, memoriesPerStore, versionsPerMemory } = LARGE_SHAPE;
    await db.transaction(async (tx) => {
      await tx.execute(sql`insert into workspaces (id) values (${LARGE_WORKSPACE})`);
      // Ids are well-formed (a zero time part and a counter) and sort like their counters.
      await tx.execute(sql`
        insert into memory_stores (workspace_id, id, name, description, status, entry_count, total_size, metadata, system_managed, created_at, updated_at)
        select ${LARGE_WORKSPACE}, 'memstore_' || lpad(s::text, 20, '0'), 'store ' || s, '', 'active', 0, 0, '{"created_by":"forward"}'::jsonb, false,
               timestamptz '2026-01-01' + make_interval(secs => s * ${memoriesPerStore}), timestamptz '2026-01-01' + make_interval(secs => s * ${memoriesPerStore})
        from generate_series(0, ${stores + EXTRA_EMPTY_STORES - 1}) s`);
      await tx.execute(sql`
        insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata, version_sequence, created_at, updated_at)
        select ${LARGE_WORKSPACE}, 'mem_' || lpad((s * ${memoriesPerStore} + m)::text, 20, '0'), 'memstore_' || lpad(s::text, 20, '0'),
               'notes/' || lpad(m::text, 4, '0') || '.md', c.content, octet_length(c.content), encode(sha256(convert_to(c.content, 'UTF8')), 'hex'),
               jsonb_build_object('index', m::text), ${versionsPerMemory},
               timestamptz '2026-01-01' + make_interval(secs => s * ${memoriesPerStore} + m),
               timestamptz '2026-01-01' + make_interval(secs => s * ${memoriesPerStore} + m, days => ${versionsPerMemory - 1}) + make_interval(secs => (m * 7919 + s) % 100000)
        from generate_series(0, ${stores - 1}) s, generate_series(0, ${memoriesPerStore - 1}) m,
             lateral (select 'version ${sql.raw(String(versionsPerMemory))} of memory ' || m || ' in store ' || s || ' ' || repeat('x', 100 + m % 200) as content) c`);
      await tx.execute(sql`
        update memory_stores st set entry_count = agg.entries, total_size = agg.bytes
        from (select memory_store_id, count(*) as entries, sum(content_size_bytes) as bytes from memories where workspace_id = ${LARGE_WORKSPACE} group by memory_store_id) agg
        where st.workspace_id = ${LARGE_WORKSPACE} and st.id = agg.memory_store_id`);
      await tx.execute(sql`
        insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
        select m.workspace_id, 'memver_' || lpad(((row_number() over (order by m.id, v)))::text, 20, '0'), m.memory_store_id, m.id, m.path, c.content,
               octet_length(c.content), encode(sha256(convert_to(c.content, 'UTF8')), 'hex'),
               (case when v = 1 then 'created' else 'updated' end)::memory_operation, v, 'key_seed',
               case when v = ${versionsPerMemory} then m.updated_at else m.created_at + make_interval(days => v - 1) end
        from memories m, generate_series(1, ${versionsPerMemory}) v,
             lateral (select case when v = ${versionsPerMemory} then m.content else 'version ' || v || ' of ' || m.path end as content) c
        where m.workspace_id = ${LARGE_WORKSPACE}`);
    });
    await db.execute(sql`analyze`);
    console.log(`Seeded workspace "${LARGE_WORKSPACE}" in ${Math.round((performance.now() - started) / 1000)} s.`);
  }
} finally {
  await database.close();
}
