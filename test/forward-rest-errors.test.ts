import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { MAX_EXPLICIT_MOUNTS_PER_PAIR, MAX_REQUEST_BODY_BYTES } from '../src/domain/limits.js';
import { REST_ERROR_CODES } from '../src/rest/errors.js';
import { createLogger } from '../src/logger.js';
import { archiveStore, createMemory, createStore, mountStore, newPair, startSession, type Pair } from './support/builders.js';
import { RestClient, segment, type RestAnswer } from './support/rest.js';
import { useTestServer, type TestClient } from './support/server.js';
import { createKey, revokeKey, tenantSnapshot } from './support/workspace-fixture.js';
import { standInHandle } from './support/database.js';

/**
 * Every error of FORWARD-REST.md's table: the status, `error.type` and `error.code`, a
 * `request_id` equal to the response's x-request-id, and nothing written — every row of the
 * workspace is the same after the refused request as before it.
 */

const server = useTestServer();

interface World {
  admin: TestClient;
  rest: RestClient;
  store: { id: string };
  memory: { id: string; path: string; contentSha256: string };
  archived: { id: string };
  mounted: { id: string };
  pair: Pair;
  defaultStoreId: string;
  fullPair: Pair;
  spareStoreId: string;
  redactedVersionId: string;
  identityRest: RestClient;
  otherWorkspaceStoreId: string;
  otherStore: { id: string };
}

let world: World;

beforeAll(async () => {
  const admin = await server.newWorkspace();
  const rest = new RestClient(server.app, admin.token);
  const store = await createStore(admin, { name: 'main' });
  const memory = await createMemory(admin, store.id, { path: 'notes/a.md', content: 'alpha' });
  const archived = await createStore(admin, { name: 'archived' });
  await archiveStore(admin, archived.id);
  const mounted = await createStore(admin, { name: 'mounted' });
  const pair = newPair();
  const session = await startSession(admin, pair);
  await mountStore(admin, mounted.id, pair);
  const fullPair = newPair();
  for (let index = 0; index < MAX_EXPLICIT_MOUNTS_PER_PAIR; index += 1) await mountStore(admin, (await createStore(admin, { name: `full ${index}` })).id, fullPair);
  const spare = await createStore(admin, { name: 'spare' });
  const redacted = await rest.get(`/memory_stores/${segment(store.id)}/memory_versions`);
  const redactedVersionId = redacted.body.data[0].id as string;
  expect((await rest.post(`/memory_stores/${segment(store.id)}/memory_versions/${segment(redactedVersionId)}/redact`)).status).toBe(200);
  const identity = await createKey(admin, 'IDENTITY', pair.identityId);
  const other = await server.newWorkspace();
  const otherStore = await createStore(other, { name: 'elsewhere' });
  const memoryAnswer = await rest.get(`/memory_stores/${segment(store.id)}/memories/${segment(memory.id)}`);
  world = {
    admin,
    rest,
    store,
    memory: { id: memory.id, path: memory.path, contentSha256: memoryAnswer.body.content_sha256 },
    archived,
    mounted,
    pair,
    defaultStoreId: session.defaultMemoryStore.id,
    fullPair,
    spareStoreId: spare.id,
    redactedVersionId,
    identityRest: new RestClient(server.app, identity.token),
    otherWorkspaceStoreId: otherStore.id,
    otherStore,
  };
});

interface ErrorCase {
  says: string;
  status: number;
  type: string;
  code: (typeof REST_ERROR_CODES)[number];
  send(world: World): Promise<RestAnswer>;
  also?(answer: RestAnswer, world: World): void;
}

const pairPath = (pair: Pair) => `/identities/${segment(pair.identityId)}/templates/${segment(pair.templateId)}/memory_stores`;

const CASES: ErrorCase[] = [
  {
    says: 'a blank name fails validation, naming the field',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.post('/memory_stores', { json: { name: '   ', metadata: { created_by: 'me' } }, headers: { 'idempotency-key': 'e-1' } }),
    also: (answer) =>
      expect(answer.body.issues).toEqual([
        { field: ['name'], message: 'must not be blank' },
        { field: ['metadata', 'created_by'], message: '"created_by" is reserved: the server sets it' },
      ]),
  },
  {
    says: 'a body of the wrong JSON types fails validation, naming the field',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memories`, { json: { path: 7, content: 'x', metadata: { a: 1 } } }),
    also: (answer) => expect(answer.body.issues.map((issue: { field: unknown }) => issue.field)).toEqual([['path'], ['metadata', 'a']]),
  },
  {
    says: 'an invalid path fails validation',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memories`, { json: { path: '../etc/passwd', content: 'x' } }),
    also: (answer) => expect(answer.body.issues[0].field).toEqual(['path']),
  },
  {
    says: 'a malformed content_sha256 fails validation under its REST name',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memories/${segment(w.memory.id)}`, { json: { content: 'x', content_sha256: 'nope' } }),
    also: (answer) => expect(answer.body.issues[0].field).toEqual(['content_sha256']),
  },
  {
    says: 'limit=0 is a bad page argument',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.get('/memory_stores', { query: 'limit=0' }),
    also: (answer) => expect(answer.body.issues[0].field).toEqual(['limit']),
  },
  {
    says: 'limit=101 is a bad page argument',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.get(`/memory_stores/${segment(w.store.id)}/memories`, { query: 'limit=101' }),
  },
  {
    says: 'after_id and before_id together are a bad page argument',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.get(`/memory_stores/${segment(w.store.id)}/memories`, { query: `after_id=${w.memory.id}&before_id=${w.memory.id}` }),
  },
  {
    says: 'an after_id that never was in the list is a bad page argument',
    status: 400,
    type: 'invalid_request_error',
    code: 'validation_failed',
    send: (w) => w.rest.get(`/memory_stores/${segment(w.store.id)}/memory_versions`, { query: 'after_id=memver_00000000000000000000' }),
    also: (answer) => expect(answer.body.issues[0].field).toEqual(['after_id']),
  },
  {
    says: 'a create without Idempotency-Key is refused',
    status: 400,
    type: 'invalid_request_error',
    code: 'idempotency_key_required',
    send: (w) => w.rest.post('/memory_stores', { json: { name: 'no key' } }),
  },
  {
    says: 'malformed JSON is refused',
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_json',
    send: (w) => w.rest.post('/memory_stores', { raw: '{"name": "x"', headers: { 'content-type': 'application/json', 'idempotency-key': 'e-2' } }),
  },
  {
    says: 'no API key is 401',
    status: 401,
    type: 'authentication_error',
    code: 'authentication_failed',
    send: () => new RestClient(server.app, null).get('/memory_stores'),
  },
  {
    says: 'an unknown API key is 401',
    status: 401,
    type: 'authentication_error',
    code: 'authentication_failed',
    send: () => new RestClient(server.app, `msk_${'A'.repeat(40)}`).post('/memory_stores', { json: { name: 'x' }, headers: { 'idempotency-key': 'e-3' } }),
  },
  {
    says: 'an IDENTITY key outside its routes is 403',
    status: 403,
    type: 'permission_error',
    code: 'permission_denied',
    send: (w) => w.identityRest.post(`/memory_stores/${segment(w.store.id)}/archive`),
  },
  {
    says: 'an IDENTITY key on another identity is 403',
    status: 403,
    type: 'permission_error',
    code: 'permission_denied',
    send: (w) => w.identityRest.post(pairPath(w.fullPair), { json: { memory_store_id: w.spareStoreId } }),
  },
  {
    says: 'an unknown store is 404',
    status: 404,
    type: 'not_found_error',
    code: 'not_found',
    send: (w) => w.rest.post(`/memory_stores/memstore_00000000000000000000/memories`, { json: { path: 'x.md', content: 'x' } }),
  },
  {
    says: 'another workspace\'s store is 404',
    status: 404,
    type: 'not_found_error',
    code: 'not_found',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.otherWorkspaceStoreId)}`, { json: { name: 'stolen' } }),
  },
  {
    says: 'a memory under a store it does not belong to is 404',
    status: 404,
    type: 'not_found_error',
    code: 'not_found',
    send: (w) => w.rest.delete(`/memory_stores/${segment(w.mounted.id)}/memories/${segment(w.memory.id)}`),
  },
  {
    says: 'a route that does not exist is 404',
    status: 404,
    type: 'not_found_error',
    code: 'not_found',
    send: (w) => w.rest.post('/memory_stores/x/y/z'),
  },
  {
    says: 'a taken path is 409 path_conflict',
    status: 409,
    type: 'conflict_error',
    code: 'path_conflict',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memories`, { json: { path: w.memory.path, content: 'again' } }),
  },
  {
    says: 'writing to an archived store is 409 store_archived',
    status: 409,
    type: 'conflict_error',
    code: 'store_archived',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.archived.id)}/memories`, { json: { path: 'x.md', content: 'x' } }),
  },
  {
    says: 'deleting a mounted store is 409 store_mounted',
    status: 409,
    type: 'conflict_error',
    code: 'store_mounted',
    send: (w) => w.rest.delete(`/memory_stores/${segment(w.mounted.id)}`),
  },
  {
    says: 'archiving an archived store is 409 already_archived',
    status: 409,
    type: 'conflict_error',
    code: 'already_archived',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.archived.id)}/archive`, { raw: '', headers: { 'content-type': 'application/json' } }),
  },
  {
    says: 'redacting a redacted version is 409 already_redacted',
    status: 409,
    type: 'conflict_error',
    code: 'already_redacted',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memory_versions/${segment(w.redactedVersionId)}/redact`, { json: {} }),
  },
  {
    says: 'an eleventh explicit mount is 409 mount_limit_exceeded',
    status: 409,
    type: 'conflict_error',
    code: 'mount_limit_exceeded',
    send: (w) => w.rest.post(pairPath(w.fullPair), { json: { memory_store_id: w.spareStoreId } }),
  },
  {
    says: 'unmounting the default slot is 409 default_slot',
    status: 409,
    type: 'conflict_error',
    code: 'default_slot',
    send: (w) => w.identityRest.delete(`${pairPath(w.pair)}/${segment(w.defaultStoreId)}`),
  },
  {
    says: 'a stale content_sha256 is 409 content_sha256_mismatch with the current sha',
    status: 409,
    type: 'conflict_error',
    code: 'content_sha256_mismatch',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memories/${segment(w.memory.id)}`, { json: { content: 'beta', content_sha256: '0'.repeat(64) } }),
    also: (answer, w) => expect(answer.body.current_content_sha256).toBe(w.memory.contentSha256),
  },
  {
    says: 'a stale expected_content_sha256 on delete is 409 content_sha256_mismatch',
    status: 409,
    type: 'conflict_error',
    code: 'content_sha256_mismatch',
    send: (w) => w.rest.delete(`/memory_stores/${segment(w.store.id)}/memories/${segment(w.memory.id)}`, { query: `expected_content_sha256=${'f'.repeat(64)}` }),
    also: (answer, w) => expect(answer.body.current_content_sha256).toBe(w.memory.contentSha256),
  },
  {
    says: 'a body over the limit is 413',
    status: 413,
    type: 'invalid_request_error',
    code: 'payload_too_large',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memories`, { json: { path: 'big.md', content: 'x'.repeat(MAX_REQUEST_BODY_BYTES) } }),
  },
  {
    says: 'a body that is not JSON is 415',
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    send: (w) => w.rest.post(`/memory_stores/${segment(w.store.id)}/memories`, { raw: 'path=x.md&content=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
  },
];

function expectEnvelope(answer: RestAnswer, expected: { status: number; type: string; code: string }): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(expected.status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  expect(answer.body).toMatchObject({ type: 'error', error: { type: expected.type, code: expected.code, message: expect.any(String) } });
  expect(answer.body.request_id).toBe(answer.headers.get('x-request-id'));
  expect(answer.body.request_id).toBeTruthy();
  expect(REST_ERROR_CODES).toContain(answer.body.error.code);
}

describe('Forward REST errors: status, type, code, request id, and nothing written', () => {
  it.each(CASES.map((entry) => [entry.says, entry] as const))('%s', async (_says, entry) => {
    const before = await tenantSnapshot(server.db, world.admin.workspaceId);
    const answer = await entry.send(world);
    expectEnvelope(answer, entry);
    entry.also?.(answer, world);
    expect(await tenantSnapshot(server.db, world.admin.workspaceId)).toEqual(before);
  });

  it('a revoked key is 401', async () => {
    const key = await createKey(world.admin, 'ADMIN');
    await revokeKey(world.admin, key.id);
    const before = await tenantSnapshot(server.db, world.admin.workspaceId);
    const answer = await new RestClient(server.app, key.token).get('/memory_stores');
    expectEnvelope(answer, { status: 401, type: 'authentication_error', code: 'authentication_failed' });
    expect(await tenantSnapshot(server.db, world.admin.workspaceId)).toEqual(before);
  });

  it('the same Idempotency-Key with a different body is 409 idempotency_key_reused, and the first store stays the only one', async () => {
    const first = await world.rest.post('/memory_stores', { json: { name: 'keyed' }, headers: { 'idempotency-key': 'reused-key' } });
    expect(first.status).toBe(200);
    const before = await tenantSnapshot(server.db, world.admin.workspaceId);
    const answer = await world.rest.post('/memory_stores', { json: { name: 'keyed, but other' }, headers: { 'idempotency-key': 'reused-key' } });
    expectEnvelope(answer, { status: 409, type: 'conflict_error', code: 'idempotency_key_reused' });
    expect(await tenantSnapshot(server.db, world.admin.workspaceId)).toEqual(before);
  });

  it('a rate-limited key is 429 rate_limited with Retry-After and retry-after-ms', async () => {
    let now = 0;
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false, rateLimit: { perSecond: 1, burst: 1 } }, database: server.database.handle, clock: () => now });
    const rest = new RestClient(app, world.admin.token);
    expect((await rest.get('/memory_stores')).status).toBe(200);
    const before = await tenantSnapshot(server.db, world.admin.workspaceId);
    const answer = await rest.post('/memory_stores', { json: { name: 'too fast' }, headers: { 'idempotency-key': 'e-429' } });
    expectEnvelope(answer, { status: 429, type: 'rate_limit_error', code: 'rate_limited' });
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.headers.get('retry-after-ms')).toBe('1000');
    expect(await tenantSnapshot(server.db, world.admin.workspaceId)).toEqual(before);
    now += 1000;
    expect((await rest.get('/memory_stores')).status).toBe(200);
  });

  it('an unexpected failure is 500 api_error internal_error, masked, and logged with the request id', async () => {
    const lines: string[] = [];
    const failingDb = new Proxy(server.db, {
      get(target, property, receiver) {
        if (property === 'transaction') return () => Promise.reject(new Error('select secret_column from somewhere'));
        return Reflect.get(target, property, receiver);
      },
    });
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: standInHandle(failingDb), logger: createLogger('info', (line) => lines.push(line)) });
    const before = await tenantSnapshot(server.db, world.admin.workspaceId);
    const answer = await new RestClient(app, world.admin.token).post(`/memory_stores/${segment(world.spareStoreId)}/archive`);
    expectEnvelope(answer, { status: 500, type: 'api_error', code: 'internal_error' });
    expect(answer.body.error.message).toBe('Unexpected error.');
    expect(JSON.stringify(answer.body)).not.toContain('secret_column');
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'unexpected error');
    expect(logged.requestId).toBe(answer.body.request_id);
    expect(await tenantSnapshot(server.db, world.admin.workspaceId)).toEqual(before);
  });

  it('an unreachable database is 503 api_error database_unavailable with Retry-After', async () => {
    const failingDb = new Proxy(server.db, {
      get(target, property, receiver) {
        if (property === 'transaction') return () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
        return Reflect.get(target, property, receiver);
      },
    });
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: standInHandle(failingDb) });
    const before = await tenantSnapshot(server.db, world.admin.workspaceId);
    const answer = await new RestClient(app, world.admin.token).post(`/memory_stores/${segment(world.spareStoreId)}/archive`);
    expectEnvelope(answer, { status: 503, type: 'api_error', code: 'database_unavailable' });
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.headers.get('retry-after-ms')).toBe('1000');
    expect(await tenantSnapshot(server.db, world.admin.workspaceId)).toEqual(before);
  });

  it('a request past its time limit is 503 api_error request_timeout', async () => {
    const slowDb = new Proxy(server.db, {
      get(target, property, receiver) {
        if (property === 'transaction') return () => new Promise((_resolve, reject) => setTimeout(() => reject(new Error('too late')), 600));
        return Reflect.get(target, property, receiver);
      },
    });
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false, requestTimeoutMs: 200 }, database: standInHandle(slowDb) });
    const before = await tenantSnapshot(server.db, world.admin.workspaceId);
    const answer = await new RestClient(app, world.admin.token).post(`/memory_stores/${segment(world.spareStoreId)}/archive`);
    expectEnvelope(answer, { status: 503, type: 'api_error', code: 'request_timeout' });
    expect(await tenantSnapshot(server.db, world.admin.workspaceId)).toEqual(before);
  });
});
