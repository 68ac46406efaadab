import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import { ROUTES, type RestRoute } from '../src/rest/routes.js';
import { RestClient, segment, type RestAnswer } from './support/rest.js';
import { useTestServer } from './support/server.js';
import { createKey, freshPair, idsInSnapshot, revokeKey, seedWorkspace, tenantSnapshot, type SeededWorkspace } from './support/workspace-fixture.js';

/**
 * The isolation and permission tables of the Forward REST API, generated over the route
 * list (rest/routes.ts) as test/isolation.test.ts and test/permissions.test.ts are over
 * GraphQL's root fields: a route without a request template below fails the test.
 *
 * Isolation: workspace B sends every route's requests with workspace A's ids (and A's
 * ids as cursors and filters on B's own objects). B is answered exactly as for ids that
 * never existed, sees no id of A, and A's rows stay as they were.
 *
 * Permissions: no key and a revoked key are 401; an IDENTITY key may use only the three
 * identity routes, for its own identity (403 otherwise); ADMIN keys may use every route.
 * Every refusal changes nothing.
 */

const server = useTestServer();

/** The ids a request names. */
interface Targets {
  storeId: string;
  memoryId: string;
  versionId: string;
  identityId: string;
  templateId: string;
  mountedStoreId: string;
  idempotencyKey: string;
}

interface RequestSpec {
  path: string;
  query?: string;
  json?: unknown;
  headers?: Record<string, string>;
}

const targetsOf = (seed: SeededWorkspace): Targets => ({
  storeId: seed.store.id,
  memoryId: seed.memory.id,
  versionId: seed.memory.versionIds[1]!,
  identityId: seed.pair.identityId,
  templateId: seed.pair.templateId,
  mountedStoreId: seed.mountedStoreId,
  idempotencyKey: seed.store.input.idempotencyKey,
});

function missingTargets(): Targets {
  const pair = freshPair();
  return {
    storeId: newId('memoryStore'),
    memoryId: newId('memory'),
    versionId: newId('memoryVersion'),
    identityId: pair.identityId,
    templateId: pair.templateId,
    mountedStoreId: newId('memoryStore'),
    idempotencyKey: `never-used-${pair.templateId}`,
  };
}

const store = (t: Targets) => `/memory_stores/${segment(t.storeId)}`;
const pairPath = (t: Targets) => `/identities/${segment(t.identityId)}/templates/${segment(t.templateId)}/memory_stores`;

/**
 * Each route's requests: `t` holds the ids asked for (A's, or ids that never existed), `own`
 * is the caller's own seeded workspace (for A's ids used as cursors and filters on its own
 * lists). The first request of each route is the one the permission table sends.
 */
const TEMPLATES: Record<string, (t: Targets, own: SeededWorkspace) => RequestSpec[]> = {
  createMemoryStore: (t) => [{ path: '/memory_stores', json: { name: 'made by B' }, headers: { 'idempotency-key': t.idempotencyKey } }],
  listMemoryStores: (t) => [{ path: '/memory_stores', query: 'limit=100' }, { path: '/memory_stores', query: `after_id=${segment(t.storeId)}` }, { path: '/memory_stores', query: `before_id=${segment(t.storeId)}&system_managed=false` }],
  getMemoryStore: (t) => [{ path: store(t) }],
  updateMemoryStore: (t) => [{ path: store(t), json: { name: 'renamed by B', metadata: { by: 'b' } } }],
  archiveMemoryStore: (t) => [{ path: `${store(t)}/archive` }],
  deleteMemoryStore: (t) => [{ path: store(t) }],
  createMemory: (t) => [{ path: `${store(t)}/memories`, json: { path: 'from/b.md', content: 'b' } }],
  listMemories: (t, own) => [
    { path: `${store(t)}/memories` },
    { path: `/memory_stores/${segment(own.store.id)}/memories`, query: `after_id=${segment(t.memoryId)}` },
    { path: `/memory_stores/${segment(own.store.id)}/memories`, query: `before_id=${segment(t.memoryId)}&path_prefix=notes%2F` },
  ],
  getMemory: (t, own) => [{ path: `${store(t)}/memories/${segment(t.memoryId)}` }, { path: `/memory_stores/${segment(own.store.id)}/memories/${segment(t.memoryId)}` }],
  updateMemory: (t, own) => [
    { path: `${store(t)}/memories/${segment(t.memoryId)}`, json: { content: 'overwritten by B' } },
    { path: `/memory_stores/${segment(own.store.id)}/memories/${segment(t.memoryId)}`, json: { content: 'overwritten by B' } },
  ],
  deleteMemory: (t, own) => [{ path: `${store(t)}/memories/${segment(t.memoryId)}` }, { path: `/memory_stores/${segment(own.store.id)}/memories/${segment(t.memoryId)}` }],
  listMemoryVersions: (t, own) => [
    { path: `${store(t)}/memory_versions` },
    { path: `/memory_stores/${segment(own.store.id)}/memory_versions`, query: `memory_id=${segment(t.memoryId)}` },
    { path: `/memory_stores/${segment(own.store.id)}/memory_versions`, query: `after_id=${segment(t.versionId)}` },
  ],
  getMemoryVersion: (t, own) => [{ path: `${store(t)}/memory_versions/${segment(t.versionId)}` }, { path: `/memory_stores/${segment(own.store.id)}/memory_versions/${segment(t.versionId)}` }],
  redactMemoryVersion: (t, own) => [
    { path: `${store(t)}/memory_versions/${segment(t.versionId)}/redact` },
    { path: `/memory_stores/${segment(own.store.id)}/memory_versions/${segment(t.versionId)}/redact` },
  ],
  mountMemoryStore: (t, own) => [
    { path: pairPath(t), json: { memory_store_id: t.mountedStoreId } },
    { path: pairPath({ ...t, identityId: own.pair.identityId, templateId: own.pair.templateId }), json: { memory_store_id: t.storeId } },
  ],
  listMounts: (t) => [{ path: pairPath(t) }],
  unmountMemoryStore: (t) => [{ path: `${pairPath(t)}/${segment(t.mountedStoreId)}` }],
};

function send(client: RestClient, route: RestRoute, spec: RequestSpec): Promise<RestAnswer> {
  return client.send(route.method, spec.path, { query: spec.query, json: spec.json, headers: spec.headers });
}

const API_ID = /\b(?:memstore|mem|memver|sesn|key)_[0-9a-z]{20}\b/g;
const INSTANT = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;

/** An answer with the ids asked for, every id B's writes made, instants and the request id written as placeholders. */
function normalized(answer: RestAnswer, asked: Targets): string {
  const { request_id: _requestId, ...body } = (answer.body ?? {}) as Record<string, unknown>;
  let text = JSON.stringify({ status: answer.status, body });
  for (const [name, value] of Object.entries(asked)) text = text.split(value).join(`<${name}>`);
  return text.replace(API_ID, '<id>').replace(INSTANT, '<instant>');
}

describe('the route list', () => {
  it('has a request template for every route, and no template for a route that does not exist', () => {
    expect(Object.keys(TEMPLATES).sort()).toEqual(ROUTES.map((route) => route.operationId).sort());
  });
});

describe('Forward REST isolation, generated over the route list', () => {
  let a: SeededWorkspace;
  let b: SeededWorkspace;
  let bRest: RestClient;
  let aIds: Set<string>;

  beforeAll(async () => {
    a = await seedWorkspace(server);
    b = await seedWorkspace(server);
    bRest = new RestClient(server.app, b.admin.token);
    aIds = idsInSnapshot(await tenantSnapshot(server.db, a.admin.workspaceId));
  });

  it.each(ROUTES.map((route) => [route.method, route.path, route] as const))('%s %s answers B as if A\'s ids never existed, shows none of A and changes nothing of A', async (_method, _path, route) => {
    const before = await tenantSnapshot(server.db, a.admin.workspaceId);
    const foreign = targetsOf(a);
    const missing = missingTargets();
    const foreignRequests = TEMPLATES[route.operationId]!(foreign, b);
    const missingRequests = TEMPLATES[route.operationId]!(missing, b);
    for (const [index, request] of foreignRequests.entries()) {
      const foreignAnswer = await send(bRest, route, request);
      const missingAnswer = await send(bRest, route, missingRequests[index]!);
      expect(foreignAnswer.status, JSON.stringify(foreignAnswer.body)).toBeLessThan(500);
      expect(normalized(foreignAnswer, foreign), request.path).toEqual(normalized(missingAnswer, missing));
      // An error may name the id B asked for; no other id of A may appear.
      const sent = new Set([...JSON.stringify(request).matchAll(API_ID)].map((match) => match[0]));
      for (const match of JSON.stringify(foreignAnswer.body).matchAll(API_ID)) expect(aIds.has(match[0]) && !sent.has(match[0]), `${match[0]} of A in B's answer`).toBe(false);
      expect(foreignAnswer.status === 200 || foreignAnswer.status === 400 || foreignAnswer.status === 404, JSON.stringify(foreignAnswer.body)).toBe(true);
    }
    expect(await tenantSnapshot(server.db, a.admin.workspaceId)).toEqual(before);
  });
});

describe('Forward REST permissions, generated over the route list', () => {
  let seed: SeededWorkspace;
  let otherIdentity: RestClient;
  let revoked: RestClient;

  /** The routes an IDENTITY key may use, for its own identity. */
  const IDENTITY_ROUTES = new Set(['mountMemoryStore', 'listMounts', 'unmountMemoryStore']);

  beforeAll(async () => {
    seed = await seedWorkspace(server);
    otherIdentity = new RestClient(server.app, (await createKey(seed.admin, 'IDENTITY', freshPair().identityId)).token);
    const key = await createKey(seed.admin, 'ADMIN');
    await revokeKey(seed.admin, key.id);
    revoked = new RestClient(server.app, key.token);
  });

  const refusedWithoutChange = async (client: RestClient, route: RestRoute, status: number, type: string) => {
    const before = await tenantSnapshot(server.db, seed.admin.workspaceId);
    const answer = await send(client, route, TEMPLATES[route.operationId]!(targetsOf(seed), seed)[0]!);
    expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    expect(answer.body.error.type).toBe(type);
    expect(answer.body.request_id).toBe(answer.headers.get('x-request-id'));
    expect(await tenantSnapshot(server.db, seed.admin.workspaceId)).toEqual(before);
  };

  it.each(ROUTES.map((route) => [route.method, route.path, route] as const))('%s %s: no key and a revoked key are 401; an IDENTITY key of another identity is 403; nothing changes', async (_method, _path, route) => {
    await refusedWithoutChange(new RestClient(server.app, null), route, 401, 'authentication_error');
    await refusedWithoutChange(revoked, route, 401, 'authentication_error');
    await refusedWithoutChange(otherIdentity, route, 403, 'permission_error');
  });

  it.each(ROUTES.map((route) => [route.method, route.path, route] as const))('%s %s: an IDENTITY key of the pair\'s own identity is let through only on the identity routes', async (_method, _path, route) => {
    const own = new RestClient(server.app, seed.identityKey.token);
    if (!IDENTITY_ROUTES.has(route.operationId)) {
      await refusedWithoutChange(own, route, 403, 'permission_error');
      return;
    }
    const answer = await send(own, route, TEMPLATES[route.operationId]!(targetsOf(seed), seed)[0]!);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  });

  it.each(ROUTES.map((route) => [route.method, route.path, route] as const))('%s %s: an ADMIN key is let through', async (_method, _path, route) => {
    const fresh = await seedWorkspace(server);
    const answer = await send(new RestClient(server.app, fresh.admin.token), route, TEMPLATES[route.operationId]!(targetsOf(fresh), fresh)[0]!);
    // The mounted store cannot be deleted while mounted: a conflict, not a refusal of the key.
    expect(answer.status === 200 || answer.status === 409, JSON.stringify(answer.body)).toBe(true);
    expect([401, 403]).not.toContain(answer.status);
  });
});
