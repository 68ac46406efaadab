/**
 * Soak test on PostgreSQL: a fresh scratch database next to DATABASE_URL's, the server as a
 * separate process on it (`node <memstore's flags> --import tsx src/server.ts`, as `npm start` runs it), and
 * many concurrent HTTP clients doing a realistic mix of reads and writes for a while. It
 * samples the server's RSS every second, stops the server with SIGTERM, then checks the
 * API.md §6 invariants of every workspace directly in the database, and that every
 * acknowledged write left exactly one version (no lost or phantom update).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run soak -- [options]
 *
 *   --clients N        concurrent clients (64), each with its own ADMIN key
 *   --seconds N        length of the load (60), of which the first --warmup (5) are warm-up;
 *                      RSS is sampled --cooldown (5) more seconds without load before the stop
 *   --workspaces N     workspaces the clients are spread over (4)
 *   --client-rate N    requests per second a client sends at most (20)
 *   --rate-limit N     MEMSTORE_RATE_LIMIT_PER_SECOND for the server, per key (50; 0 disables)
 *   --rate-burst N     MEMSTORE_RATE_LIMIT_BURST for the server (100)
 *   --no-greedy        no greedy client (by default one extra client with its own key sends
 *                      --greedy-rate, default 4 × --rate-limit, requests per second and
 *                      is expected to see HTTP 429 RATE_LIMITED)
 *   --log-level L      the server's LOG_LEVEL (info: one line per request, as in production)
 *   --server-heap-mib N  start the server with --max-old-space-size=N: tells a leak (the server
 *                      dies) from a heap that merely grows because it may (RSS levels off)
 *   --keep             keep the scratch database and the server log
 *   --out FILE         also write the summary as JSON
 *
 * Exits 1 on any failure that is not a deliberate rate limit (network errors, 5xx, top-level
 * GraphQL errors, unexpected shapes or error codes, 429 for an ordinary client), on any
 * invariant violation or version-accounting mismatch, or when the server does not stop
 * cleanly; 2 on bad usage.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomInt as secureRandomInt } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/client.js';
import { NODE_FLAGS } from '../../src/node-flags.js';
import { createScratchPostgresDatabase } from '../support/database.js';
import { invariantViolations } from '../support/invariants.js';
import { percentile } from '../support/percentile.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// ---------------------------------------------------------------------------------------
// Options

function usageError(message: string): never {
  console.error(`soak: ${message}\nSee the header of test/scripts/soak.ts for the options.`);
  process.exit(2);
}

const { values: flags } = (() => {
  try {
    return parseArgs({
      options: {
        clients: { type: 'string', default: '64' },
        seconds: { type: 'string', default: '60' },
        warmup: { type: 'string', default: '5' },
        workspaces: { type: 'string', default: '4' },
        'client-rate': { type: 'string', default: '20' },
        'rate-limit': { type: 'string', default: '50' },
        'rate-burst': { type: 'string', default: '100' },
        greedy: { type: 'boolean', default: true },
        'no-greedy': { type: 'boolean', default: false },
        'greedy-rate': { type: 'string' },
        'log-level': { type: 'string', default: 'info' },
        cooldown: { type: 'string', default: '5' },
        'server-heap-mib': { type: 'string' },
        keep: { type: 'boolean', default: false },
        out: { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (error) {
    return usageError((error as Error).message);
  }
})();

function wholeNumber(name: string, value: string | undefined, minimum: number): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < minimum) usageError(`--${name} must be a whole number ≥ ${minimum}, not "${value}"`);
  return number;
}

const options = {
  clients: wholeNumber('clients', flags.clients, 1),
  seconds: wholeNumber('seconds', flags.seconds, 1),
  warmupSeconds: wholeNumber('warmup', flags.warmup, 0),
  cooldownSeconds: wholeNumber('cooldown', flags.cooldown, 0),
  workspaces: wholeNumber('workspaces', flags.workspaces, 1),
  clientRate: wholeNumber('client-rate', flags['client-rate'], 1),
  rateLimit: wholeNumber('rate-limit', flags['rate-limit'], 0),
  rateBurst: wholeNumber('rate-burst', flags['rate-burst'], 1),
  greedy: flags.greedy === true && flags['no-greedy'] !== true,
  greedyRate: 0,
  serverLogLevel: flags['log-level'] ?? 'info',
  serverHeapMiB: flags['server-heap-mib'] === undefined ? undefined : wholeNumber('server-heap-mib', flags['server-heap-mib'], 16),
  keep: flags.keep === true,
  out: flags.out,
};
options.greedyRate = wholeNumber('greedy-rate', flags['greedy-rate'] ?? String(Math.max(4 * options.rateLimit, 200)), 1);
options.warmupSeconds = Math.min(options.warmupSeconds, Math.max(0, options.seconds - 1));
if (options.rateLimit > 0 && options.clientRate * 2 > options.rateLimit) {
  usageError(`--client-rate ${options.clientRate} leaves too little headroom under --rate-limit ${options.rateLimit}: keep it at most half`);
}

let databaseUrl: string | undefined;
try {
  databaseUrl = loadConfig().databaseUrl;
} catch (error) {
  if (error instanceof ConfigError) usageError(error.message);
  throw error;
}
if (!databaseUrl) {
  usageError(
    'set DATABASE_URL to a PostgreSQL server (e.g. postgres://postgres@127.0.0.1:5432/test): the soak creates a scratch ' +
      'database next to that one (the user needs CREATEDB) and runs the server on it. The embedded database is not soaked.',
  );
}
const adminUrl: string = databaseUrl;

// ---------------------------------------------------------------------------------------
// Small helpers

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** The workload's dice: Math.random is plenty, and cheaper than crypto in a process that drives the load. */
const randomInt = (below: number) => Math.floor(Math.random() * below);
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const pick = <T>(items: readonly T[]): T => items[randomInt(items.length)]!;
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const newToken = () => `msk_${Array.from({ length: 40 }, () => BASE62[secureRandomInt(62)]).join('')}`;
const nonce = () => randomBytes(6).toString('hex');
const mib = (kib: number | undefined) => (kib === undefined ? '—' : `${(kib / 1024).toFixed(1)} MiB`);

const WORDS = [
  'memory', 'agent', 'deploy', 'rollback', 'schema', 'index', 'latency', 'budget', 'release', 'customer', 'incident',
  'runbook', 'owner', 'décision', 'naïve', 'straße', 'København', '東京', 'заметка', '🧠', '✅', '—', 'TODO', 'note',
];

/** Text of roughly `bytes` UTF-8 bytes with some multi-byte characters, tagged so that every write is unique. */
function noteContent(bytes: number, tag: string): string {
  const lines = [`# ${tag}`];
  let size = tag.length + 3;
  while (size < bytes) {
    const line = Array.from({ length: 6 + randomInt(10) }, () => pick(WORDS)).join(' ');
    lines.push(line);
    size += Buffer.byteLength(line, 'utf8') + 1;
  }
  return lines.join('\n');
}
const contentSize = () => (randomInt(10) === 0 ? 8_000 + randomInt(24_000) : 64 + randomInt(3_000));

/** A random-access set: O(1) add, remove and random pick. */
class Pool<T extends { id: string }> {
  private readonly items: T[] = [];
  private readonly index = new Map<string, number>();
  get size() {
    return this.items.length;
  }
  add(item: T) {
    if (this.index.has(item.id)) return;
    this.index.set(item.id, this.items.length);
    this.items.push(item);
  }
  get(id: string) {
    const position = this.index.get(id);
    return position === undefined ? undefined : this.items[position];
  }
  remove(id: string) {
    const position = this.index.get(id);
    if (position === undefined) return;
    const last = this.items.pop()!;
    this.index.delete(id);
    if (position < this.items.length) {
      this.items[position] = last;
      this.index.set(last.id, position);
    }
  }
  random(): T | undefined {
    return this.items.length === 0 ? undefined : this.items[randomInt(this.items.length)];
  }
}

// ---------------------------------------------------------------------------------------
// HTTP (keep-alive) and the classification of answers

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const REQUEST_TIMEOUT_MS = 30_000;

type HttpAnswer = { status: number; body: unknown; requestId: string | undefined } | { networkError: string };

function postGraphql(endpoint: URL, token: string, query: string, variables: Record<string, unknown>): Promise<HttpAnswer> {
  const payload = JSON.stringify({ query, variables });
  return new Promise((resolve) => {
    const request = http.request(
      endpoint,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', (error) => resolve({ networkError: `${(error as NodeJS.ErrnoException).code ?? error.message}` }));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
          const requestId = response.headers['x-request-id'];
          resolve({ status: response.statusCode ?? 0, body, requestId: typeof requestId === 'string' ? requestId : undefined });
        });
      },
    );
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error('timeout')));
    request.on('error', (error) => resolve({ networkError: (error as NodeJS.ErrnoException).code ?? error.message }));
    request.end(payload);
  });
}

type Outcome = { kind: 'ok' } | { kind: 'domain'; code: string } | { kind: 'failure'; reason: string };
type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The `code` of the first top-level error, if any. */
function topLevelCode(body: unknown): string | undefined {
  if (!isObject(body) || !Array.isArray(body.errors) || body.errors.length === 0) return undefined;
  const first = body.errors[0] as Json;
  const extensions = isObject(first.extensions) ? first.extensions : {};
  return typeof extensions.code === 'string' ? extensions.code : 'NO_CODE';
}

/**
 * A mutation's result union: ok for the success type, the error code for a typed error
 * (a failure when `expectedCodes` does not list it), anything else a failure.
 */
function unionOutcome(result: unknown, successType: string, expectedCodes: readonly string[]): Outcome {
  if (!isObject(result)) return { kind: 'failure', reason: 'unexpected shape: no result' };
  if (result.__typename === successType) return { kind: 'ok' };
  if (typeof result.code === 'string') {
    return expectedCodes.includes(result.code) ? { kind: 'domain', code: result.code } : { kind: 'failure', reason: `unexpected ${result.code} (${String(result.__typename)})` };
  }
  return { kind: 'failure', reason: `unexpected shape: __typename ${String(result.__typename)}` };
}

// ---------------------------------------------------------------------------------------
// Statistics

interface OperationStats {
  requests: number;
  ok: number;
  domain: Record<string, number>;
  rateLimited: number;
  failures: number;
  latenciesMs: number[];
}
const stats = new Map<string, OperationStats>();
const failureReasons = new Map<string, number>();
const failureExamples: { operation: string; reason: string; requestId: string | undefined; message?: string }[] = [];
/** 429s of ordinary clients: they are paced under the limit, so these are failures. */
let unexpectedRateLimits = 0;

function statsOf(operation: string): OperationStats {
  let entry = stats.get(operation);
  if (!entry) {
    entry = { requests: 0, ok: 0, domain: {}, rateLimited: 0, failures: 0, latenciesMs: [] };
    stats.set(operation, entry);
  }
  return entry;
}

function recordFailure(operation: string, reason: string, requestId: string | undefined, body?: unknown) {
  statsOf(operation).failures += 1;
  failureReasons.set(`${operation}: ${reason}`, (failureReasons.get(`${operation}: ${reason}`) ?? 0) + 1);
  if (failureExamples.length < 20) {
    const message = isObject(body) && Array.isArray(body.errors) && isObject(body.errors[0]) ? String(body.errors[0].message) : undefined;
    failureExamples.push({ operation, reason, requestId, ...(message === undefined ? {} : { message }) });
  }
}

// ---------------------------------------------------------------------------------------
// The workload's state: what the clients know of each workspace

interface KnownMemory {
  id: string;
  storeId: string;
  path: string;
  sha: string;
  hot: boolean;
}
interface KnownSession {
  id: string;
  managed: boolean;
}
interface WorkspaceState {
  id: string;
  tokens: string[];
  stores: string[];
  memories: Pool<KnownMemory>;
  hot: KnownMemory[];
  sessions: KnownSession[];
  pairs: { identityId: string; templateId: string }[];
}

/**
 * Versions each memory must have, counted from acknowledged writes (every write carries
 * unique content, so each success writes exactly one version). Memories touched by a write
 * whose outcome is unknown (network error, 5xx) are left out of the comparison.
 */
const expectedVersions = new Map<string, number>();
const uncertainMemories = new Set<string>();
const acknowledge = (memoryId: string) => expectedVersions.set(memoryId, (expectedVersions.get(memoryId) ?? 0) + 1);

/**
 * Not an error type: a read whose parts come from different statements saw a write commit
 * between them (READ COMMITTED). Legitimate today, counted so that a change shows.
 */
const READ_SKEW = 'READ_SKEW (a write committed between two statements of one read)';

const TOPICS = ['alpha', 'beta', 'gamma', 'ops', 'design', 'people'];
const notePath = () => `notes/${pick(TOPICS)}/${randomInt(150)}.md`;

// ---------------------------------------------------------------------------------------
// Documents

const MEMORY_FIELDS = 'id memoryStoreId path content contentSha256 contentSizeBytes';
const ERROR_FIELDS = '__typename ... on Error { code message }';
/** Only for unions that hold PreconditionFailedError: spreading it elsewhere fails validation. */
const CHECKED_ERROR_FIELDS = `${ERROR_FIELDS} ... on PreconditionFailedError { currentContentSha256 }`;

const DOCUMENTS = {
  createMemoryStore: `mutation CreateStore($input: CreateMemoryStoreInput!) { createMemoryStore(input: $input) { ${ERROR_FIELDS} ... on CreateMemoryStoreSuccess { memoryStore { id name entryCount } } } }`,
  createMemory: `mutation CreateMemory($input: CreateMemoryInput!) { createMemory(input: $input) { ${ERROR_FIELDS} ... on CreateMemorySuccess { memory { ${MEMORY_FIELDS} } } } }`,
  updateMemory: `mutation UpdateMemory($input: UpdateMemoryInput!) { updateMemory(input: $input) { ${CHECKED_ERROR_FIELDS} ... on UpdateMemorySuccess { memory { ${MEMORY_FIELDS} } } } }`,
  deleteMemory: `mutation DeleteMemory($input: DeleteMemoryInput!) { deleteMemory(input: $input) { ${CHECKED_ERROR_FIELDS} ... on DeleteMemorySuccess { deletedMemoryId version { id operation contentSha256 } } } }`,
  createSession: `mutation CreateSession($input: CreateSessionInput!) { createSession(input: $input) { ${ERROR_FIELDS} ... on CreateSessionSuccess { session { id environment memoryInjected mounts { memoryStoreId access } } } } }`,
  mountMemoryStore: `mutation Mount($input: MountMemoryStoreInput!) { mountMemoryStore(input: $input) { ${ERROR_FIELDS} ... on MountMemoryStoreSuccess { mount { memoryStoreId access } } } }`,
  writeSessionMemory: `mutation AgentWrite($input: WriteSessionMemoryInput!) { writeSessionMemory(input: $input) { ${CHECKED_ERROR_FIELDS} ... on WriteSessionMemorySuccess { memory { ${MEMORY_FIELDS} metadata } } } }`,
  deleteSessionMemory: `mutation AgentDelete($input: DeleteSessionMemoryInput!) { deleteSessionMemory(input: $input) { ${CHECKED_ERROR_FIELDS} ... on DeleteSessionMemorySuccess { deletedMemoryId version { id operation } } } }`,
  readMemory: `query ReadMemory($id: ID!) { memory(id: $id) { ${MEMORY_FIELDS} updatedAt latestVersion { id operation contentSha256 } } }`,
  readMemoryByPath: `query ReadByPath($storeId: ID!, $path: String!) { memoryStore(id: $storeId) { id memory(path: $path) { id path contentSha256 contentSizeBytes } } }`,
  listByPrefix: `query ListByPrefix($storeId: ID!, $prefix: String!) { memoryStore(id: $storeId) { id entryCount memories(first: 20, pathPrefix: $prefix) { totalCount edges { cursor node { id path contentSizeBytes updatedAt } } pageInfo { hasNextPage endCursor } } } }`,
  dashboard: `query Dashboard { memoryStores(first: 5) { totalCount edges { node { id name entryCount totalSize memories(first: 10, orderBy: UPDATED_AT_DESC) { totalCount edges { node { id path contentSizeBytes updatedAt versions(first: 3) { edges { node { id operation createdAt } } } } } } } } } }`,
  storeVersions: `query StoreVersions($storeId: ID!) { memoryStore(id: $storeId) { id versions(first: 20) { totalCount edges { node { id memoryId operation contentSha256 createdAt } } } } }`,
  nodeLookup: `query Node($id: ID!) { node(id: $id) { __typename id ... on Memory { path contentSha256 } } }`,
  sessionFiles: `query SessionFiles($id: ID!) { session(id: $id) { id files(first: 20) { totalCount edges { node { path sandboxPath access memory { id contentSha256 } shadowed { id } } } } } }`,
  greedy: `query Greedy { memoryStores(first: 1) { totalCount } }`,
} as const;

// ---------------------------------------------------------------------------------------
// Operations: each sends one request and returns its outcome, updating what clients know

interface Client {
  name: string;
  token: string;
  workspace: WorkspaceState;
  /** The last store this client created, to repeat its request with the same idempotency key. */
  lastStore: { input: Json; storeId: string } | undefined;
}

let endpoint: URL;

/** Sends one request for `operation`, counts it, and hands a well-formed `data` to `interpret`. */
async function run(operation: string, client: Client, query: string, variables: Json, interpret: (data: Json) => Outcome, onUnknown?: () => void): Promise<void> {
  const entry = statsOf(operation);
  entry.requests += 1;
  const started = performance.now();
  const answer = await postGraphql(endpoint, client.token, query, variables);
  entry.latenciesMs.push(performance.now() - started);
  if ('networkError' in answer) {
    onUnknown?.();
    return recordFailure(operation, `network ${answer.networkError}`, undefined);
  }
  const code = topLevelCode(answer.body);
  if (answer.status === 429) {
    if (code !== 'RATE_LIMITED') return recordFailure(operation, `HTTP 429 with ${code ?? 'no error code'}`, answer.requestId);
    entry.rateLimited += 1;
    if (client.name !== GREEDY_NAME) {
      // Shown as rate limited in the table, but a failure in the verdict: ordinary clients stay under the limit.
      unexpectedRateLimits += 1;
      const reason = `${operation}: rate limited (an ordinary client)`;
      failureReasons.set(reason, (failureReasons.get(reason) ?? 0) + 1);
    }
    return;
  }
  if (answer.status >= 500) onUnknown?.();
  if (answer.status !== 200) return recordFailure(operation, `HTTP ${answer.status}${code ? ` ${code}` : ''}`, answer.requestId, answer.body);
  if (code !== undefined) return recordFailure(operation, `top-level error ${code}`, answer.requestId, answer.body);
  const data = isObject(answer.body) && isObject(answer.body.data) ? answer.body.data : undefined;
  if (!data) return recordFailure(operation, 'unexpected shape: no data', answer.requestId);
  let outcome: Outcome;
  try {
    outcome = interpret(data);
  } catch (error) {
    outcome = { kind: 'failure', reason: `unexpected shape: ${(error as Error).message}` };
  }
  if (outcome.kind === 'ok') entry.ok += 1;
  else if (outcome.kind === 'domain') entry.domain[outcome.code] = (entry.domain[outcome.code] ?? 0) + 1;
  else recordFailure(operation, outcome.reason, answer.requestId);
}

/** Checks what the API says of a memory's content against its own hash and size (§6). */
function checkMemory(memory: unknown): string | undefined {
  if (!isObject(memory) || typeof memory.id !== 'string' || typeof memory.content !== 'string') return 'unexpected shape: memory';
  if (memory.contentSha256 !== sha256(memory.content)) return 'contentSha256 is not the SHA-256 of content';
  if (memory.contentSizeBytes !== Buffer.byteLength(memory.content, 'utf8')) return 'contentSizeBytes is not the UTF-8 size of content';
  return undefined;
}

function successOf(data: Json, field: string): Json {
  const result = data[field];
  if (!isObject(result)) throw new Error(`no ${field}`);
  return result;
}

async function createMemoryStore(client: Client) {
  // A quarter of the creations repeat the previous request with its idempotency key: the same store must come back.
  const repeat = client.lastStore !== undefined && randomInt(4) === 0 ? client.lastStore : undefined;
  const input = repeat?.input ?? { name: `soak ${client.name} ${nonce()}`, description: 'created by the soak test', metadata: { team: pick(TOPICS) }, idempotencyKey: `soak-${nonce()}` };
  await run('createMemoryStore', client, DOCUMENTS.createMemoryStore, { input }, (data) => {
    const result = successOf(data, 'createMemoryStore');
    const outcome = unionOutcome(result, 'CreateMemoryStoreSuccess', []);
    if (outcome.kind !== 'ok') return outcome;
    const store = (result.memoryStore as Json).id as string;
    if (repeat) return store === repeat.storeId ? outcome : { kind: 'failure', reason: 'idempotent repeat returned another store' };
    client.lastStore = { input, storeId: store };
    client.workspace.stores.push(store);
    return outcome;
  });
}

async function createMemory(client: Client, storeId = pick(client.workspace.stores), path = notePath(), hot = false) {
  const content = noteContent(contentSize(), `${client.name} ${nonce()}`);
  await run('createMemory', client, DOCUMENTS.createMemory, { input: { memoryStoreId: storeId, path, content, metadata: { author: client.name } } }, (data) => {
    const result = successOf(data, 'createMemory');
    const outcome = unionOutcome(result, 'CreateMemorySuccess', ['CONFLICT']);
    if (outcome.kind !== 'ok') return outcome;
    const memory = result.memory as Json;
    const problem = checkMemory(memory);
    if (problem) return { kind: 'failure', reason: problem };
    if (memory.content !== content || memory.path !== path) return { kind: 'failure', reason: 'created memory differs from the input' };
    const known = { id: memory.id as string, storeId, path, sha: memory.contentSha256 as string, hot };
    client.workspace.memories.add(known);
    if (hot) client.workspace.hot.push(known);
    acknowledge(known.id);
    return outcome;
  });
}

/**
 * An edit with the content hash the client last saw. A fifth of them go to the workspace's
 * few hot memories, where clients race: exactly one of a race's writers may win (§6).
 */
async function updateMemory(client: Client, rename: boolean) {
  const { workspace } = client;
  const target = !rename && workspace.hot.length > 0 && randomInt(5) === 0 ? pick(workspace.hot) : workspace.memories.random();
  if (!target) return createMemory(client);
  const content = noteContent(contentSize(), `${client.name} ${nonce()}`);
  const newPath = rename ? `${notePath()}.${nonce()}` : undefined;
  const input: Json = { id: target.id, content, expectedContentSha256: target.sha };
  if (newPath) input.path = newPath;
  if (randomInt(3) === 0) input.metadata = { author: client.name, revision: nonce() };
  const operation = rename ? 'renameMemory' : 'updateMemory';
  await run(
    operation,
    client,
    DOCUMENTS.updateMemory,
    { input },
    (data) => {
      const result = successOf(data, 'updateMemory');
      const outcome = unionOutcome(result, 'UpdateMemorySuccess', rename ? ['PRECONDITION_FAILED', 'NOT_FOUND', 'CONFLICT'] : ['PRECONDITION_FAILED', 'NOT_FOUND']);
      if (outcome.kind === 'domain') {
        if (outcome.code === 'PRECONDITION_FAILED') target.sha = String(result.currentContentSha256);
        if (outcome.code === 'NOT_FOUND') {
          if (target.hot) return { kind: 'failure', reason: 'a hot memory (never deleted) is NOT_FOUND' };
          workspace.memories.remove(target.id);
        }
        return outcome;
      }
      if (outcome.kind === 'failure') return outcome;
      const memory = result.memory as Json;
      const problem = checkMemory(memory);
      if (problem) return { kind: 'failure', reason: problem };
      if (memory.content !== content) return { kind: 'failure', reason: 'updated memory does not hold the new content' };
      acknowledge(target.id);
      target.sha = memory.contentSha256 as string;
      if (newPath) target.path = newPath;
      return outcome;
    },
    () => uncertainMemories.add(target.id),
  );
}

async function deleteMemory(client: Client) {
  const { workspace } = client;
  const target = workspace.memories.random();
  if (!target || target.hot) return;
  await run(
    'deleteMemory',
    client,
    DOCUMENTS.deleteMemory,
    { input: { id: target.id, expectedContentSha256: target.sha } },
    (data) => {
      const result = successOf(data, 'deleteMemory');
      const outcome = unionOutcome(result, 'DeleteMemorySuccess', ['PRECONDITION_FAILED', 'NOT_FOUND']);
      if (outcome.kind === 'domain' && outcome.code === 'PRECONDITION_FAILED') target.sha = String(result.currentContentSha256);
      if (outcome.kind === 'failure' || (outcome.kind === 'domain' && outcome.code === 'PRECONDITION_FAILED')) return outcome;
      workspace.memories.remove(target.id);
      if (outcome.kind === 'ok') {
        const version = result.version as Json;
        if (result.deletedMemoryId !== target.id || version.operation !== 'DELETED') return { kind: 'failure', reason: 'delete answered for another memory or without a DELETED version' };
        acknowledge(target.id);
      }
      return outcome;
    },
    () => uncertainMemories.add(target.id),
  );
}

async function readMemory(client: Client) {
  const target = client.workspace.memories.random();
  if (!target) return;
  await run('readMemory', client, DOCUMENTS.readMemory, { id: target.id }, (data) => {
    if (data.memory === null) {
      if (target.hot) return { kind: 'failure', reason: 'a hot memory (never deleted) reads as null' };
      client.workspace.memories.remove(target.id);
      return { kind: 'domain', code: 'NULL (deleted meanwhile)' };
    }
    const memory = data.memory as Json;
    const problem = checkMemory(memory);
    if (problem) return { kind: 'failure', reason: problem };
    const latest = memory.latestVersion as Json;
    // The memory and its latestVersion are read by two statements: a write may commit in
    // between. The database check after the run is the authority on §6; this is counted.
    if (latest.contentSha256 !== memory.contentSha256 || latest.operation === 'DELETED') return { kind: 'domain', code: READ_SKEW };
    return { kind: 'ok' };
  });
}

async function readMemoryByPath(client: Client) {
  const target = client.workspace.memories.random();
  if (!target) return;
  await run('readMemoryByPath', client, DOCUMENTS.readMemoryByPath, { storeId: target.storeId, path: target.path }, (data) => {
    const store = data.memoryStore as Json;
    if (!isObject(store)) return { kind: 'failure', reason: 'store reads as null' };
    if (store.memory === null) return { kind: 'domain', code: 'NULL (deleted or renamed meanwhile)' };
    return isObject(store.memory) && typeof store.memory.id === 'string' ? { kind: 'ok' } : { kind: 'failure', reason: 'unexpected shape: memory' };
  });
}

async function listByPrefix(client: Client) {
  const prefix = randomInt(2) === 0 ? `notes/${pick(TOPICS)}/` : `notes/${pick(TOPICS)}/${randomInt(15)}`;
  await run('listByPrefix', client, DOCUMENTS.listByPrefix, { storeId: pick(client.workspace.stores), prefix }, (data) => {
    const store = data.memoryStore as Json;
    if (!isObject(store)) return { kind: 'failure', reason: 'store reads as null' };
    const connection = store.memories as Json;
    const paths = (connection.edges as Json[]).map((edge) => (edge.node as Json).path as string);
    if (paths.some((path) => !path.startsWith(prefix))) return { kind: 'failure', reason: 'a memory outside pathPrefix' };
    // Byte order equals code-point order for these ASCII paths; `<` compares UTF-16 units.
    if (paths.some((path, index) => index > 0 && paths[index - 1]! >= path)) return { kind: 'failure', reason: 'memories not in PATH_ASC order' };
    if (typeof connection.totalCount !== 'number') return { kind: 'failure', reason: 'unexpected shape: totalCount' };
    // The page and totalCount are two statements: a delete may commit in between (counted, see readMemory).
    return connection.totalCount >= paths.length ? { kind: 'ok' } : { kind: 'domain', code: READ_SKEW };
  });
}

async function dashboard(client: Client) {
  await run('dashboard', client, DOCUMENTS.dashboard, {}, (data) => {
    const connection = data.memoryStores as Json;
    const edges = connection.edges as Json[];
    for (const edge of edges) {
      const store = edge.node as Json;
      const memories = (store.memories as Json).edges as Json[];
      if (memories.length > 10 || memories.some((memory) => !Array.isArray(((memory.node as Json).versions as Json).edges))) return { kind: 'failure', reason: 'unexpected shape: nested lists' };
    }
    return edges.length > 0 ? { kind: 'ok' } : { kind: 'failure', reason: 'no stores in the dashboard' };
  });
}

async function storeVersions(client: Client) {
  await run('storeVersions', client, DOCUMENTS.storeVersions, { storeId: pick(client.workspace.stores) }, (data) => {
    const store = data.memoryStore as Json;
    if (!isObject(store)) return { kind: 'failure', reason: 'store reads as null' };
    const times = ((store.versions as Json).edges as Json[]).map((edge) => (edge.node as Json).createdAt as string);
    // RFC 3339 UTC timestamps of one format compare as strings.
    return times.every((time, index) => index === 0 || times[index - 1]! >= time) ? { kind: 'ok' } : { kind: 'failure', reason: 'versions not newest first' };
  });
}

async function nodeLookup(client: Client) {
  const target = client.workspace.memories.random();
  if (!target) return;
  await run('nodeLookup', client, DOCUMENTS.nodeLookup, { id: target.id }, (data) => {
    if (data.node === null) return target.hot ? { kind: 'failure', reason: 'a hot memory reads as null' } : { kind: 'domain', code: 'NULL (deleted meanwhile)' };
    return isObject(data.node) && data.node.__typename === 'Memory' && data.node.id === target.id ? { kind: 'ok' } : { kind: 'failure', reason: 'node is not the memory asked for' };
  });
}

async function createSession(client: Client, pair = pick(client.workspace.pairs), managed = randomInt(5) !== 0) {
  await run('createSession', client, DOCUMENTS.createSession, { input: { ...pair, environment: managed ? 'MANAGED' : 'SELF_HOSTED' } }, (data) => {
    const result = successOf(data, 'createSession');
    const outcome = unionOutcome(result, 'CreateSessionSuccess', []);
    if (outcome.kind !== 'ok') return outcome;
    const session = result.session as Json;
    if (session.memoryInjected !== managed) return { kind: 'failure', reason: 'memoryInjected does not follow the environment' };
    client.workspace.sessions.push({ id: session.id as string, managed });
    return outcome;
  });
}

async function writeSessionMemory(client: Client) {
  const managed = client.workspace.sessions.filter((session) => session.managed);
  if (managed.length === 0) return createSession(client);
  const session = pick(managed);
  const content = noteContent(64 + randomInt(1_500), `agent ${client.name} ${nonce()}`);
  await run('writeSessionMemory', client, DOCUMENTS.writeSessionMemory, { input: { sessionId: session.id, path: `agent/${randomInt(40)}.md`, content } }, (data) => {
    const result = successOf(data, 'writeSessionMemory');
    const outcome = unionOutcome(result, 'WriteSessionMemorySuccess', []);
    if (outcome.kind !== 'ok') return outcome;
    const memory = result.memory as Json;
    const problem = checkMemory(memory);
    if (problem) return { kind: 'failure', reason: problem };
    if (memory.content !== content || (memory.metadata as Json).source !== 'agent') return { kind: 'failure', reason: 'agent write not applied as sent' };
    acknowledge(memory.id as string);
    return outcome;
  });
}

async function deleteSessionMemory(client: Client) {
  const managed = client.workspace.sessions.filter((session) => session.managed);
  if (managed.length === 0) return;
  await run('deleteSessionMemory', client, DOCUMENTS.deleteSessionMemory, { input: { sessionId: pick(managed).id, path: `agent/${randomInt(40)}.md` } }, (data) => {
    const result = successOf(data, 'deleteSessionMemory');
    const outcome = unionOutcome(result, 'DeleteSessionMemorySuccess', ['NOT_FOUND']);
    if (outcome.kind === 'ok') acknowledge(result.deletedMemoryId as string);
    return outcome;
  });
}

async function sessionFiles(client: Client) {
  if (client.workspace.sessions.length === 0) return;
  const session = pick(client.workspace.sessions);
  await run('sessionFiles', client, DOCUMENTS.sessionFiles, { id: session.id }, (data) => {
    const found = data.session as Json;
    if (!isObject(found)) return { kind: 'failure', reason: 'session reads as null' };
    const edges = (found.files as Json).edges as Json[];
    if (!session.managed && edges.length > 0) return { kind: 'failure', reason: 'a SELF_HOSTED session sees files' };
    return edges.every((edge) => String((edge.node as Json).sandboxPath).endsWith(String((edge.node as Json).path))) ? { kind: 'ok' } : { kind: 'failure', reason: 'sandboxPath does not end with path' };
  });
}

/** The mix of an ordinary client: mostly reads and edits, some creations and deletions, agents at work. */
const MIX: [weight: number, operation: (client: Client) => Promise<void>][] = [
  [18, readMemory],
  [6, readMemoryByPath],
  [10, listByPrefix],
  [6, dashboard],
  [4, storeVersions],
  [3, nodeLookup],
  [13, (client) => createMemory(client)],
  [18, (client) => updateMemory(client, false)],
  [2, (client) => updateMemory(client, true)],
  [6, deleteMemory],
  [1, createMemoryStore],
  [1, (client) => createSession(client)],
  [6, writeSessionMemory],
  [1, deleteSessionMemory],
  [5, sessionFiles],
];
const MIX_TOTAL = MIX.reduce((sum, [weight]) => sum + weight, 0);
function pickOperation(): (client: Client) => Promise<void> {
  let ticket = randomInt(MIX_TOTAL);
  for (const [weight, operation] of MIX) {
    if (ticket < weight) return operation;
    ticket -= weight;
  }
  return MIX[0]![1];
}

const GREEDY_NAME = 'greedy';

// ---------------------------------------------------------------------------------------
// Scratch database and server process

interface ServerHandle {
  pid: number;
  url: string;
  logFile: string;
  exited: Promise<number | string>;
  stop(): Promise<number | string>;
}

/**
 * Starts the server as `npm start` does, with its log in a file rather than a pipe: a pipe
 * write blocks the server when this busy process reads late, and the soak would measure that.
 */
async function startServer(env: Record<string, string>, logFile: string, nodeFlags: string[]): Promise<ServerHandle> {
  const log = fs.openSync(logFile, 'w');
  const child = spawn(process.execPath, [...NODE_FLAGS, ...nodeFlags, '--import', 'tsx', 'src/server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  let exitCode: number | string | undefined;
  void exited.then((code) => (exitCode = code));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = /"msg":"listening","url":"([^"]+)"/.exec(fs.readFileSync(logFile, 'utf8'));
    if (match) {
      return {
        pid: child.pid!,
        url: match[1]!,
        logFile,
        exited,
        stop: async () => {
          child.kill('SIGTERM');
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), 20_000)));
          const result = await Promise.race([exited, timeout]);
          clearTimeout(timer);
          if (result === 'timeout') {
            child.kill('SIGKILL');
            await exited;
            return 'did not stop within 20 s (killed)';
          }
          return result;
        },
      };
    }
    if (exitCode !== undefined) throw new Error(`the server exited with ${exitCode} before listening:\n${fs.readFileSync(logFile, 'utf8')}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the server did not listen within 60 s:\n${fs.readFileSync(logFile, 'utf8')}`);
    }
    await sleep(100);
  }
}

/** The server's resident set size in KiB, from /proc (the child is node itself, so its pid is the server's). */
function readRssKiB(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** User plus system CPU seconds of a process (clock ticks of 1/100 s, as on every Linux this runs on). */
function readCpuSeconds(pid: number): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** What the server logged: lines per level, 5xx answers, and the first error lines. */
function summarizeServerLog(logFile: string) {
  const levels: Record<string, number> = {};
  const statuses: Record<string, number> = {};
  const errorLines: string[] = [];
  for (const line of fs.readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: Json;
    try {
      entry = JSON.parse(line) as Json;
    } catch {
      continue;
    }
    const level = String(entry.level);
    levels[level] = (levels[level] ?? 0) + 1;
    if (entry.msg === 'request') statuses[String(entry.status)] = (statuses[String(entry.status)] ?? 0) + 1;
    if ((level === 'error' || level === 'warn') && errorLines.length < 10) errorLines.push(line.slice(0, 500));
  }
  return { levels, statuses, errorLines };
}

// ---------------------------------------------------------------------------------------
// The run

interface RssSample {
  second: number;
  rssKiB: number;
}


function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')).join('\n');
}

let stopRequested = false;
process.on('SIGINT', () => {
  if (stopRequested) process.exit(130);
  stopRequested = true;
  console.log('\nsoak: stopping early (Ctrl-C again to abort without cleaning up)');
});

async function main(): Promise<number> {
  const startedAt = new Date();
  const scratch = await createScratchPostgresDatabase('memstore_soak', adminUrl);
  const logFile = path.join(os.tmpdir(), `${scratch.name}.log`);
  console.log(`soak: scratch database ${scratch.name}; server log ${logFile}`);

  const workspaces: WorkspaceState[] = Array.from({ length: options.workspaces }, (_, index) => ({
    id: `soak_${index + 1}`,
    tokens: [],
    stores: [],
    memories: new Pool<KnownMemory>(),
    hot: [],
    sessions: [],
    pairs: [1, 2, 3].flatMap((identity) => ['a', 'b'].map((template) => ({ identityId: `idn_soak${identity}`, templateId: `tmpl_${template}` }))),
  }));
  const clients: Client[] = Array.from({ length: options.clients }, (_, index) => {
    const workspace = workspaces[index % workspaces.length]!;
    const token = newToken();
    workspace.tokens.push(token);
    return { name: `client${index + 1}`, token, workspace, lastStore: undefined };
  });
  const greedyClient: Client = { name: GREEDY_NAME, token: newToken(), workspace: workspaces[0]!, lastStore: undefined };
  const bootstrapKeys = [...clients, ...(options.greedy ? [greedyClient] : [])].map((client) => `${client.workspace.id}:${client.token}`);

  let server: ServerHandle | undefined;
  let serverExit: number | string | undefined;
  const rss: RssSample[] = [];
  let verdictProblems: string[] = [];
  let summary: Json = {};
  try {
    server = await startServer(
      {
        PORT: '0',
        HOST: '127.0.0.1',
        NODE_ENV: 'production',
        LOG_LEVEL: options.serverLogLevel,
        DATABASE_URL: scratch.url,
        MEMSTORE_DATA_DIR: 'memory://',
        MEMSTORE_BOOTSTRAP_KEYS: bootstrapKeys.join(','),
        MEMSTORE_RATE_LIMIT_PER_SECOND: String(options.rateLimit),
        MEMSTORE_RATE_LIMIT_BURST: String(options.rateBurst),
      },
      logFile,
      options.serverHeapMiB === undefined ? [] : [`--max-old-space-size=${options.serverHeapMiB}`],
    );
    endpoint = new URL(server.url);
    const serverPid = server.pid;
    console.log(`soak: server pid ${serverPid} listening on ${server.url}; RSS ${mib(readRssKiB(serverPid))} at start`);

    // Seed every workspace through the API, spreading the requests over the workspace's keys.
    const setupStarted = performance.now();
    await Promise.all(
      workspaces.map(async (workspace) => {
        const own = clients.filter((client) => client.workspace === workspace);
        const by = (index: number) => own[index % own.length]!;
        for (let index = 0; index < 3; index += 1) await createMemoryStore(by(index));
        await Promise.all(
          Array.from({ length: 8 }, async (_, worker) => {
            for (let index = worker; index < 60; index += 8) {
              await createMemory(by(index), workspace.stores[index % workspace.stores.length], `notes/${TOPICS[index % TOPICS.length]}/seed-${index}.md`, index < 4);
            }
          }),
        );
        await Promise.all(workspace.pairs.map((pair, index) => createSession(by(index), pair, true)));
        // One explicit mount per identity's first template, so that session files merge two stores.
        for (const [index, pair] of workspace.pairs.entries()) {
          if (pair.templateId !== 'tmpl_a') continue;
          await run('mountMemoryStore', by(index), DOCUMENTS.mountMemoryStore, { input: { memoryStoreId: workspace.stores[0], ...pair } }, (data) =>
            unionOutcome(successOf(data, 'mountMemoryStore'), 'MountMemoryStoreSuccess', []),
          );
        }
      }),
    );
    const setupFailures = [...stats.values()].reduce((sum, entry) => sum + entry.failures, 0);
    if (setupFailures > 0 || workspaces.some((workspace) => workspace.stores.length === 0 || workspace.hot.length === 0)) {
      throw new Error(`seeding failed: ${[...failureReasons].map(([reason, count]) => `${reason} ×${count}`).join('; ')}`);
    }
    console.log(`soak: seeded ${workspaces.length} workspaces in ${Math.round(performance.now() - setupStarted)} ms; RSS ${mib(readRssKiB(serverPid))} idle`);
    const idleRssKiB = readRssKiB(serverPid);

    // The load.
    const loadStarted = performance.now();
    const deadline = loadStarted + options.seconds * 1000;
    const cpuAtStart = readCpuSeconds(serverPid);
    const ownCpuAtStart = process.cpuUsage();
    const requestsSoFar = () => [...stats.values()].reduce((sum, entry) => sum + entry.requests, 0);
    const failuresSoFar = () => [...stats.values()].reduce((sum, entry) => sum + entry.failures, 0) + unexpectedRateLimits;
    let lastReport = { at: loadStarted, requests: requestsSoFar() };
    const sampler = setInterval(() => {
      const second = Math.round((performance.now() - loadStarted) / 1000);
      const kib = readRssKiB(serverPid);
      if (kib !== undefined) rss.push({ second, rssKiB: kib });
      if (second > 0 && second % 10 === 0) {
        const now = performance.now();
        const requests = requestsSoFar();
        console.log(`  [${String(second).padStart(4)} s] ${requests} requests, ${Math.round(((requests - lastReport.requests) * 1000) / (now - lastReport.at))}/s lately, ${failuresSoFar()} failures, server RSS ${mib(kib)}`);
        lastReport = { at: now, requests };
      }
    }, 1000);

    const ordinaryClient = async (client: Client) => {
      // Paced under the per-key limit: a request may start every 1/clientRate s, never in a burst.
      const interval = 1000 / options.clientRate;
      let nextStart = performance.now() + randomInt(Math.ceil(interval));
      while (!stopRequested) {
        const now = performance.now();
        if (nextStart > now) await sleep(nextStart - now);
        if (performance.now() >= deadline || stopRequested) break;
        nextStart = Math.max(nextStart + interval, performance.now());
        await pickOperation()(client);
      }
    };
    const greedyLoop = async () => {
      // Ignores the limit on purpose: a steady stream at greedyRate, up to 64 requests in flight
      // (so that it outruns the limit even when the server answers slowly).
      const interval = 1000 / options.greedyRate;
      const inFlight = new Set<Promise<void>>();
      let nextStart = performance.now();
      while (!stopRequested && performance.now() < deadline) {
        if (inFlight.size >= 64) await Promise.race(inFlight);
        const request = run('greedyRead', greedyClient, DOCUMENTS.greedy, {}, (data) =>
          isObject(data.memoryStores) && typeof data.memoryStores.totalCount === 'number' ? { kind: 'ok' } : { kind: 'failure', reason: 'unexpected shape' },
        ).finally(() => inFlight.delete(request));
        inFlight.add(request);
        nextStart += interval;
        const wait = nextStart - performance.now();
        if (wait > 0) await sleep(wait);
        else nextStart = performance.now();
      }
      await Promise.all(inFlight);
    };
    console.log(
      `soak: ${options.clients} clients (≤ ${options.clientRate}/s each) over ${workspaces.length} workspaces for ${options.seconds} s` +
        (options.greedy ? `, plus a greedy client at ${options.greedyRate}/s` : '') +
        `; server rate limit ${options.rateLimit === 0 ? 'off' : `${options.rateLimit}/s, burst ${options.rateBurst}, per key`}`,
    );
    await Promise.all([...clients.map(ordinaryClient), ...(options.greedy ? [greedyLoop()] : [])]);
    clearInterval(sampler);
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const cpuAtEnd = readCpuSeconds(serverPid);
    const ownCpu = process.cpuUsage(ownCpuAtStart);
    const ownCpuSeconds = (ownCpu.user + ownCpu.system) / 1e6;
    const endRssKiB = readRssKiB(serverPid);
    if (endRssKiB !== undefined) rss.push({ second: Math.round(loadSeconds), rssKiB: endRssKiB });
    // A few idle seconds show whether the memory the load took is given back (or at least stops growing).
    if (options.cooldownSeconds > 0 && !stopRequested) await sleep(options.cooldownSeconds * 1000);
    const idleAfterRssKiB = readRssKiB(serverPid);

    serverExit = await server.stop();
    agent.destroy();
    const serverLog = summarizeServerLog(logFile);

    // Invariants, straight from the database.
    const database = await createDb({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 2 });
    const invariants: Record<string, string[]> = {};
    const versionMismatches: string[] = [];
    let versionsChecked = 0;
    let unacknowledged = 0;
    try {
      for (const workspace of workspaces) invariants[workspace.id] = await invariantViolations(database.db, workspace.id);
      const rows = (await database.db.execute(sql`select memory_id, count(*)::int as versions from memory_versions group by memory_id`)) as unknown as { memory_id: string; versions: number }[];
      const actual = new Map(rows.map((row) => [row.memory_id, row.versions]));
      for (const [memoryId, expected] of expectedVersions) {
        if (uncertainMemories.has(memoryId)) continue;
        versionsChecked += 1;
        const found = actual.get(memoryId) ?? 0;
        if (found !== expected) versionMismatches.push(`${memoryId}: ${expected} acknowledged writes, ${found} versions`);
      }
      for (const memoryId of actual.keys()) if (!expectedVersions.has(memoryId)) unacknowledged += 1;
    } finally {
      await database.close();
    }

    // Report.
    const operations = [...stats.entries()].sort(([a], [b]) => a.localeCompare(b));
    const rows = [['operation', 'requests', 'ok', 'domain', 'rate-limited', 'failures', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms']];
    const totals = { requests: 0, ok: 0, domain: 0, rateLimited: 0, failures: 0 };
    const operationSummary: Record<string, Json> = {};
    for (const [name, entry] of operations) {
      const sorted = [...entry.latenciesMs].sort((a, b) => a - b);
      const domain = Object.values(entry.domain).reduce((sum, count) => sum + count, 0);
      const at = (fraction: number) => (sorted.length === 0 ? 0 : percentile(sorted, fraction));
      const latency = { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: sorted.at(-1) ?? 0 };
      rows.push([name, entry.requests, entry.ok, domain, entry.rateLimited, entry.failures].map(String).concat([latency.p50, latency.p95, latency.p99, latency.max].map((ms) => ms.toFixed(1))));
      totals.requests += entry.requests;
      totals.ok += entry.ok;
      totals.domain += domain;
      totals.rateLimited += entry.rateLimited;
      totals.failures += entry.failures;
      operationSummary[name] = { requests: entry.requests, ok: entry.ok, domainErrors: entry.domain, rateLimited: entry.rateLimited, failures: entry.failures, latencyMs: latency };
    }
    rows.push(['total', totals.requests, totals.ok, totals.domain, totals.rateLimited, totals.failures].map(String).concat(['', '', '', '']));

    const loadRss = rss.filter((sample) => sample.second >= options.warmupSeconds);
    const startRss = loadRss[0] ?? rss[0];
    const peakRss = rss.reduce<RssSample | undefined>((peak, sample) => (!peak || sample.rssKiB > peak.rssKiB ? sample : peak), undefined);
    const endRss = rss.at(-1);
    const step = Math.max(1, Math.round(options.seconds / 6));
    const along = rss.slice(0, -1).filter((sample) => sample.second % step === 0 && sample.second > 0);

    console.log(`\n=== memstore soak: ${options.clients} clients, ${loadSeconds.toFixed(1)} s, ${Math.round(totals.requests / loadSeconds)} requests/s ===\n`);
    console.log(table(rows));
    const domainLines = operations.filter(([, entry]) => Object.keys(entry.domain).length > 0).map(([name, entry]) => `  ${name}: ${Object.entries(entry.domain).map(([code, count]) => `${code} ×${count}`).join(', ')}`);
    if (domainLines.length > 0) console.log(`\ndomain results (typed errors and read races, legitimate under concurrency):\n${domainLines.join('\n')}`);
    if (failureReasons.size > 0) {
      console.log('\nfailures:');
      for (const [reason, count] of failureReasons) console.log(`  ${reason} ×${count}`);
      for (const example of failureExamples.slice(0, 5)) {
        console.log(`  e.g. ${example.operation}: ${example.reason} (request ${example.requestId ?? '—'})${example.message ? `: ${example.message}` : ''}`);
      }
    }
    const cpuSeconds = cpuAtStart !== undefined && cpuAtEnd !== undefined ? cpuAtEnd - cpuAtStart : undefined;
    console.log(
      `\nserver RSS: idle ${mib(idleRssKiB)} · start (after ${options.warmupSeconds} s warm-up) ${mib(startRss?.rssKiB)} · peak ${mib(peakRss?.rssKiB)} at ${peakRss?.second ?? '—'} s · end ${mib(endRss?.rssKiB)}`,
    );
    console.log(`  along the way: ${along.map((sample) => `${sample.second} s ${mib(sample.rssKiB)}`).join(' · ')}; ${options.cooldownSeconds} s after the load ${mib(idleAfterRssKiB)}`);
    const perMinute = startRss && endRss && endRss.second > startRss.second ? ((endRss.rssKiB - startRss.rssKiB) / 1024 / (endRss.second - startRss.second)) * 60 : undefined;
    if (perMinute !== undefined) console.log(`  growth from start to end: ${perMinute.toFixed(1)} MiB per minute`);
    const share = (seconds: number) => `${seconds.toFixed(1)} s (${Math.round((100 * seconds) / loadSeconds)}% of one core)`;
    const loadAverage = os.loadavg()[0]!.toFixed(1);
    console.log(`CPU over the load: server ${cpuSeconds === undefined ? '—' : share(cpuSeconds)}, soak clients ${share(ownCpuSeconds)}; machine load average ${loadAverage} on ${os.cpus().length} cores`);
    console.log(`server stopped with ${serverExit}; log lines by level ${JSON.stringify(serverLog.levels)}; HTTP statuses ${JSON.stringify(serverLog.statuses)}`);
    for (const line of serverLog.errorLines) console.log(`  ${line}`);

    const violationCount = Object.values(invariants).reduce((sum, problems) => sum + problems.length, 0);
    console.log('\ninvariants (API.md §6), per workspace:');
    for (const [workspaceId, problems] of Object.entries(invariants)) {
      const workspace = workspaces.find((candidate) => candidate.id === workspaceId)!;
      console.log(`  ${workspaceId}: ${problems.length === 0 ? 'ok' : `${problems.length} violations`} (${workspace.stores.length} stores, ~${workspace.memories.size} live memories known to the clients, ${workspace.sessions.length} sessions)`);
      for (const problem of problems.slice(0, 10)) console.log(`    ${problem}`);
    }
    console.log(
      `version accounting: ${versionsChecked} memories checked, ${versionMismatches.length} mismatches` +
        (uncertainMemories.size > 0 ? `, ${uncertainMemories.size} skipped (a write with an unknown outcome)` : '') +
        (unacknowledged > 0 ? `, ${unacknowledged} memories with versions no client saw acknowledged` : ''),
    );
    for (const mismatch of versionMismatches.slice(0, 10)) console.log(`  ${mismatch}`);

    const greedyStats = stats.get('greedyRead');
    if (options.greedy && greedyStats) {
      console.log(
        `greedy client: ${greedyStats.requests} requests (${Math.round(greedyStats.requests / loadSeconds)}/s), ${greedyStats.ok} ok, ${greedyStats.rateLimited} rate limited (429 RATE_LIMITED)` +
          (greedyStats.rateLimited === 0
            ? ' — never limited: rate limiting is off or not implemented, or the server was too slow for the greedy stream to outrun the limit'
            : ''),
      );
    }

    verdictProblems = [
      ...(totals.failures > 0 ? [`${totals.failures} failed requests`] : []),
      ...(unexpectedRateLimits > 0 ? [`${unexpectedRateLimits} rate limits of ordinary clients`] : []),
      ...(violationCount > 0 ? [`${violationCount} invariant violations`] : []),
      ...(versionMismatches.length > 0 ? [`${versionMismatches.length} version-accounting mismatches`] : []),
      ...(unacknowledged > 0 && totals.failures === 0 ? [`${unacknowledged} memories no acknowledged write created`] : []),
      ...(serverExit !== 0 ? [`the server stopped with ${serverExit}, not 0`] : []),
    ];
    summary = {
      startedAt: startedAt.toISOString(),
      options,
      database: scratch.name,
      loadSeconds,
      requestsPerSecond: totals.requests / loadSeconds,
      totals: { ...totals, unexpectedRateLimits },
      operations: operationSummary,
      failures: Object.fromEntries(failureReasons),
      failureExamples,
      rss: { idleKiB: idleRssKiB, startKiB: startRss?.rssKiB, peakKiB: peakRss?.rssKiB, peakSecond: peakRss?.second, endKiB: endRss?.rssKiB, afterCooldownKiB: idleAfterRssKiB, samples: rss },
      cpuSeconds: { server: cpuSeconds, soakClients: ownCpuSeconds, machineLoadAverage: os.loadavg()[0] },
      server: { exit: serverExit, logLevels: serverLog.levels, httpStatuses: serverLog.statuses, errorLines: serverLog.errorLines },
      invariants,
      versionAccounting: { checked: versionsChecked, mismatches: versionMismatches, skipped: uncertainMemories.size, unacknowledged },
      passed: verdictProblems.length === 0,
      problems: verdictProblems,
    };
  } catch (error) {
    verdictProblems = [`the soak could not run: ${error instanceof Error ? error.message : String(error)}`];
    console.error(error);
    for (const [reason, count] of failureReasons) console.error(`  ${reason} ×${count}`);
    for (const example of failureExamples.slice(0, 5)) console.error(`  e.g. ${JSON.stringify(example)}`);
    summary = { startedAt: startedAt.toISOString(), options, database: scratch.name, passed: false, problems: verdictProblems };
    if (server && serverExit === undefined) serverExit = await server.stop();
  } finally {
    agent.destroy();
    if (options.keep) {
      const kept = new URL(scratch.url);
      kept.password = kept.password ? '***' : '';
      console.log(`\nsoak: kept the database ${kept.toString()} and the server log ${logFile}`);
    } else {
      await scratch.drop();
      // The log is the only trace of a failed run: keep it then.
      if (verdictProblems.length === 0) fs.rmSync(logFile, { force: true });
      else console.log(`\nsoak: the server log stays in ${logFile}`);
    }
  }

  if (options.out) {
    fs.writeFileSync(options.out, `${JSON.stringify(summary, null, 2)}\n`);
    console.log(`soak: summary written to ${options.out}`);
  }
  console.log(verdictProblems.length === 0 ? '\nsoak: PASSED' : `\nsoak: FAILED — ${verdictProblems.join('; ')}`);
  return verdictProblems.length === 0 ? 0 : 1;
}

process.exit(await main());
