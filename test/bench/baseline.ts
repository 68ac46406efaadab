/**
 * The benchmark's baseline: a minimal node:http server that answers the benchmark's
 * logical requests with hand-written SQL through postgres.js — reads in ONE statement
 * that authenticates the token and builds the whole JSON answer in the database; writes
 * in one transaction doing what memstore's write does (authenticate, lock the store row,
 * check the expected sha, update or insert the memory, insert the version and the event
 * that API.md §9 has every write record in its own transaction, adjust the store's
 * counters) in two statements. (Folder rollups are kept by a trigger, for both servers.)
 *
 *   POST /q1 {}                       the dashboard: 20 newest stores × 20 memories by path × 5 newest versions
 *   POST /q2 {"id"}                   one memory with its content
 *   POST /q3 {"storeId","pathPrefix","first"}  a store's memories under a path prefix, by path
 *   POST /s1 {"query","first"}        search: the best hits with their snippets (memstore's snippet function)
 *   POST /e1 {"storeId","folder","first"}      a folder level: folders, then memories, by name
 *   POST /w1 {"id","content","expectedContentSha256"}  updateMemory
 *   POST /w2 {"memoryStoreId","path","content"}        createMemory
 *
 * Environment: DATABASE_URL, PORT (0: any), HOST (127.0.0.1), POOL_SIZE (10; memstore's default MEMSTORE_DB_POOL_SIZE is 20, and the bench leaves both at their defaults).
 * Logs one JSON line `{"msg":"listening","url":…}` when ready.
 */
import { createHash, randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import postgres from 'postgres';
// The snippet of a hit, as memstore cuts it: the same words, the same text (a pure function).
import { SearchedWords, snippetOf } from '../../src/domain/search.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('DATABASE_URL is required\n');
  process.exit(1);
}
const sql = postgres(databaseUrl, { max: Number(process.env.POOL_SIZE ?? 10), onnotice: () => {} });

/** RFC 3339 UTC with milliseconds, as memstore's DateTime prints it. */
const iso = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const TOKEN_PATTERN = /^msk_[A-Za-z0-9]{40}$/;
const BEARER = /^Bearer\s+(\S+)\s*$/i;

function tokenSha256(request: IncomingMessage): string | null {
  const match = BEARER.exec(request.headers.authorization ?? '');
  if (!match || !TOKEN_PATTERN.test(match[1]!)) return null;
  return createHash('sha256').update(match[1]!).digest('hex');
}

function newId(prefix: string, nowMs: number): string {
  let random = '';
  for (let index = 0; index < 10; index += 1) random += randomInt(36).toString(36);
  return prefix + nowMs.toString(36).padStart(10, '0') + random;
}

function prefixUpperBound(prefix: string): string | null {
  // The smallest string above every string starting with the prefix (code-point order).
  const codePoints = [...prefix];
  while (codePoints.length > 0) {
    const last = codePoints.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      let next = last + 1;
      if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
      return codePoints.join('') + String.fromCodePoint(next);
    }
  }
  return null;
}

const AUTH = `k as (select workspace_id, id from api_keys where token_sha256 = $1 and revoked_at is null)`;

const Q1 = `
with ${AUTH}
select (select count(*) from k) as authenticated, (
  select coalesce(json_agg(json_build_object(
           'id', s.id, 'name', s.name, 'entryCount', s.entry_count, 'totalSize', s.total_size, 'memories', ms.list)
         order by s.created_at desc, s.id desc), '[]')
  from (select * from memory_stores where workspace_id = (select workspace_id from k)
        order by created_at desc, id desc limit $2) s
  cross join lateral (
    select coalesce(json_agg(json_build_object(
             'id', m.id, 'path', m.path, 'contentSizeBytes', m.content_size_bytes, 'contentSha256', m.content_sha256,
             'updatedAt', ${iso('m.updated_at')}, 'versions', vs.list) order by m.path), '[]') as list
    from (select id, path, content_size_bytes, content_sha256, updated_at from memories
          where workspace_id = s.workspace_id and memory_store_id = s.id order by path limit $3) m
    cross join lateral (
      select coalesce(json_agg(json_build_object(
               'id', v.id, 'operation', upper(v.operation::text), 'contentSizeBytes', v.content_size_bytes,
               'createdAt', ${iso('v.created_at')}) order by v.sequence desc), '[]') as list
      from (select id, operation, content_size_bytes, created_at, sequence from memory_versions
            where workspace_id = s.workspace_id and memory_id = m.id order by sequence desc limit $4) v
    ) vs
  ) ms
)::text as body`;

const Q2 = `
with ${AUTH}
select (select count(*) from k) as authenticated, (
  select json_build_object('id', id, 'memoryStoreId', memory_store_id, 'path', path, 'content', content,
           'contentSizeBytes', content_size_bytes, 'contentSha256', content_sha256, 'metadata', metadata,
           'updatedAt', ${iso('updated_at')})
  from memories where workspace_id = (select workspace_id from k) and id = $2
)::text as body`;

const Q3 = `
with ${AUTH}
select (select count(*) from k) as authenticated, (
  select json_build_object('id', s.id, 'entryCount', s.entry_count, 'memories', (
           select coalesce(json_agg(json_build_object(
                    'id', m.id, 'path', m.path, 'contentSizeBytes', m.content_size_bytes, 'contentSha256', m.content_sha256,
                    'updatedAt', ${iso('m.updated_at')}) order by m.path), '[]')
           from (select id, path, content_size_bytes, content_sha256, updated_at from memories
                 where workspace_id = s.workspace_id and memory_store_id = s.id and path >= $3 and ($4::text is null or path < $4)
                 order by path limit $5) m))
  from memory_stores s where s.workspace_id = (select workspace_id from k) and s.id = $2
)::text as body`;

/**
 * S1: the ranked hits' page (one more than asked, to know whether more follow) with their
 * content, and the searched words (as memstore reads them, from querytree).
 */
const S1 = `
with ${AUTH}, q as (select websearch_to_tsquery('simple'::regconfig, $2::text) as query)
select (select count(*) from k) as authenticated, querytree((select query from q)) as tree, (
  select coalesce(json_agg(json_build_object('id', h.id, 'path', h.path, 'score', h.score, 'content', h.content)
                  order by h.score desc, h.path, h.id), '[]')
  from (select m.id, m.path, m.content, ts_rank_cd(m.search_vector, q.query)::float8 as score
        from memories m, q
        where m.workspace_id = (select workspace_id from k) and m.search_vector @@ q.query
        order by score desc, m.path, m.id limit $3) h
)::text as body`;

/** E1: a folder level, folders first then memories, each by name in byte order, one more than asked. */
const E1 = `
with ${AUTH}
select (select count(*) from k) as authenticated,
  (select count(*) from memory_stores where workspace_id = (select workspace_id from k) and id = $2) as found, (
  select coalesce(json_agg(e.node order by e.slot, e.name collate "C"), '[]')
  from (select * from (
          (select 0 as slot, f.name, json_build_object('__typename', 'MemoryFolder', 'path', f.path, 'name', f.name, 'memoryCount', f.memory_count,
                    'totalSize', f.total_size, 'updatedAt', ${iso('f.updated_at')}) as node
           from memory_folders f where f.workspace_id = (select workspace_id from k) and f.memory_store_id = $2 and f.parent = $3
           order by f.name limit $4)
          union all
          (select 1, m.path, json_build_object('__typename', 'Memory', 'id', m.id, 'path', m.path, 'contentSizeBytes', m.content_size_bytes,
                    'updatedAt', ${iso('m.updated_at')})
           from memories m where m.workspace_id = (select workspace_id from k) and m.memory_store_id = $2 and m.folder = $3
           order by m.path limit $4)) both_slots
        order by slot, name collate "C" limit $4) e
)::text as body`;

/** W1, under the locks: authenticates, locks the memory's store row and the memory row, reads the memory. */
const W1_LOCK = `
with ${AUTH}
select k.id as api_key_id, k.workspace_id, st.status, m.memory_store_id, m.content_sha256, m.content_size_bytes
from k
join memories m on m.workspace_id = k.workspace_id and m.id = $2
join memory_stores st on st.workspace_id = m.workspace_id and st.id = m.memory_store_id
for update of st, m`;

/** W1's write: the memory, its UPDATED version (copied from the updated row), its event (the live updates' outbox) and the store's size. */
const W1_WRITE = `
with updated as (
  update memories set content = $3, content_size_bytes = $4, content_sha256 = $5, version_sequence = version_sequence + 1,
                      updated_at = greatest($6::timestamptz, updated_at)
  where workspace_id = $1 and id = $2
  returning *
), version as (
  insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256,
                               operation, sequence, created_by_api_key_id, created_at)
  select workspace_id, $7, memory_store_id, id, path, content, content_size_bytes, content_sha256, 'updated', version_sequence, $8, updated_at
  from updated
), event as (
  insert into memory_events (workspace_id, kind, memory_store_id, memory_id, memory_version_id, path, occurred_at)
  select workspace_id, 'memory_updated', memory_store_id, id, $7, path, updated_at from updated
), store as (
  update memory_stores set total_size = total_size + $9 where workspace_id = $1 and id = (select memory_store_id from updated)
)
select json_build_object('id', id, 'contentSha256', content_sha256, 'contentSizeBytes', content_size_bytes,
                         'updatedAt', ${iso('updated_at')})::text as body
from updated`;

/** W2, under the lock: authenticates and locks the store row. */
const W2_LOCK = `
with ${AUTH}
select k.id as api_key_id, k.workspace_id, st.status
from k join memory_stores st on st.workspace_id = k.workspace_id and st.id = $2
for update of st`;

/** W2's write: the memory (unless its path is taken), its CREATED version, its event and the store's counters. */
const W2_WRITE = `
with created as (
  insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata,
                        version_sequence, created_at, updated_at)
  values ($1, $2, $3, $4, $5, $6, $7, '{}'::jsonb, 1, $8, $8)
  on conflict (workspace_id, memory_store_id, path) do nothing
  returning *
), version as (
  insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256,
                               operation, sequence, created_by_api_key_id, created_at)
  select workspace_id, $9, memory_store_id, id, path, content, content_size_bytes, content_sha256, 'created', 1, $10, created_at
  from created
), event as (
  insert into memory_events (workspace_id, kind, memory_store_id, memory_id, memory_version_id, path, occurred_at)
  select workspace_id, 'memory_created', memory_store_id, id, $9, path, created_at from created
), store as (
  update memory_stores set entry_count = entry_count + 1, total_size = total_size + $6
  where workspace_id = $1 and id = $3 and exists (select 1 from created)
)
select json_build_object('id', id, 'memoryStoreId', memory_store_id, 'path', path, 'contentSha256', content_sha256,
                         'contentSizeBytes', content_size_bytes, 'createdAt', ${iso('created_at')})::text as body
from created`;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.code));
  }
}

const unauthenticated = () => new HttpError(401, { code: 'UNAUTHENTICATED' });

async function read(query: string, params: postgres.ParameterOrJSON<never>[]): Promise<string> {
  const [row] = await sql.unsafe(query, params, { prepare: true });
  if (Number(row!.authenticated) === 0) throw unauthenticated();
  if (row!.body === null) throw new HttpError(404, { code: 'NOT_FOUND' });
  return row!.body as string;
}

type Handler = (token: string, input: Record<string, unknown>) => Promise<string>;

const handlers: Record<string, Handler> = {
  '/q1': (token, input) => read(Q1, [token, Number(input.stores ?? 20), Number(input.memories ?? 20), Number(input.versions ?? 5)]),
  '/q2': (token, input) => read(Q2, [token, String(input.id)]),
  '/q3': (token, input) => {
    const prefix = String(input.pathPrefix ?? '');
    return read(Q3, [token, String(input.storeId), prefix, prefixUpperBound(prefix), Number(input.first ?? 20)]);
  },
  '/s1': async (token, input) => {
    const first = Number(input.first ?? 20);
    const [row] = await sql.unsafe(S1, [token, String(input.query), first + 1], { prepare: true });
    if (Number(row!.authenticated) === 0) throw unauthenticated();
    // The words a hit must contain, as memstore reads them (domain/search.ts).
    const words = new SearchedWords([...String(row!.tree).matchAll(/'((?:[^']|'')*)'/g)].map((match) => match[1]!.replaceAll("''", "'")));
    const hits = JSON.parse(row!.body as string) as { id: string; path: string; score: number; content: string }[];
    const edges = hits.slice(0, first).map((hit) => ({ score: hit.score, snippet: snippetOf(hit.content, words), node: { id: hit.id, path: hit.path } }));
    return JSON.stringify({ edges, pageInfo: { hasNextPage: hits.length > first } });
  },
  '/e1': async (token, input) => {
    const first = Number(input.first ?? 20);
    const [row] = await sql.unsafe(E1, [token, String(input.storeId), String(input.folder), first + 1], { prepare: true });
    if (Number(row!.authenticated) === 0) throw unauthenticated();
    if (Number(row!.found) === 0) throw new HttpError(404, { code: 'NOT_FOUND' });
    const entries = JSON.parse(row!.body as string) as unknown[];
    return JSON.stringify({ edges: entries.slice(0, first).map((node) => ({ node })), pageInfo: { hasNextPage: entries.length > first } });
  },
  '/w1': async (token, input) => {
    const content = String(input.content);
    const expected = typeof input.expectedContentSha256 === 'string' ? input.expectedContentSha256.toLowerCase() : undefined;
    const contentSha256 = createHash('sha256').update(content, 'utf8').digest('hex');
    const size = Buffer.byteLength(content, 'utf8');
    return sql.begin(async (tx) => {
      const [current] = await tx.unsafe(W1_LOCK, [token, String(input.id)], { prepare: true });
      if (!current) {
        const [known] = await tx.unsafe(`select 1 from api_keys where token_sha256 = $1 and revoked_at is null`, [token], { prepare: true });
        throw known ? new HttpError(404, { code: 'NOT_FOUND' }) : unauthenticated();
      }
      if (current.status === 'archived') throw new HttpError(409, { code: 'CONFLICT' });
      if (current.content_sha256 === contentSha256) return JSON.stringify({ id: input.id, contentSha256, contentSizeBytes: size, unchanged: true });
      if (expected !== undefined && expected !== current.content_sha256) {
        throw new HttpError(409, { code: 'PRECONDITION_FAILED', currentContentSha256: current.content_sha256 });
      }
      const now = new Date();
      const [row] = await tx.unsafe(
        W1_WRITE,
        [current.workspace_id, String(input.id), content, size, contentSha256, now.toISOString(), newId('memver_', now.getTime()), current.api_key_id, size - Number(current.content_size_bytes)],
        { prepare: true },
      );
      return row!.body as string;
    });
  },
  '/w2': async (token, input) => {
    const content = String(input.content);
    const contentSha256 = createHash('sha256').update(content, 'utf8').digest('hex');
    const size = Buffer.byteLength(content, 'utf8');
    return sql.begin(async (tx) => {
      const [store] = await tx.unsafe(W2_LOCK, [token, String(input.memoryStoreId)], { prepare: true });
      if (!store) {
        const [known] = await tx.unsafe(`select 1 from api_keys where token_sha256 = $1 and revoked_at is null`, [token], { prepare: true });
        throw known ? new HttpError(404, { code: 'NOT_FOUND' }) : unauthenticated();
      }
      if (store.status === 'archived') throw new HttpError(409, { code: 'CONFLICT' });
      const now = new Date();
      const [row] = await tx.unsafe(
        W2_WRITE,
        [store.workspace_id, newId('mem_', now.getTime()), String(input.memoryStoreId), String(input.path), content, size, contentSha256, now.toISOString(), newId('memver_', now.getTime()), store.api_key_id],
        { prepare: true },
      );
      if (!row) throw new HttpError(409, { code: 'CONFLICT' });
      return row.body as string;
    });
  },
};

function send(response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  response.end(body);
}

const server = createServer((request, response) => {
  const handler = request.method === 'POST' ? handlers[request.url ?? ''] : undefined;
  if (!handler) {
    send(response, request.url === '/healthz' ? 200 : 404, '{}');
    return;
  }
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const token = tokenSha256(request);
    if (!token) {
      send(response, 401, '{"code":"UNAUTHENTICATED"}');
      return;
    }
    let input: Record<string, unknown>;
    try {
      input = chunks.length === 0 ? {} : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
    } catch {
      send(response, 400, '{"code":"INVALID_REQUEST"}');
      return;
    }
    handler(token, input).then(
      (body) => send(response, 200, body),
      (error: unknown) => {
        if (error instanceof HttpError) send(response, error.status, JSON.stringify(error.body));
        else {
          process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
          send(response, 500, '{"code":"INTERNAL_SERVER_ERROR"}');
        }
      },
    );
  });
});

const shutdown = () => {
  server.close(() => {
    void sql.end({ timeout: 5 }).then(() => process.exit(0));
  });
  server.closeIdleConnections();
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

const host = process.env.HOST ?? '127.0.0.1';
server.listen(Number(process.env.PORT ?? 0), host, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ msg: 'listening', url: `http://${host}:${port}` })}\n`);
});
