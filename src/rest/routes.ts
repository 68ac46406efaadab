import { MAX_PAGE_SIZE } from '../domain/limits.js';
import { lastPathOfMemory, listMemoriesByStore } from '../domain/memories/reads.js';
import { memoryNotFound } from '../domain/memories/records.js';
import { createMemory, deleteMemory, updateMemory } from '../domain/memories/writes.js';
import { listMountsOfPair, mountMemoryStore, unmountMemoryStore } from '../domain/mounts.js';
import { archiveMemoryStore, createMemoryStore, deleteMemoryStore, listMemoryStores, loadMemoryStoresByIds, updateMemoryStore } from '../domain/stores.js';
import { listVersionsByStore, loadVersionsByIds, redactMemoryVersion, versionFilterOf } from '../domain/versions.js';
import { deletionMarker, memoryObject, memoryVersionObject, pageEnvelope } from './objects.js';
import { hasMore, pageWindow } from './paging.js';
import { compiledRoute, route, type RestRoute } from './route.js';
import { loadMemoryOfStore, loadStore, loadVersionOfStore, mountObjects, storeObject, storeObjects } from './route-loading.js';
import * as schemas from './schemas.js';

export type { RestRoute, RouteContext } from './route.js';

/**
 * The routes of the Forward REST API (FORWARD-REST.md, "Routes"), one declaration each:
 * method, path, the zod shapes of its parameters, query, body and answer, the action the
 * access policy judges, and the handler — which calls the domain functions GraphQL's
 * resolvers call and maps their records to the wire objects. http/forward-rest.ts runs
 * them behind the request stages; openapi.ts documents them from the same declarations.
 */

// ---------------------------------------------------------------------------------------
// The routes

const READ_STORES = { type: 'memoryStores.read' } as const;
const WRITE_STORES = { type: 'memoryStores.write' } as const;
const READ_MEMORIES = { type: 'memories.read' } as const;
const WRITE_MEMORIES = { type: 'memories.write' } as const;
const READ_VERSIONS = { type: 'memoryVersions.read' } as const;
const REDACT_VERSIONS = { type: 'memoryVersions.redact' } as const;

export const ROUTES: readonly RestRoute[] = [
  route({
    operationId: 'createMemoryStore',
    method: 'POST',
    path: '/memory_stores',
    summary: 'Create a memory store. Requires Idempotency-Key: a retry with the same key and body answers the first answer.',
    params: schemas.NoParams,
    query: schemas.NoQuery,
    body: schemas.CreateStoreBody,
    idempotencyKeyRequired: true,
    readOnly: false,
    answer: schemas.MemoryStoreObject,
    fieldNames: { idempotencyKey: 'Idempotency-Key' },
    action: () => WRITE_STORES,
    handle: async (context, { body, idempotencyKey }) =>
      storeObject(context, await createMemoryStore(context.db, context.viewer, { name: body.name, description: body.description, metadata: body.metadata, idempotencyKey }, context.now)),
  }),
  route({
    operationId: 'listMemoryStores',
    method: 'GET',
    path: '/memory_stores',
    summary: 'List memory stores, newest first.',
    params: schemas.NoParams,
    query: schemas.StoreListQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: true,
    answer: schemas.pageOf(schemas.MemoryStoreObject, 'memory stores'),
    action: () => READ_STORES,
    handle: async (context, { query }) => {
      const window = await pageWindow(query, async (id) => {
        const [store] = await loadMemoryStoresByIds(context.db, context.viewer, [id]);
        return store ? [store.createdAt, store.id] : null;
      });
      const systemManaged = query.system_managed === undefined ? undefined : query.system_managed === 'true';
      const page = await listMemoryStores(context.db, context.viewer, { systemManaged }, window);
      return pageEnvelope(await storeObjects(context, page.rows), hasMore(window, page));
    },
  }),
  route({
    operationId: 'getMemoryStore',
    method: 'GET',
    path: '/memory_stores/{memory_store_id}',
    summary: 'Get a memory store.',
    params: schemas.StoreParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: true,
    answer: schemas.MemoryStoreObject,
    action: () => READ_STORES,
    handle: async (context, { params }) => storeObject(context, await loadStore(context, params.memory_store_id)),
  }),
  route({
    operationId: 'updateMemoryStore',
    method: 'POST',
    path: '/memory_stores/{memory_store_id}',
    summary: 'Change the name, description or metadata (replaced whole) of an active store.',
    params: schemas.StoreParams,
    query: schemas.NoQuery,
    body: schemas.UpdateStoreBody,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.MemoryStoreObject,
    action: () => WRITE_STORES,
    handle: async (context, { params, body }) =>
      storeObject(context, await updateMemoryStore(context.db, context.viewer, { id: params.memory_store_id, name: body.name, description: body.description, metadata: body.metadata }, context.now)),
  }),
  route({
    operationId: 'archiveMemoryStore',
    method: 'POST',
    path: '/memory_stores/{memory_store_id}/archive',
    summary: 'Archive a store for good (no body).',
    params: schemas.StoreParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.MemoryStoreObject,
    action: () => WRITE_STORES,
    handle: async (context, { params }) => storeObject(context, await archiveMemoryStore(context.db, context.viewer, params.memory_store_id, context.now)),
  }),
  route({
    operationId: 'deleteMemoryStore',
    method: 'DELETE',
    path: '/memory_stores/{memory_store_id}',
    summary: 'Delete an active, unmounted store with its memories and versions.',
    params: schemas.StoreParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.StoreDeleted,
    action: () => WRITE_STORES,
    handle: async (context, { params }) => deletionMarker(await deleteMemoryStore(context.db, context.viewer, params.memory_store_id), 'memory_store_deleted'),
  }),
  route({
    operationId: 'createMemory',
    method: 'POST',
    path: '/memory_stores/{memory_store_id}/memories',
    summary: 'Create a memory (and its created version).',
    params: schemas.StoreParams,
    query: schemas.NoQuery,
    body: schemas.CreateMemoryBody,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.MemoryObject,
    action: () => WRITE_MEMORIES,
    handle: async (context, { params, body }) =>
      memoryObject(
        (await createMemory(context.db, context.viewer, { memoryStoreId: params.memory_store_id, path: body.path, content: body.content, metadata: body.metadata }, context.now, context.memoryWrites)).memory,
        true,
      ),
  }),
  route({
    operationId: 'listMemories',
    method: 'GET',
    path: '/memory_stores/{memory_store_id}/memories',
    summary: 'List a store\'s live memories in path order (byte order), without their content.',
    params: schemas.StoreParams,
    query: schemas.MemoryListQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: true,
    answer: schemas.pageOf(schemas.MemoryListItem, 'memories'),
    action: () => READ_MEMORIES,
    handle: async (context, { params, query }) => {
      const store = await loadStore(context, params.memory_store_id);
      const window = await pageWindow(query, async (id) => {
        const path = await lastPathOfMemory(context.db, context.viewer, store.id, id);
        return path === null ? null : [path];
      });
      const pages = await listMemoriesByStore(context.db, context.viewer, [store.id], 'PATH_ASC', { pathPrefix: query.path_prefix }, window);
      const page = pages.get(store.id)!;
      return pageEnvelope(page.rows.map((memory) => memoryObject(memory, false)), hasMore(window, page));
    },
  }),
  route({
    operationId: 'getMemory',
    method: 'GET',
    path: '/memory_stores/{memory_store_id}/memories/{memory_id}',
    summary: 'Get a live memory with its content.',
    params: schemas.MemoryParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: true,
    answer: schemas.MemoryObject,
    action: () => READ_MEMORIES,
    compiledRead: compiledRoute<{ memory_store_id: string; memory_id: string }>(
      'query RestGetMemory($id: ID!) { memory(id: $id) { id memoryStoreId path content contentSizeBytes contentSha256 metadata createdAt updatedAt } }',
      {
        variables: (params) => ({ id: params.memory_id }),
        answer: ({ memory }, params) => {
          if (!memory || memory.memoryStoreId !== params.memory_store_id) throw memoryNotFound(params.memory_id);
          return {
            id: memory.id,
            type: 'memory',
            memory_store_id: memory.memoryStoreId,
            path: memory.path,
            content: memory.content,
            content_size_bytes: memory.contentSizeBytes,
            content_sha256: memory.contentSha256,
            metadata: memory.metadata,
            created_at: memory.createdAt,
            updated_at: memory.updatedAt,
          };
        },
      },
    ),
    handle: async (context, { params }) => memoryObject(await loadMemoryOfStore(context, params.memory_store_id, params.memory_id), true),
  }),
  route({
    operationId: 'updateMemory',
    method: 'POST',
    path: '/memory_stores/{memory_store_id}/memories/{memory_id}',
    summary: 'Replace a memory\'s content (and metadata, when given); never renames.',
    params: schemas.MemoryParams,
    query: schemas.NoQuery,
    body: schemas.UpdateMemoryBody,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.MemoryObject,
    fieldNames: { expectedContentSha256: 'content_sha256' },
    action: () => WRITE_MEMORIES,
    handle: async (context, { params, body }) => {
      await loadMemoryOfStore(context, params.memory_store_id, params.memory_id);
      const input = { id: params.memory_id, content: body.content, metadata: body.metadata, expectedContentSha256: body.content_sha256 };
      return memoryObject((await updateMemory(context.db, context.viewer, input, context.now, context.memoryWrites)).memory, true);
    },
  }),
  route({
    operationId: 'deleteMemory',
    method: 'DELETE',
    path: '/memory_stores/{memory_store_id}/memories/{memory_id}',
    summary: 'Delete a memory (a deleted version keeps its last state).',
    params: schemas.MemoryParams,
    query: schemas.DeleteMemoryQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.MemoryDeleted,
    action: () => WRITE_MEMORIES,
    handle: async (context, { params, query }) => {
      await loadMemoryOfStore(context, params.memory_store_id, params.memory_id);
      const deleted = await deleteMemory(context.db, context.viewer, { id: params.memory_id, expectedContentSha256: query.expected_content_sha256 }, context.now);
      return deletionMarker(deleted.deletedMemoryId, 'memory_deleted');
    },
  }),
  route({
    operationId: 'listMemoryVersions',
    method: 'GET',
    path: '/memory_stores/{memory_store_id}/memory_versions',
    summary: 'List versions of the store\'s memories (deleted ones included), newest first, without their content.',
    params: schemas.StoreParams,
    query: schemas.VersionListQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: true,
    answer: schemas.pageOf(schemas.MemoryVersionListItem, 'memory versions'),
    action: () => READ_VERSIONS,
    handle: async (context, { params, query }) => {
      const store = await loadStore(context, params.memory_store_id);
      const filter = versionFilterOf({ memoryId: query.memory_id });
      const window = await pageWindow(query, async (id) => {
        const [version] = await loadVersionsByIds(context.db, context.viewer, [id]);
        return version && version.memoryStoreId === store.id ? [version.createdAt, version.id] : null;
      });
      const page = (await listVersionsByStore(context.db, context.viewer, [store.id], filter, window)).get(store.id)!;
      return pageEnvelope(page.rows.map((version) => memoryVersionObject(version, false)), hasMore(window, page));
    },
  }),
  route({
    operationId: 'getMemoryVersion',
    method: 'GET',
    path: '/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}',
    summary: 'Get a version with its content (null once redacted).',
    params: schemas.VersionParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: true,
    answer: schemas.MemoryVersionObject,
    action: () => READ_VERSIONS,
    handle: async (context, { params }) => memoryVersionObject(await loadVersionOfStore(context, params.memory_store_id, params.memory_version_id), true),
  }),
  route({
    operationId: 'redactMemoryVersion',
    method: 'POST',
    path: '/memory_stores/{memory_store_id}/memory_versions/{memory_version_id}/redact',
    summary: 'Remove a version\'s content for good (no body).',
    params: schemas.VersionParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.MemoryVersionObject,
    action: () => REDACT_VERSIONS,
    handle: async (context, { params }) => {
      await loadVersionOfStore(context, params.memory_store_id, params.memory_version_id);
      return memoryVersionObject(await redactMemoryVersion(context.db, context.viewer, params.memory_version_id, context.now), true);
    },
  }),
  route({
    operationId: 'mountMemoryStore',
    method: 'POST',
    path: '/identities/{identity_id}/templates/{template_id}/memory_stores',
    summary: 'Mount an active store on the (identity, template) pair, read-only; mounting again answers the first mount.',
    params: schemas.PairParams,
    query: schemas.NoQuery,
    body: schemas.MountBody,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.MountObject,
    action: (params) => ({ type: 'mounts.write', identityId: params.identity_id }),
    handle: async (context, { params, body }) => {
      const mount = await mountMemoryStore(context.db, context.viewer, { identityId: params.identity_id, templateId: params.template_id, memoryStoreId: body.memory_store_id }, context.now);
      return (await mountObjects(context, [mount]))[0];
    },
  }),
  route({
    operationId: 'listMounts',
    method: 'GET',
    path: '/identities/{identity_id}/templates/{template_id}/memory_stores',
    summary: 'List the stores mounted on the pair: its default slot first, then by mount time (one page).',
    params: schemas.PairParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: true,
    answer: schemas.pageOf(schemas.MountObject, 'mounts'),
    action: (params) => ({ type: 'mounts.read', identityId: params.identity_id }),
    handle: async (context, { params }) => {
      const window = { size: MAX_PAGE_SIZE, backward: false, after: null, before: null };
      const page = await listMountsOfPair(context.db, context.viewer, { identityId: params.identity_id, templateId: params.template_id }, window);
      const data = await mountObjects(context, page.rows);
      return { data, first_id: data[0]?.memory_store_id ?? null, last_id: data.at(-1)?.memory_store_id ?? null, has_more: page.hasNextPage };
    },
  }),
  route({
    operationId: 'unmountMemoryStore',
    method: 'DELETE',
    path: '/identities/{identity_id}/templates/{template_id}/memory_stores/{memory_store_id}',
    summary: 'Unmount an explicitly mounted store from the pair.',
    params: schemas.PairStoreParams,
    query: schemas.NoQuery,
    body: null,
    idempotencyKeyRequired: false,
    readOnly: false,
    answer: schemas.BindingDeleted,
    action: (params) => ({ type: 'mounts.write', identityId: params.identity_id }),
    handle: async (context, { params }) =>
      deletionMarker(
        await unmountMemoryStore(context.db, context.viewer, { identityId: params.identity_id, templateId: params.template_id, memoryStoreId: params.memory_store_id }),
        'memory_store_binding_deleted',
      ),
  }),
];
