import { and, eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { memories, memoryStoreMounts, memoryStores, memoryVersions, requestReplays } from '../src/db/schema.js';
import { sha256Hex } from '../src/domain/memories/records.js';
import { createApp } from '../src/app.js';
import { newId } from '../src/domain/ids.js';
import { ROUTES } from '../src/rest/routes.js';
import { apiKeyIdOf, memoryRows, mountRows, newPair, startSession, storeRow, versionRows } from './support/builders.js';
import { RestClient, segment, type RestAnswer } from './support/rest.js';
import { useTestServer, type TestClient } from './support/server.js';

/**
 * One contract test per route of the Forward REST API (FORWARD-REST.md): each replays the
 * request the TypeScript SDK sends — its method, path (ids percent-encoded), query, headers
 * (unknown X-Qoder-* ones included) and body — and asserts the status, every field of the
 * answer (which must also fit the route's declared shape exactly) and the rows behind it.
 */

const server = useTestServer();

const ID = { store: /^memstore_[0-9a-z]{20}$/, memory: /^mem_[0-9a-z]{20}$/, version: /^memver_[0-9a-z]{20}$/ };
const iso = (date: Date | null) => (date === null ? null : date.toISOString());

/** Asserts a 200 whose body fits the route's declared answer exactly, and returns the body. */
function ok(operationId: string, answer: RestAnswer) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  expect(answer.headers.get('x-request-id')).toBeTruthy();
  const route = ROUTES.find((candidate) => candidate.operationId === operationId)!;
  route.answer.parse(answer.body);
  return answer.body;
}

describe('the Forward REST API, route by route, as the TypeScript SDK calls it', () => {
  let admin: TestClient;
  let rest: RestClient;
  let workspaceId: string;
  let apiKeyId: string;
  const pair = newPair();
  let storeId: string;
  let memoryId: string;
  let versionIds: string[] = [];

  beforeAll(async () => {
    admin = await server.newWorkspace();
    rest = new RestClient(server.app, admin.token);
    workspaceId = admin.workspaceId;
    apiKeyId = await apiKeyIdOf(server.db, workspaceId);
  });

  const storeAnswer = async (id: string, identityTemplateCount: number) => {
    const row = (await storeRow(server.db, workspaceId, id))!;
    return {
      id,
      type: 'memory_store',
      name: row.name,
      description: row.description,
      status: row.status,
      entry_count: row.entryCount,
      total_size: row.totalSize,
      metadata: row.metadata,
      system_managed: row.systemManaged,
      identity_id: row.identityId,
      created_at: iso(row.createdAt),
      updated_at: iso(row.updatedAt),
      archived_at: iso(row.archivedAt),
      binding_info: { identity_template_count: identityTemplateCount },
    };
  };

  it('1. POST /memory_stores with Idempotency-Key creates a store ("created_by": "forward" added) and answers it', async () => {
    const answer = await rest.post('/memory_stores', {
      json: { name: 'project-alpha-memory', description: 'Agent knowledge base', metadata: { team: 'backend' } },
      headers: { 'idempotency-key': 'sdk-create-0001' },
    });
    const body = ok('createMemoryStore', answer);
    expect(body.id).toMatch(ID.store);
    storeId = body.id;
    const row = (await storeRow(server.db, workspaceId, storeId))!;
    expect(row).toMatchObject({ name: 'project-alpha-memory', description: 'Agent knowledge base', status: 'active', entryCount: 0, totalSize: 0, systemManaged: false, identityId: null, archivedAt: null });
    expect(row.metadata).toEqual({ team: 'backend', created_by: 'forward' });
    expect(body).toEqual(await storeAnswer(storeId, 0));
    expect(body.created_at).toBe(body.updated_at);
    const replays = await server.db.select().from(requestReplays).where(eq(requestReplays.workspaceId, workspaceId));
    expect(replays.map((replay) => [replay.key, replay.responseBody])).toEqual([['sdk-create-0001', JSON.stringify(body)]]);
  });

  it('2. GET /memory_stores?limit=…&system_managed=false lists user stores newest first in the page envelope', async () => {
    const second = ok('createMemoryStore', await rest.post('/memory_stores', { json: { name: 'second' }, headers: { 'idempotency-key': 'sdk-create-0002' } }));
    expect(second.description).toBe('');
    expect(second.metadata).toEqual({ created_by: 'forward' });
    await startSession(admin, pair); // a system-managed default store, left out by system_managed=false
    const body = ok('listMemoryStores', await rest.get('/memory_stores', { query: 'limit=20&system_managed=false' }));
    expect(body).toEqual({ data: [await storeAnswer(second.id, 0), await storeAnswer(storeId, 0)], first_id: second.id, last_id: storeId, has_more: false });
    const managed = ok('listMemoryStores', await rest.get('/memory_stores', { query: 'system_managed=true' }));
    expect(managed.data.map((store: { system_managed: boolean; identity_id: string }) => [store.system_managed, store.identity_id])).toEqual([[true, pair.identityId]]);
    expect(managed.data[0].binding_info).toEqual({ identity_template_count: 1 });
    const all = ok('listMemoryStores', await rest.get('/memory_stores'));
    expect(all.data).toHaveLength(3);
    const empty = ok('listMemoryStores', await (await server.newWorkspace().then((other) => new RestClient(server.app, other.token))).get('/memory_stores'));
    expect(empty).toEqual({ data: [], first_id: null, last_id: null, has_more: false });
  });

  it('3. GET /memory_stores/{id} answers the store with every field, its id percent-encoded or not', async () => {
    const body = ok('getMemoryStore', await rest.get(`/memory_stores/${segment(storeId)}`));
    expect(body).toEqual(await storeAnswer(storeId, 0));
    const everyCharacterEncoded = [...storeId].map((character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`).join('');
    expect(ok('getMemoryStore', await rest.get(`/memory_stores/${everyCharacterEncoded}`))).toEqual(body);
  });

  it('4. POST /memory_stores/{id} changes the name and replaces the metadata (created_by kept); an empty body or null is 400', async () => {
    const body = ok('updateMemoryStore', await rest.post(`/memory_stores/${segment(storeId)}`, { json: { name: 'project-alpha', metadata: { team: 'platform', tier: 'gold' } } }));
    const row = (await storeRow(server.db, workspaceId, storeId))!;
    expect(row.name).toBe('project-alpha');
    expect(row.description).toBe('Agent knowledge base');
    expect(row.metadata).toEqual({ team: 'platform', tier: 'gold', created_by: 'forward' });
    expect(body).toEqual(await storeAnswer(storeId, 0));
    expect(body.updated_at > body.created_at).toBe(true);
    for (const request of [{ json: {} }, { json: { name: null } }, {}]) {
      const refused = await rest.post(`/memory_stores/${segment(storeId)}`, request);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', code: 'validation_failed' });
    }
    expect((await storeRow(server.db, workspaceId, storeId))!.updatedAt).toEqual(row.updatedAt);
  });

  it('7. POST /memory_stores/{id}/memories creates a memory and its created version, and counts it in the store', async () => {
    const answer = await rest.post(`/memory_stores/${segment(storeId)}/memories`, {
      json: { path: 'decisions/2026-01-db.md', content: '# Use PostgreSQL\n', metadata: { topic: 'db' } },
    });
    const body = ok('createMemory', answer);
    expect(body.id).toMatch(ID.memory);
    memoryId = body.id;
    const [row] = await memoryRows(server.db, workspaceId, storeId);
    expect(body).toEqual({
      id: memoryId,
      type: 'memory',
      memory_store_id: storeId,
      path: 'decisions/2026-01-db.md',
      content: '# Use PostgreSQL\n',
      content_size_bytes: 17,
      content_sha256: sha256Hex('# Use PostgreSQL\n'),
      metadata: { topic: 'db' },
      created_at: iso(row!.createdAt),
      updated_at: iso(row!.updatedAt),
    });
    const versions = await versionRows(server.db, workspaceId, storeId, memoryId);
    expect(versions.map((version) => [version.operation, version.path, version.content, version.createdByApiKeyId])).toEqual([['created', 'decisions/2026-01-db.md', '# Use PostgreSQL\n', apiKeyId]]);
    versionIds = versions.map((version) => version.id);
    expect(await storeRow(server.db, workspaceId, storeId)).toMatchObject({ entryCount: 1, totalSize: 17 });
  });

  it('8. GET /memory_stores/{id}/memories?path_prefix=decisions%2F lists memories in path order without content', async () => {
    ok('createMemory', await rest.post(`/memory_stores/${segment(storeId)}/memories`, { json: { path: 'decisions/2026-02-queue.md', content: 'Use a queue' } }));
    ok('createMemory', await rest.post(`/memory_stores/${segment(storeId)}/memories`, { json: { path: 'notes/todo.md', content: 'todo' } }));
    const body = ok('listMemories', await rest.get(`/memory_stores/${segment(storeId)}/memories`, { query: 'limit=20&path_prefix=decisions%2F' }));
    const rows = (await memoryRows(server.db, workspaceId, storeId)).filter((row) => row.path.startsWith('decisions/'));
    expect(body).toEqual({
      data: rows.map((row) => ({
        id: row.id,
        type: 'memory',
        memory_store_id: storeId,
        path: row.path,
        content_size_bytes: row.contentSizeBytes,
        content_sha256: row.contentSha256,
        metadata: row.metadata,
        created_at: iso(row.createdAt),
        updated_at: iso(row.updatedAt),
      })),
      first_id: rows[0]!.id,
      last_id: rows[1]!.id,
      has_more: false,
    });
    for (const item of body.data) expect(Object.keys(item)).not.toContain('content');
  });

  it('9. GET /memory_stores/{id}/memories/{memory_id} answers the memory with its content (the compiled read and the handler alike)', async () => {
    const body = ok('getMemory', await rest.get(`/memory_stores/${segment(storeId)}/memories/${segment(memoryId)}`));
    // The same route without compiled reads: its handler over the domain answers the very same bytes.
    const handlerOnly = new RestClient(createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, compiledReads: false }), admin.token);
    expect(ok('getMemory', await handlerOnly.get(`/memory_stores/${segment(storeId)}/memories/${segment(memoryId)}`))).toEqual(body);
    for (const client of [rest, handlerOnly]) {
      const elsewhere = await client.get(`/memory_stores/${segment(newId('memoryStore'))}/memories/${segment(memoryId)}`);
      expect(elsewhere.status).toBe(404);
      expect(elsewhere.body.error).toMatchObject({ type: 'not_found_error', code: 'not_found', message: `No memory with id "${memoryId}".` });
    }
    const [row] = (await memoryRows(server.db, workspaceId, storeId)).filter((candidate) => candidate.id === memoryId);
    expect(body).toEqual({
      id: memoryId,
      type: 'memory',
      memory_store_id: storeId,
      path: row!.path,
      content: row!.content,
      content_size_bytes: row!.contentSizeBytes,
      content_sha256: row!.contentSha256,
      metadata: row!.metadata,
      created_at: iso(row!.createdAt),
      updated_at: iso(row!.updatedAt),
    });
  });

  it('10. POST /memory_stores/{id}/memories/{memory_id} with content_sha256 replaces the content, keeps path and metadata, writes an updated version', async () => {
    const before = (await memoryRows(server.db, workspaceId, storeId)).find((row) => row.id === memoryId)!;
    const content = '# Use PostgreSQL 17\n';
    const body = ok('updateMemory', await rest.post(`/memory_stores/${segment(storeId)}/memories/${segment(memoryId)}`, { json: { content, content_sha256: before.contentSha256 } }));
    const after = (await memoryRows(server.db, workspaceId, storeId)).find((row) => row.id === memoryId)!;
    expect(after).toMatchObject({ path: before.path, content, metadata: { topic: 'db' }, contentSizeBytes: 20, contentSha256: sha256Hex(content), versionSequence: 2 });
    expect(body).toEqual({
      id: memoryId,
      type: 'memory',
      memory_store_id: storeId,
      path: before.path,
      content,
      content_size_bytes: 20,
      content_sha256: sha256Hex(content),
      metadata: { topic: 'db' },
      created_at: iso(before.createdAt),
      updated_at: iso(after.updatedAt),
    });
    const versions = await versionRows(server.db, workspaceId, storeId, memoryId);
    expect(versions.map((version) => [version.operation, version.content])).toEqual([
      ['created', '# Use PostgreSQL\n'],
      ['updated', content],
    ]);
    versionIds = versions.map((version) => version.id);
    const withMetadata = ok('updateMemory', await rest.post(`/memory_stores/${segment(storeId)}/memories/${segment(memoryId)}`, { json: { content, metadata: { topic: 'database' } } }));
    expect(withMetadata.metadata).toEqual({ topic: 'database' });
  });

  it('12. GET /memory_stores/{id}/memory_versions?memory_id=… lists the memory\'s versions newest first without content', async () => {
    const body = ok('listMemoryVersions', await rest.get(`/memory_stores/${segment(storeId)}/memory_versions`, { query: `limit=20&memory_id=${segment(memoryId)}` }));
    const rows = (await versionRows(server.db, workspaceId, storeId, memoryId)).reverse();
    expect(body).toEqual({
      data: rows.map((row) => ({
        id: row.id,
        type: 'memory_version',
        memory_store_id: storeId,
        memory_id: memoryId,
        path: row.path,
        content_size_bytes: row.contentSizeBytes,
        content_sha256: row.contentSha256,
        operation: row.operation,
        redacted: false,
        redacted_at: null,
        created_at: iso(row.createdAt),
        created_by: { type: 'api_key', api_key_id: apiKeyId },
      })),
      first_id: rows[0]!.id,
      last_id: rows.at(-1)!.id,
      has_more: false,
    });
    const all = ok('listMemoryVersions', await rest.get(`/memory_stores/${segment(storeId)}/memory_versions`));
    expect(all.data).toHaveLength((await versionRows(server.db, workspaceId, storeId)).length);
  });

  it('13. GET /memory_stores/{id}/memory_versions/{version_id} answers the version with its content', async () => {
    const [row] = await versionRows(server.db, workspaceId, storeId, memoryId);
    const body = ok('getMemoryVersion', await rest.get(`/memory_stores/${segment(storeId)}/memory_versions/${segment(row!.id)}`));
    expect(body).toEqual({
      id: row!.id,
      type: 'memory_version',
      memory_store_id: storeId,
      memory_id: memoryId,
      path: row!.path,
      content: '# Use PostgreSQL\n',
      content_size_bytes: 17,
      content_sha256: sha256Hex('# Use PostgreSQL\n'),
      operation: 'created',
      redacted: false,
      redacted_at: null,
      created_at: iso(row!.createdAt),
      created_by: { type: 'api_key', api_key_id: apiKeyId },
    });
  });

  it('14. POST …/memory_versions/{version_id}/redact (content-length: 0, no body) clears the content; the live memory is untouched', async () => {
    const versionId = versionIds[0]!;
    const live = (await memoryRows(server.db, workspaceId, storeId)).find((row) => row.id === memoryId)!;
    const body = ok('redactMemoryVersion', await rest.post(`/memory_stores/${segment(storeId)}/memory_versions/${segment(versionId)}/redact`));
    const [row] = await server.db.select().from(memoryVersions).where(and(eq(memoryVersions.workspaceId, workspaceId), eq(memoryVersions.id, versionId)));
    expect(row).toMatchObject({ content: null, redactedByApiKeyId: apiKeyId });
    expect(row!.redactedAt).not.toBeNull();
    expect(body).toEqual({
      id: versionId,
      type: 'memory_version',
      memory_store_id: storeId,
      memory_id: memoryId,
      path: row!.path,
      content: null,
      content_size_bytes: 17,
      content_sha256: sha256Hex('# Use PostgreSQL\n'),
      operation: 'created',
      redacted: true,
      redacted_at: iso(row!.redactedAt),
      created_at: iso(row!.createdAt),
      created_by: { type: 'api_key', api_key_id: apiKeyId },
    });
    expect((await memoryRows(server.db, workspaceId, storeId)).find((candidate) => candidate.id === memoryId)).toEqual(live);
    const again = await rest.post(`/memory_stores/${segment(storeId)}/memory_versions/${segment(versionId)}/redact`, { raw: '{}', headers: { 'content-type': 'application/json' } });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ type: 'conflict_error', code: 'already_redacted' });
  });

  it('11. DELETE /memory_stores/{id}/memories/{memory_id}?expected_content_sha256=… deletes it with a deleted version, and answers the marker', async () => {
    const live = (await memoryRows(server.db, workspaceId, storeId)).find((row) => row.id === memoryId)!;
    const body = ok('deleteMemory', await rest.delete(`/memory_stores/${segment(storeId)}/memories/${segment(memoryId)}`, { query: `expected_content_sha256=${live.contentSha256}` }));
    expect(body).toEqual({ id: memoryId, type: 'memory_deleted', deleted: true });
    expect((await memoryRows(server.db, workspaceId, storeId)).map((row) => row.id)).not.toContain(memoryId);
    const versions = await versionRows(server.db, workspaceId, storeId, memoryId);
    expect(versions.at(-1)).toMatchObject({ operation: 'deleted', path: live.path, content: live.content, contentSha256: live.contentSha256 });
    const gone = await rest.get(`/memory_stores/${segment(storeId)}/memories/${segment(memoryId)}`);
    expect(gone.status).toBe(404);
  });

  it('15. POST /identities/{idn}/templates/{tmpl}/memory_stores mounts the store read-only and answers the mount', async () => {
    const body = ok('mountMemoryStore', await rest.post(`/identities/${segment(pair.identityId)}/templates/${segment(pair.templateId)}/memory_stores`, { json: { memory_store_id: storeId } }));
    const rows = await mountRows(server.db, workspaceId, pair);
    const explicit = rows.find((row) => row.memoryStoreId === storeId)!;
    expect(explicit).toMatchObject({ access: 'read_only', systemManaged: false });
    const store = (await storeRow(server.db, workspaceId, storeId))!;
    expect(body).toEqual({
      memory_store_id: storeId,
      identity_id: pair.identityId,
      template_id: pair.templateId,
      access: 'read_only',
      system_managed: false,
      name: 'project-alpha',
      status: 'active',
      entry_count: store.entryCount,
      created_at: iso(explicit.createdAt),
    });
    const again = ok('mountMemoryStore', await rest.post(`/identities/${segment(pair.identityId)}/templates/${segment(pair.templateId)}/memory_stores`, { json: { memory_store_id: storeId } }));
    expect(again).toEqual(body);
    expect(await mountRows(server.db, workspaceId, pair)).toHaveLength(2);
  });

  it('16. GET /identities/{idn}/templates/{tmpl}/memory_stores lists the default slot first, then the mounts', async () => {
    const body = ok('listMounts', await rest.get(`/identities/${segment(pair.identityId)}/templates/${segment(pair.templateId)}/memory_stores`));
    const rows = await mountRows(server.db, workspaceId, pair);
    const stores = await server.db.select().from(memoryStores).where(eq(memoryStores.workspaceId, workspaceId));
    const data = rows.map((row) => {
      const store = stores.find((candidate) => candidate.id === row.memoryStoreId)!;
      return {
        memory_store_id: row.memoryStoreId,
        identity_id: pair.identityId,
        template_id: pair.templateId,
        access: row.access,
        system_managed: row.systemManaged,
        name: store.name,
        status: store.status,
        entry_count: store.entryCount,
        created_at: iso(row.createdAt),
      };
    });
    expect(data.map((mount) => [mount.system_managed, mount.access])).toEqual([
      [true, 'read_write'],
      [false, 'read_only'],
    ]);
    expect(body).toEqual({ data, first_id: data[0]!.memory_store_id, last_id: data[1]!.memory_store_id, has_more: false });
  });

  it('17. DELETE /identities/{idn}/templates/{tmpl}/memory_stores/{id} unmounts it and answers the binding marker', async () => {
    const body = ok('unmountMemoryStore', await rest.delete(`/identities/${segment(pair.identityId)}/templates/${segment(pair.templateId)}/memory_stores/${segment(storeId)}`));
    expect(body).toEqual({ id: storeId, type: 'memory_store_binding_deleted', deleted: true });
    expect((await mountRows(server.db, workspaceId, pair)).map((row) => row.systemManaged)).toEqual([true]);
  });

  it('5. POST /memory_stores/{id}/archive (content-length: 0) archives the store', async () => {
    const body = ok('archiveMemoryStore', await rest.post(`/memory_stores/${segment(storeId)}/archive`));
    const row = (await storeRow(server.db, workspaceId, storeId))!;
    expect(row.status).toBe('archived');
    expect(row.archivedAt).not.toBeNull();
    expect(body).toEqual(await storeAnswer(storeId, 0));
    expect(body.archived_at).toBe(iso(row.archivedAt));
  });

  it('6. DELETE /memory_stores/{id} deletes an active store with its memories and versions, and answers the marker', async () => {
    const doomed = ok('createMemoryStore', await rest.post('/memory_stores', { json: { name: 'doomed' }, headers: { 'idempotency-key': 'sdk-create-0003' } }));
    ok('createMemory', await rest.post(`/memory_stores/${segment(doomed.id)}/memories`, { json: { path: 'a.md', content: 'a' } }));
    const body = ok('deleteMemoryStore', await rest.delete(`/memory_stores/${segment(doomed.id)}`));
    expect(body).toEqual({ id: doomed.id, type: 'memory_store_deleted', deleted: true });
    expect(await storeRow(server.db, workspaceId, doomed.id)).toBeUndefined();
    expect(await server.db.select().from(memories).where(and(eq(memories.workspaceId, workspaceId), eq(memories.memoryStoreId, doomed.id)))).toEqual([]);
    expect(await versionRows(server.db, workspaceId, doomed.id)).toEqual([]);
    expect(await server.db.select().from(memoryStoreMounts).where(and(eq(memoryStoreMounts.workspaceId, workspaceId), eq(memoryStoreMounts.memoryStoreId, doomed.id)))).toEqual([]);
  });
});
