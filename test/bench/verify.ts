/**
 * Before a workload is measured, memstore and the baseline answer the same logical
 * requests and must agree: the same rows in the same order for reads, the same effects on
 * the database for writes (one new version, exact counters, the same precondition and
 * conflict outcomes). A benchmark that compares different work would be meaningless.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';
import { BENCH_SHAPE, BENCH_WORKSPACE, benchInvariantViolations, memoryId, SEEDED_PATH_PREFIX, storeId } from './seed.js';
import {
  CREATE_MUTATION,
  DASHBOARD_QUERY,
  DASHBOARD_SHAPE,
  GRAPHQL_PATH,
  MEMORY_QUERY,
  PREFIX_PAGE,
  PREFIX_QUERY,
  ENTRIES_PAGE,
  ENTRIES_QUERY,
  entriesFolder,
  restMemoryPath,
  SEARCH_PAGE,
  SEARCH_QUERY,
  searchWords,
  UPDATE_MUTATION,
  WRITE_CONTENTS,
  type WorkloadName,
} from './workloads.js';

export interface Endpoints {
  memstore: string;
  /** Absent for memstore on PGlite: then only memstore's own answers are checked. */
  baseline?: string;
  token: string;
}

interface Reply {
  status: number;
  body: any; // JSON of either server
}

async function post(baseUrl: string, path: string, token: string, payload: unknown): Promise<Reply> {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(payload),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

async function graphql(endpoints: Endpoints, query: string, variables: Record<string, unknown>): Promise<any> {
  const reply = await post(endpoints.memstore, GRAPHQL_PATH, endpoints.token, { query, variables });
  if (reply.status !== 200 || reply.body?.errors) throw new Error(`memstore answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 500)}`);
  return reply.body.data;
}

const nodes = (connection: { edges: { node: any }[] }) => connection.edges.map((edge) => edge.node);

function dashboardFromGraphql(data: any): unknown {
  return nodes(data.memoryStores).map((store) => ({
    id: store.id,
    name: store.name,
    entryCount: store.entryCount,
    totalSize: store.totalSize,
    memories: nodes(store.memories).map((memory) => ({
      id: memory.id,
      path: memory.path,
      contentSizeBytes: memory.contentSizeBytes,
      contentSha256: memory.contentSha256,
      updatedAt: memory.updatedAt,
      versions: nodes(memory.versions),
    })),
  }));
}

function prefixFromGraphql(data: any): unknown {
  const store = data.memoryStore;
  return { id: store.id, entryCount: store.entryCount, memories: nodes(store.memories) };
}

function describeDifference(label: string, memstore: unknown, baseline: unknown): string {
  return `${label}: memstore and baseline differ\n  memstore: ${JSON.stringify(memstore).slice(0, 400)}\n  baseline: ${JSON.stringify(baseline).slice(0, 400)}`;
}

const rowsOf = (result: unknown) => (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, any>[];

/** Reads: the same data in the same order. Returns a line describing what was compared. */
/** R2: the Forward REST answer holds what Q2's does (GraphQL's fields under their REST names), for the same memories. */
async function verifyRestRead(endpoints: Endpoints): Promise<string> {
  const ids = [[0, 0], [57, 13], [BENCH_SHAPE.stores - 1, BENCH_SHAPE.memoriesPerStore - 1]] as const;
  for (const [store, memory] of ids) {
    const id = memoryId(store, memory);
    const response = await fetch(`${endpoints.memstore}${restMemoryPath(storeId(store), id)}`, { headers: { authorization: `Bearer ${endpoints.token}` } });
    const rest = (await response.json()) as Record<string, any>;
    if (response.status !== 200 || rest.id !== id) throw new Error(`R2: memstore answered ${response.status} for memory ${id}: ${JSON.stringify(rest).slice(0, 300)}`);
    const asGraphql = {
      id: rest.id,
      memoryStoreId: rest.memory_store_id,
      path: rest.path,
      content: rest.content,
      contentSizeBytes: rest.content_size_bytes,
      contentSha256: rest.content_sha256,
      metadata: rest.metadata,
      updatedAt: rest.updated_at,
    };
    const expected = endpoints.baseline ? (await post(endpoints.baseline, '/q2', endpoints.token, { id })).body : (await graphql(endpoints, MEMORY_QUERY, { id })).memory;
    if (!isDeepStrictEqual(asGraphql, expected)) throw new Error(describeDifference(`R2 ${id}`, asGraphql, expected));
  }
  return `R2: ${ids.length} memories with content over REST, equal field by field to ${endpoints.baseline ? 'the baseline' : 'Q2'}`;
}

/** S1 and E1: the same page (hits with scores and snippets; folders and memories) for several searches and folders. */
async function verifyBrowse(name: 'S1' | 'E1', endpoints: Endpoints): Promise<string> {
  const cases =
    name === 'S1'
      ? [0, 7, 49].map((k) => ({ query: SEARCH_QUERY, variables: { query: searchWords(k), first: SEARCH_PAGE }, path: '/s1', pick: (data: any) => data.searchMemories }))
      : [0, 1, 5, 6].map((k) => ({
          query: ENTRIES_QUERY,
          variables: { storeId: storeId((k * 37) % BENCH_SHAPE.stores), folder: entriesFolder(k), first: ENTRIES_PAGE },
          path: '/e1',
          pick: (data: any) => data.memoryStore.entries,
        }));
  let items = 0;
  for (const { query, variables, path, pick } of cases) {
    const memstore = pick(await graphql(endpoints, query, variables));
    if (memstore.edges.length === 0) throw new Error(`${name}: memstore found nothing for ${JSON.stringify(variables)}`);
    items += memstore.edges.length;
    if (endpoints.baseline) {
      const baseline = await post(endpoints.baseline, path, endpoints.token, variables);
      if (baseline.status !== 200 || !isDeepStrictEqual(memstore, baseline.body)) throw new Error(describeDifference(`${name} ${JSON.stringify(variables)}`, memstore, baseline.body));
    }
  }
  return name === 'S1'
    ? `S1: ${cases.length} searches, ${items} hits with scores and snippets in rank order, equal field by field`
    : `E1: ${cases.length} folder levels, ${items} folders and memories in order, equal field by field`;
}

async function verifyRead(name: 'Q1' | 'Q2' | 'Q3', endpoints: Endpoints): Promise<string> {
  if (name === 'Q1') {
    const memstore = dashboardFromGraphql(await graphql(endpoints, DASHBOARD_QUERY, DASHBOARD_SHAPE)) as any[];
    const stores = memstore.length;
    const memories = memstore.reduce((sum, store) => sum + store.memories.length, 0);
    const versions = memstore.reduce((sum, store) => sum + store.memories.reduce((inner: number, memory: any) => inner + memory.versions.length, 0), 0);
    const expected = DASHBOARD_SHAPE.stores * DASHBOARD_SHAPE.memories * DASHBOARD_SHAPE.versions;
    if (versions !== expected) throw new Error(`Q1: memstore returned ${stores} stores, ${memories} memories, ${versions} versions; expected ${expected} versions`);
    if (endpoints.baseline) {
      const baseline = await post(endpoints.baseline, '/q1', endpoints.token, DASHBOARD_SHAPE);
      if (baseline.status !== 200 || !isDeepStrictEqual(memstore, baseline.body)) throw new Error(describeDifference('Q1', memstore, baseline.body));
    }
    return `Q1: ${stores} stores, ${memories} memories, ${versions} versions, equal field by field`;
  }
  if (name === 'Q2') {
    const ids = [memoryId(0, 0), memoryId(57, 13), memoryId(BENCH_SHAPE.stores - 1, BENCH_SHAPE.memoriesPerStore - 1)];
    for (const id of ids) {
      const memstore = (await graphql(endpoints, MEMORY_QUERY, { id })).memory;
      if (!memstore || memstore.id !== id) throw new Error(`Q2: memstore did not return memory ${id}`);
      if (endpoints.baseline) {
        const baseline = await post(endpoints.baseline, '/q2', endpoints.token, { id });
        if (baseline.status !== 200 || !isDeepStrictEqual(memstore, baseline.body)) throw new Error(describeDifference(`Q2 ${id}`, memstore, baseline.body));
      }
    }
    return `Q2: ${ids.length} memories with content, equal field by field`;
  }
  const stores = [storeId(0), storeId(101), storeId(BENCH_SHAPE.stores - 1)];
  let rows = 0;
  for (const id of stores) {
    const variables = { storeId: id, pathPrefix: SEEDED_PATH_PREFIX, first: PREFIX_PAGE };
    const memstore = prefixFromGraphql(await graphql(endpoints, PREFIX_QUERY, variables)) as any;
    rows += memstore.memories.length;
    if (memstore.memories.length < BENCH_SHAPE.memoriesPerStore) throw new Error(`Q3: memstore listed ${memstore.memories.length} memories of ${id}`);
    if (endpoints.baseline) {
      const baseline = await post(endpoints.baseline, '/q3', endpoints.token, variables);
      if (baseline.status !== 200 || !isDeepStrictEqual(memstore, baseline.body)) throw new Error(describeDifference(`Q3 ${id}`, memstore, baseline.body));
    }
  }
  return `Q3: ${stores.length} stores, ${rows} memories in path order, equal field by field`;
}

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

async function memoryState(db: Database, id: string) {
  const [row] = rowsOf(
    await db.execute(sql`
      select m.content_sha256, m.content_size_bytes, m.version_sequence, m.memory_store_id, st.total_size::bigint as total_size, st.entry_count,
             (select count(*)::int from memory_versions v where v.workspace_id = m.workspace_id and v.memory_id = m.id) as versions
      from memories m join memory_stores st on st.workspace_id = m.workspace_id and st.id = m.memory_store_id
      where m.workspace_id = ${BENCH_WORKSPACE} and m.id = ${id}`),
  );
  return row!;
}

async function newestVersion(db: Database, memory: string) {
  const [row] = rowsOf(
    await db.execute(sql`
      select operation::text as operation, sequence, content_sha256, content_size_bytes, created_by_api_key_id, path
      from memory_versions where workspace_id = ${BENCH_WORKSPACE} and memory_id = ${memory} order by sequence desc limit 1`),
  );
  return row!;
}

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

/** W1: a stale sha fails the same way on both; a current one writes one version each, with exact counters. */
async function verifyUpdate(endpoints: Endpoints & { baseline: string }, db: Database, apiKeyId: string): Promise<string> {
  const id = memoryId(BENCH_SHAPE.stores - 1, BENCH_SHAPE.memoriesPerStore - 1);
  const start = await memoryState(db, id);
  const stale = sha256Hex('stale');

  const memstoreStale = (await graphql(endpoints, UPDATE_MUTATION, { id, content: 'x', expectedContentSha256: stale })).updateMemory;
  expect(memstoreStale.__typename === 'PreconditionFailedError' && memstoreStale.currentContentSha256 === start.content_sha256, `W1: memstore answered a stale sha with ${JSON.stringify(memstoreStale)}`);
  const baselineStale = await post(endpoints.baseline, '/w1', endpoints.token, { id, content: 'x', expectedContentSha256: stale });
  expect(
    baselineStale.status === 409 && baselineStale.body.code === 'PRECONDITION_FAILED' && baselineStale.body.currentContentSha256 === start.content_sha256,
    `W1: the baseline answered a stale sha with ${baselineStale.status} ${JSON.stringify(baselineStale.body)}`,
  );
  expect((await memoryState(db, id)).versions === start.versions, 'W1: a failed precondition wrote a version');

  const contentA = `${WRITE_CONTENTS[1]}\n(verify memstore)`;
  const memstoreUpdate = (await graphql(endpoints, UPDATE_MUTATION, { id, content: contentA, expectedContentSha256: start.content_sha256 })).updateMemory;
  expect(memstoreUpdate.__typename === 'UpdateMemorySuccess' && memstoreUpdate.memory.contentSha256 === sha256Hex(contentA), `W1: memstore update failed: ${JSON.stringify(memstoreUpdate)}`);
  const afterMemstore = await memoryState(db, id);
  const versionByMemstore = await newestVersion(db, id);

  const contentB = `${WRITE_CONTENTS[2]}\n(verify baseline)`;
  const baselineUpdate = await post(endpoints.baseline, '/w1', endpoints.token, { id, content: contentB, expectedContentSha256: sha256Hex(contentA) });
  expect(baselineUpdate.status === 200 && baselineUpdate.body.contentSha256 === sha256Hex(contentB), `W1: baseline update failed: ${JSON.stringify(baselineUpdate.body)}`);
  const afterBaseline = await memoryState(db, id);
  const versionByBaseline = await newestVersion(db, id);

  const checks: [string, typeof start, typeof start, string, Record<string, any>][] = [
    ['memstore', start, afterMemstore, contentA, versionByMemstore],
    ['baseline', afterMemstore, afterBaseline, contentB, versionByBaseline],
  ];
  for (const [who, before, after, content, version] of checks) {
    const size = Buffer.byteLength(content);
    expect(after.versions === before.versions + 1 && after.version_sequence === before.version_sequence + 1, `W1 (${who}): expected exactly one new version`);
    expect(after.content_sha256 === sha256Hex(content) && after.content_size_bytes === size, `W1 (${who}): the memory does not hold the new content`);
    expect(Number(after.total_size) === Number(before.total_size) + size - before.content_size_bytes && after.entry_count === before.entry_count, `W1 (${who}): store counters are off`);
    expect(
      version.operation === 'updated' && version.sequence === after.version_sequence && version.content_sha256 === after.content_sha256 && version.created_by_api_key_id === apiKeyId,
      `W1 (${who}): the new version is not as memstore writes it: ${JSON.stringify(version)}`,
    );
  }
  return 'W1: stale sha → PRECONDITION_FAILED with the current sha on both, no version; current sha → one UPDATED version each, same columns, exact store totalSize';
}

/** W2: both create a memory and its CREATED version and raise the counters; a taken path is a conflict on both. */
async function verifyCreate(endpoints: Endpoints & { baseline: string }, db: Database, apiKeyId: string): Promise<string> {
  const store = storeId(BENCH_SHAPE.stores - 1);
  const [before] = rowsOf(await db.execute(sql`select entry_count, total_size::bigint as total_size from memory_stores where workspace_id = ${BENCH_WORKSPACE} and id = ${store}`));
  const content = WRITE_CONTENTS[3]!;
  const size = Buffer.byteLength(content);
  const memstorePath = 'verify/created-by-memstore.md';
  const baselinePath = 'verify/created-by-baseline.md';
  const memstore = (await graphql(endpoints, CREATE_MUTATION, { memoryStoreId: store, path: memstorePath, content })).createMemory;
  expect(memstore.__typename === 'CreateMemorySuccess' && memstore.memory.contentSha256 === sha256Hex(content), `W2: memstore create failed: ${JSON.stringify(memstore)}`);
  const baseline = await post(endpoints.baseline, '/w2', endpoints.token, { memoryStoreId: store, path: baselinePath, content });
  expect(baseline.status === 200 && baseline.body.contentSha256 === sha256Hex(content), `W2: baseline create failed: ${JSON.stringify(baseline.body)}`);

  const memstoreTaken = (await graphql(endpoints, CREATE_MUTATION, { memoryStoreId: store, path: baselinePath, content })).createMemory;
  expect(memstoreTaken.__typename === 'ConflictError', `W2: memstore created at a taken path: ${JSON.stringify(memstoreTaken)}`);
  const baselineTaken = await post(endpoints.baseline, '/w2', endpoints.token, { memoryStoreId: store, path: memstorePath, content });
  expect(baselineTaken.status === 409 && baselineTaken.body.code === 'CONFLICT', `W2: the baseline created at a taken path: ${baselineTaken.status}`);

  const [after] = rowsOf(await db.execute(sql`select entry_count, total_size::bigint as total_size from memory_stores where workspace_id = ${BENCH_WORKSPACE} and id = ${store}`));
  expect(after!.entry_count === before!.entry_count + 2 && Number(after!.total_size) === Number(before!.total_size) + 2 * size, 'W2: store counters are off');
  const created = rowsOf(
    await db.execute(sql`
      select m.path, m.version_sequence, v.operation::text as operation, v.sequence, v.content_sha256, v.created_by_api_key_id
      from memories m join memory_versions v on v.workspace_id = m.workspace_id and v.memory_id = m.id
      where m.workspace_id = ${BENCH_WORKSPACE} and m.memory_store_id = ${store} and m.path in (${memstorePath}, ${baselinePath})
      order by m.path`),
  );
  expect(created.length === 2, `W2: expected one version per created memory, found ${created.length} rows`);
  for (const row of created) {
    expect(
      row.version_sequence === 1 && row.operation === 'created' && row.sequence === 1 && row.content_sha256 === sha256Hex(content) && row.created_by_api_key_id === apiKeyId,
      `W2: ${row.path} is not as memstore writes it: ${JSON.stringify(row)}`,
    );
  }
  return 'W2: one memory + one CREATED version each, same columns, entryCount/totalSize raised exactly; a taken path → CONFLICT on both';
}

/** Checks one workload; throws with the difference when memstore and the baseline disagree. */
export async function verifyWorkload(name: WorkloadName, endpoints: Endpoints, db: Database | null, apiKeyId: string): Promise<string> {
  if (name === 'R2') return verifyRestRead(endpoints);
  if (name === 'Q1' || name === 'Q2' || name === 'Q3') return verifyRead(name, endpoints);
  if (name === 'S1' || name === 'E1') return verifyBrowse(name, endpoints);
  if (!endpoints.baseline || !db) return `${name}: checked on PostgreSQL only`;
  const line = name === 'W1' ? await verifyUpdate({ ...endpoints, baseline: endpoints.baseline }, db, apiKeyId) : await verifyCreate({ ...endpoints, baseline: endpoints.baseline }, db, apiKeyId);
  const problems = await benchInvariantViolations(db);
  if (problems.length > 0) throw new Error(`${name}: invariants broken after the checks:\n${problems.join('\n')}`);
  return line;
}
