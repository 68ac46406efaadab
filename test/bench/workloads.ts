/**
 * The benchmark's workloads: each one is a GraphQL request to memstore and the same
 * logical request to the baseline (test/bench/baseline.ts), made by one generator so that
 * both servers get the same sequence of ids, stores and contents.
 */
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';
import { BENCH_SHAPE, BENCH_WORKSPACE, memoryId, SEEDED_PATH_PREFIX, storeId } from './seed.js';

export type TargetKind = 'memstore' | 'baseline';
export const WORKLOAD_NAMES = ['Q1', 'Q2', 'R2', 'Q3', 'S1', 'E1', 'W1', 'W2'] as const;
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

export interface RequestSpec {
  /** POST unless told (the Forward REST reads are GETs without a body). */
  method?: 'GET' | 'POST';
  path: string;
  body: string | undefined;
  /** Headers besides the content type and the key's. */
  headers?: Record<string, string>;
  /** Judges the response (and learns from it: writes track each memory's current sha). True when it is the expected success. */
  done(status: number, body: string): boolean;
}

export interface Workload {
  name: WorkloadName;
  title: string;
  write: boolean;
  /** The next request for a server kind; `tag` keeps the paths of separate runs apart. */
  next(kind: TargetKind): RequestSpec;
  /** Starts a new run (W2: fresh unique paths). */
  startRun(tag: string): void;
}

export const GRAPHQL_PATH = '/graphql';

const gql = (query: string, variables: Record<string, unknown>) => JSON.stringify({ query, variables });
const json = (value: unknown) => JSON.stringify(value);

/** A memstore read succeeded: 200 and no top-level errors. */
const memstoreReadOk = (status: number, body: string) => status === 200 && !body.includes('"errors"');
const baselineOk = (status: number) => status === 200;

// ---------------------------------------------------------------------------------------
// Documents

export const DASHBOARD_QUERY = /* GraphQL */ `
  query BenchDashboard($stores: Int!, $memories: Int!, $versions: Int!) {
    memoryStores(first: $stores) {
      edges {
        node {
          id
          name
          entryCount
          totalSize
          memories(first: $memories) {
            edges {
              node {
                id
                path
                contentSizeBytes
                contentSha256
                updatedAt
                versions(first: $versions) {
                  edges { node { id operation contentSizeBytes createdAt } }
                }
              }
            }
          }
        }
      }
    }
  }
`;

export const MEMORY_QUERY = /* GraphQL */ `
  query BenchMemory($id: ID!) {
    memory(id: $id) { id memoryStoreId path content contentSizeBytes contentSha256 metadata updatedAt }
  }
`;

export const PREFIX_QUERY = /* GraphQL */ `
  query BenchPrefix($storeId: ID!, $pathPrefix: String!, $first: Int!) {
    memoryStore(id: $storeId) {
      id
      entryCount
      memories(first: $first, pathPrefix: $pathPrefix) {
        edges { node { id path contentSizeBytes contentSha256 updatedAt } }
      }
    }
  }
`;

export const SEARCH_QUERY = /* GraphQL */ `
  query BenchSearch($query: String!, $first: Int!) {
    searchMemories(query: $query, first: $first) {
      edges { score snippet { text matches { start end } } node { id path } }
      pageInfo { hasNextPage }
    }
  }
`;

export const ENTRIES_QUERY = /* GraphQL */ `
  query BenchEntries($storeId: ID!, $folder: String!, $first: Int!) {
    memoryStore(id: $storeId) {
      entries(folder: $folder, first: $first) {
        edges {
          node {
            __typename
            ... on MemoryFolder { path name memoryCount totalSize updatedAt }
            ... on Memory { id path contentSizeBytes updatedAt }
          }
        }
        pageInfo { hasNextPage }
      }
    }
  }
`;

export const UPDATE_MUTATION = /* GraphQL */ `
  mutation BenchUpdate($id: ID!, $content: String!, $expectedContentSha256: String!) {
    updateMemory(input: { id: $id, content: $content, expectedContentSha256: $expectedContentSha256 }) {
      __typename
      ... on UpdateMemorySuccess { memory { id contentSha256 contentSizeBytes updatedAt } }
      ... on PreconditionFailedError { currentContentSha256 }
      ... on Error { code message }
    }
  }
`;

export const CREATE_MUTATION = /* GraphQL */ `
  mutation BenchCreate($memoryStoreId: ID!, $path: String!, $content: String!) {
    createMemory(input: { memoryStoreId: $memoryStoreId, path: $path, content: $content }) {
      __typename
      ... on CreateMemorySuccess { memory { id memoryStoreId path contentSha256 contentSizeBytes createdAt } }
      ... on Error { code message }
    }
  }
`;

export const DASHBOARD_SHAPE = { stores: 20, memories: 20, versions: 5 } as const;
export const SEARCH_PAGE = 10;
export const ENTRIES_PAGE = 20;

/**
 * S1's k-th search: two words of the seeded paths (`notes/topic-<t>/<nnn>.md`), "topic" and
 * a memory's number, which 200 memories match (that number in every store).
 */
export const searchWords = (k: number) => `topic ${String(k % BENCH_SHAPE.memoriesPerStore).padStart(3, '0')}`;

/** E1's k-th folder: the seeded top folder (its five topic folders) or one topic folder (its memories). */
export const entriesFolder = (k: number) => (k % 6 === 0 ? SEEDED_PATH_PREFIX : `${SEEDED_PATH_PREFIX}topic-${k % 6 - 1}/`);
export const PREFIX_PAGE = 100;

// ---------------------------------------------------------------------------------------
// Contents written by W1 and W2: deterministic pseudo-random text of 1–4 KiB

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WRITE_WORDS = 'agent decided to keep the notes short because the customer asked for a weekly summary of every incident and its rollback plan with owners and dates'.split(' ');

/** 64 texts of 1–4 KiB (ASCII, so bytes = characters), the same on every run. */
export const WRITE_CONTENTS: readonly string[] = (() => {
  const random = mulberry32(7);
  const contents: string[] = [];
  for (let index = 0; index < 64; index += 1) {
    const target = 1024 + Math.floor(random() * 3000);
    let text = '';
    while (text.length < target) text += `${WRITE_WORDS[Math.floor(random() * WRITE_WORDS.length)]}${random() < 0.08 ? '\n' : ' '}`;
    contents.push(text.slice(0, target));
  }
  return contents;
})();

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

// ---------------------------------------------------------------------------------------
// Workloads

const { stores: STORES, memoriesPerStore: MEMORIES_PER_STORE } = BENCH_SHAPE;

/** The k-th memory of a rotation that visits every store before coming back to one. */
const rotatingMemory = (k: number) => memoryId(k % STORES, Math.floor(k / STORES) % MEMORIES_PER_STORE);

function dashboard(): Workload {
  const memstoreBody = DASHBOARD_BODY;
  const baselineBody = json(DASHBOARD_SHAPE);
  return {
    name: 'Q1',
    title: `dashboard: memoryStores(first:${DASHBOARD_SHAPE.stores}) × memories(first:${DASHBOARD_SHAPE.memories}) × versions(first:${DASHBOARD_SHAPE.versions})`,
    write: false,
    startRun: () => {},
    next: (kind) =>
      kind === 'memstore'
        ? { path: GRAPHQL_PATH, body: memstoreBody, done: memstoreReadOk }
        : { path: '/q1', body: baselineBody, done: baselineOk },
  };
}

/** The dashboard's request as memstore gets it (Q1), for the conditional poll. */
export const DASHBOARD_BODY = gql(DASHBOARD_QUERY, DASHBOARD_SHAPE);

/**
 * Q1 polled while nothing changes: memstore only, each request naming the answer's ETag in
 * If-None-Match, and expecting 304 (README: "Polling without cost").
 */
export function polledDashboard(tag: string): Workload {
  return {
    name: 'Q1',
    title: 'Q1 polled unchanged: If-None-Match with the answer\'s ETag, 304 expected',
    write: false,
    startRun: () => {},
    next: () => ({ path: GRAPHQL_PATH, body: DASHBOARD_BODY, headers: { 'if-none-match': tag }, done: (status) => status === 304 }),
  };
}

/**
 * A read whose k-th request asks memstore (a GraphQL query) and the baseline (one of its
 * paths) the same thing, with the same variables.
 */
function rotatingRead(name: WorkloadName, title: string, query: string, baselinePath: string, variablesOf: (k: number) => Record<string, unknown>): Workload {
  let k = 0;
  return {
    name,
    title,
    write: false,
    startRun: () => {
      k = 0;
    },
    next: (kind) => {
      const variables = variablesOf(k++);
      return kind === 'memstore'
        ? { path: GRAPHQL_PATH, body: gql(query, variables), done: memstoreReadOk }
        : { path: baselinePath, body: json(variables), done: baselineOk };
    },
  };
}

const memoryById = () => rotatingRead('Q2', 'memory(id:) with content, ids rotating over all 10,000 memories', MEMORY_QUERY, '/q2', (k) => ({ id: rotatingMemory(k) }));

/** The Forward REST API's path of one memory (route 9, as the SDKs send it). */
export const restMemoryPath = (store: string, id: string) => `/api/v1/forward/memory_stores/${encodeURIComponent(store)}/memories/${encodeURIComponent(id)}`;

/** Q2 over the Forward REST API: the same memories in the same rotation, against the baseline's same statement. */
function memoryByIdOverRest(): Workload {
  let k = 0;
  return {
    name: 'R2',
    title: 'GET /api/v1/forward/memory_stores/{id}/memories/{id} (Q2 over the Forward REST API), ids rotating over all 10,000 memories',
    write: false,
    startRun: () => {
      k = 0;
    },
    next: (kind) => {
      const n = k++;
      const id = rotatingMemory(n);
      return kind === 'memstore'
        ? { method: 'GET', path: restMemoryPath(storeId(n % STORES), id), body: undefined, done: (status, body) => status === 200 && body.startsWith('{"id":"mem_') }
        : { path: '/q2', body: json({ id }), done: baselineOk };
    },
  };
}

const memoriesByPrefix = () =>
  rotatingRead('Q3', `memoryStore(id:).memories(first:${PREFIX_PAGE}, pathPrefix:"${SEEDED_PATH_PREFIX}"), stores rotating`, PREFIX_QUERY, '/q3', (k) => ({
    storeId: storeId(k % STORES),
    pathPrefix: SEEDED_PATH_PREFIX,
    first: PREFIX_PAGE,
  }));

const search = () =>
  rotatingRead('S1', `searchMemories(query: "topic <nnn>", first: ${SEARCH_PAGE}): two words, 200 hits ranked, the first ${SEARCH_PAGE} with snippets`, SEARCH_QUERY, '/s1', (k) => ({
    query: searchWords(k),
    first: SEARCH_PAGE,
  }));

const folderListing = () =>
  rotatingRead(
    'E1',
    `memoryStore(id:).entries(folder:, first: ${ENTRIES_PAGE}): a folder level (the top folder's 5 folders, or a topic folder's 10 memories), stores rotating`,
    ENTRIES_QUERY,
    '/e1',
    (k) => ({ storeId: storeId(k % STORES), folder: entriesFolder(k), first: ENTRIES_PAGE }),
  );

/** The current sha of every memory W1 updates, as last seen (kept current by the responses). */
export class ShaTracker {
  readonly shas = new Map<string, string>();

  async load(db: Database): Promise<void> {
    const result = await db.execute(sql`select id, content_sha256 from memories where workspace_id = ${BENCH_WORKSPACE} and left(id, 9) = 'mem_bench'`);
    const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as { id: string; content_sha256: string }[];
    this.shas.clear();
    for (const row of rows) this.shas.set(row.id, row.content_sha256);
  }
}

interface UpdateResponse {
  data?: { updateMemory?: { __typename: string; memory?: { contentSha256: string }; currentContentSha256?: string } };
}

function updateMemory(tracker: ShaTracker): Workload {
  let k = 0;
  let tag = '';
  return {
    name: 'W1',
    title: 'updateMemory(content, expectedContentSha256): a new 1–4 KiB content, writes rotating over all stores',
    write: true,
    startRun: (runTag) => {
      tag = runTag;
    },
    next: (kind) => {
      const n = k++;
      const id = rotatingMemory(n);
      const expectedContentSha256 = tracker.shas.get(id) ?? '0'.repeat(64);
      const content = `${WRITE_CONTENTS[n % WRITE_CONTENTS.length]}\n(${tag} #${n})`;
      const contentSha256 = sha256Hex(content);
      if (kind === 'memstore') {
        return {
          path: GRAPHQL_PATH,
          body: gql(UPDATE_MUTATION, { id, content, expectedContentSha256 }),
          done: (status, body) => {
            if (status !== 200) return false;
            const result = (JSON.parse(body) as UpdateResponse).data?.updateMemory;
            if (result?.__typename === 'UpdateMemorySuccess') {
              tracker.shas.set(id, result.memory!.contentSha256);
              return true;
            }
            if (result?.currentContentSha256) tracker.shas.set(id, result.currentContentSha256);
            return false;
          },
        };
      }
      return {
        path: '/w1',
        body: json({ id, content, expectedContentSha256 }),
        done: (status, body) => {
          if (status === 200) {
            tracker.shas.set(id, contentSha256);
            return true;
          }
          if (status === 409) {
            const current = (JSON.parse(body) as { currentContentSha256?: string }).currentContentSha256;
            if (current) tracker.shas.set(id, current);
          }
          return false;
        },
      };
    },
  };
}

function createMemory(): Workload {
  let k = 0;
  let tag = 'run';
  return {
    name: 'W2',
    title: 'createMemory: a 1–4 KiB memory at a new path, stores rotating',
    write: true,
    startRun: (runTag) => {
      tag = runTag;
      k = 0;
    },
    next: (kind) => {
      const n = k++;
      const variables = {
        memoryStoreId: storeId(n % STORES),
        path: `created/${tag}/${String(n).padStart(7, '0')}.md`,
        content: WRITE_CONTENTS[n % WRITE_CONTENTS.length]!,
      };
      return kind === 'memstore'
        ? {
            path: GRAPHQL_PATH,
            body: gql(CREATE_MUTATION, variables),
            done: (status, body) => status === 200 && body.includes('"__typename":"CreateMemorySuccess"'),
          }
        : { path: '/w2', body: json(variables), done: baselineOk };
    },
  };
}

export function createWorkloads(tracker: ShaTracker): Record<WorkloadName, Workload> {
  return { Q1: dashboard(), Q2: memoryById(), R2: memoryByIdOverRest(), Q3: memoriesByPrefix(), S1: search(), E1: folderListing(), W1: updateMemory(tracker), W2: createMemory() };
}
