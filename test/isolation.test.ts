import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { apiKeys, memoryStores, memoryVersions } from '../src/db/schema.js';
import { newId, type IdKind } from '../src/domain/ids.js';
import { schema } from '../src/graphql/schema.js';
import { createMemory, createStore } from './support/builders.js';
import { GetMemory } from './support/documents.js';
import type { GraphQLResponse, TestClient } from './support/server.js';
import { useTestServer } from './support/server.js';
import { freshPair, idsInSnapshot, seedWorkspace, sendRaw, tenantSnapshot, type SeededWorkspace } from './support/workspace-fixture.js';

/**
 * Tenant isolation, generated from the schema (API.md §7): for every root field, workspace B
 * calls it with workspace A's ids, cursors and filters. B sees nothing of A — null, an
 * empty list, or the very NotFoundError (type and message) an id that never existed
 * gets — and changes nothing of A: every row A owns is the same before and after.
 */

const server = useTestServer();

interface CaseContext {
  a: SeededWorkspace;
  b: TestClient;
  /** Sends a request as B; every answer is later checked for ids of A that B did not send. */
  ask(query: string, variables?: Record<string, unknown>): Promise<GraphQLResponse<any>>;
}

interface IsolationCase {
  /** What the case shows, as a sentence. */
  says: string;
  run(context: CaseContext): Promise<void>;
}

const ERROR_FIELDS = '__typename ... on Error { code message }';

/** A's objects that lookups by id take, each with its id kind. */
function lookupTargets(a: SeededWorkspace): { id: string; kind: IdKind }[] {
  return [
    { id: a.store.id, kind: 'memoryStore' },
    { id: a.mountedStoreId, kind: 'memoryStore' },
    { id: a.session.defaultMemoryStoreId, kind: 'memoryStore' },
    { id: a.memory.id, kind: 'memory' },
    { id: a.deletedMemory.id, kind: 'memory' },
    { id: a.memory.versionIds[0]!, kind: 'memoryVersion' },
    { id: a.memory.versionIds[1]!, kind: 'memoryVersion' },
    { id: a.session.id, kind: 'session' },
  ];
}

const storeIds = (a: SeededWorkspace) => [a.store.id, a.mountedStoreId, a.session.defaultMemoryStoreId];

/** Status, data and errors of a response with every occurrence of `id` replaced by a placeholder. */
function answerWithout(response: GraphQLResponse<unknown>, id: string): unknown {
  const text = JSON.stringify({ status: response.status, data: response.data ?? null, errors: response.errors ?? null });
  return JSON.parse(text.split(id).join('<the id asked for>'));
}

/**
 * Asks with A's id and with a never-existing id of the same kind, and expects the two
 * answers to be the same but for the id itself. Returns the answer to A's id.
 */
async function expectAnsweredAsMissing(
  context: CaseContext,
  query: string,
  variablesFor: (id: string) => Record<string, unknown>,
  foreignId: string,
  kind: IdKind,
): Promise<GraphQLResponse<any>> {
  const missingId = newId(kind);
  const foreign = await context.ask(query, variablesFor(foreignId));
  const missing = await context.ask(query, variablesFor(missingId));
  expect(answerWithout(foreign, foreignId), `${foreignId} of another workspace is answered like ${missingId}`).toEqual(answerWithout(missing, missingId));
  return foreign;
}

/** Like expectAnsweredAsMissing for a mutation, and the answer is a NotFoundError. */
async function expectNotFoundAsMissing(
  context: CaseContext,
  mutation: string,
  query: string,
  variablesFor: (id: string) => Record<string, unknown>,
  foreignId: string,
  kind: IdKind,
): Promise<void> {
  const response = await expectAnsweredAsMissing(context, query, variablesFor, foreignId, kind);
  expect(response.errors, foreignId).toBeUndefined();
  expect(response.data?.[mutation], foreignId).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
}

/** The ids of B's stores, read from the database. */
async function storeIdsOfWorkspace(workspaceId: string): Promise<string[]> {
  const rows = await server.db.select({ id: memoryStores.id }).from(memoryStores).where(eq(memoryStores.workspaceId, workspaceId));
  return rows.map((row) => row.id);
}

const nodeIds = (connection: { edges: { node: { id: string } }[] }) => connection.edges.map((edge) => edge.node.id);

const CASES: Record<string, IsolationCase> = {
  'Query.node': {
    says: 'answers null for A\'s stores, memories, versions and sessions, as for ids that never existed',
    async run(context) {
      const query = 'query ($id: ID!) { node(id: $id) { __typename id } }';
      for (const { id, kind } of lookupTargets(context.a)) {
        const response = await expectAnsweredAsMissing(context, query, (asked) => ({ id: asked }), id, kind);
        expect(response.data, id).toEqual({ node: null });
      }
    },
  },

  'Query.nodes': {
    says: 'answers null in place of every id of A',
    async run(context) {
      const targets = lookupTargets(context.a);
      const query = 'query ($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }';
      const response = await context.ask(query, { ids: targets.map((target) => target.id) });
      expect(response.errors).toBeUndefined();
      expect(response.data).toEqual({ nodes: targets.map(() => null) });
      const missing = await context.ask(query, { ids: targets.map((target) => newId(target.kind)) });
      expect(missing.data).toEqual(response.data);
    },
  },

  'Query.memoryStores': {
    says: 'lists only B\'s stores, whatever A\'s names, filters and cursors B passes',
    async run(context) {
      const { a, b } = context;
      await createStore(b, { name: a.store.input.name });
      const own = await storeIdsOfWorkspace(b.workspaceId);
      const query = `query ($first: Int, $last: Int, $after: String, $before: String, $namePrefix: String, $systemManaged: Boolean) {
        memoryStores(first: $first, last: $last, after: $after, before: $before, namePrefix: $namePrefix, systemManaged: $systemManaged) {
          totalCount edges { node { id name } }
        }
      }`;
      const everything = await context.ask(query, {});
      expect(everything.errors).toBeUndefined();
      expect(nodeIds(everything.data.memoryStores).sort()).toEqual([...own].sort());
      expect(everything.data.memoryStores.totalCount).toBe(own.length);

      const byName = await context.ask(query, { namePrefix: a.store.input.name });
      expect(nodeIds(byName.data.memoryStores)).toEqual(own);

      const defaults = await context.ask(query, { systemManaged: true });
      expect(defaults.data.memoryStores).toEqual({ totalCount: 0, edges: [] });

      for (const window of [{ after: a.cursors.memoryStores }, { before: a.cursors.memoryStores }, { last: 5, before: a.cursors.memoryStores }]) {
        const paged = await context.ask(query, window);
        expect(paged.errors, JSON.stringify(window)).toBeUndefined();
        for (const id of nodeIds(paged.data.memoryStores)) expect(own, JSON.stringify(window)).toContain(id);
      }
    },
  },

  'Query.memoryStore': {
    says: 'answers null for A\'s stores (user, mounted and default), as for ids that never existed',
    async run(context) {
      const query = 'query ($id: ID!) { memoryStore(id: $id) { id name entryCount } }';
      for (const id of storeIds(context.a)) {
        const response = await expectAnsweredAsMissing(context, query, (asked) => ({ id: asked }), id, 'memoryStore');
        expect(response.data, id).toEqual({ memoryStore: null });
      }
    },
  },

  'Query.memory': {
    says: 'answers null for A\'s live and deleted memories',
    async run(context) {
      const query = 'query ($id: ID!) { memory(id: $id) { id path content } }';
      for (const id of [context.a.memory.id, context.a.deletedMemory.id]) {
        const response = await expectAnsweredAsMissing(context, query, (asked) => ({ id: asked }), id, 'memory');
        expect(response.data, id).toEqual({ memory: null });
      }
    },
  },

  'Query.memoryVersion': {
    says: 'answers null for A\'s versions, redacted or not',
    async run(context) {
      const query = 'query ($id: ID!) { memoryVersion(id: $id) { id content redacted } }';
      for (const id of context.a.memory.versionIds) {
        const response = await expectAnsweredAsMissing(context, query, (asked) => ({ id: asked }), id, 'memoryVersion');
        expect(response.data, id).toEqual({ memoryVersion: null });
      }
    },
  },

  'Query.session': {
    says: 'answers null for A\'s session',
    async run(context) {
      const query = 'query ($id: ID!) { session(id: $id) { id identityId defaultMemoryStoreId } }';
      const response = await expectAnsweredAsMissing(context, query, (asked) => ({ id: asked }), context.a.session.id, 'session');
      expect(response.data).toEqual({ session: null });
    },
  },

  'Query.memoryStoreMounts': {
    says: 'answers B\'s own empty list for A\'s identity and template, with or without A\'s cursor',
    async run(context) {
      const { a } = context;
      const query = `query ($identityId: ID!, $templateId: ID!, $after: String) {
        memoryStoreMounts(identityId: $identityId, templateId: $templateId, after: $after) {
          totalCount edges { node { memoryStoreId name status entryCount } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        }
      }`;
      const empty = { totalCount: 0, edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null } };
      const neverUsed = await context.ask(query, { ...freshPair() });
      expect(neverUsed.data).toEqual({ memoryStoreMounts: empty });
      const foreign = await context.ask(query, { ...a.pair });
      expect(foreign.errors).toBeUndefined();
      expect(foreign.data).toEqual(neverUsed.data);
      const paged = await context.ask(query, { ...a.pair, after: a.cursors.pairMounts });
      expect(paged.errors).toBeUndefined();
      expect(paged.data.memoryStoreMounts.edges).toEqual([]);
    },
  },

  'Query.apiKeys': {
    says: 'lists only B\'s keys, with any filter and with A\'s cursor',
    async run(context) {
      const { a, b } = context;
      const ownRows = await server.db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.workspaceId, b.workspaceId));
      const own = ownRows.map((row) => row.id);
      const query = `query ($kind: ApiKeyKind, $after: String) {
        apiKeys(kind: $kind, after: $after) { totalCount edges { node { id kind identityId } } }
      }`;
      const everything = await context.ask(query, {});
      expect(everything.errors).toBeUndefined();
      expect(nodeIds(everything.data.apiKeys).sort()).toEqual([...own].sort());
      expect(everything.data.apiKeys.totalCount).toBe(own.length);
      const identityKeys = await context.ask(query, { kind: 'IDENTITY' });
      expect(identityKeys.data.apiKeys).toEqual({ totalCount: 0, edges: [] });
      const paged = await context.ask(query, { after: a.cursors.apiKeys });
      expect(paged.errors).toBeUndefined();
      for (const id of nodeIds(paged.data.apiKeys)) expect(own).toContain(id);
    },
  },

  'Mutation.createMemoryStore': {
    says: 'with A\'s idempotencyKey creates B\'s own store, with A\'s input or another one',
    async run(context) {
      const { a, b } = context;
      const query = `mutation ($input: CreateMemoryStoreInput!) {
        createMemoryStore(input: $input) { ${ERROR_FIELDS} ... on CreateMemoryStoreSuccess { memoryStore { id name entryCount } } }
      }`;
      const first = await context.ask(query, { input: a.store.input });
      expect(first.errors).toBeUndefined();
      expect(first.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
      const created = first.data.createMemoryStore.memoryStore;
      expect(created.id).not.toBe(a.store.id);
      expect(created.entryCount).toBe(0);
      expect(await storeIdsOfWorkspace(b.workspaceId)).toEqual([created.id]);
      const again = await context.ask(query, { input: a.store.input });
      expect(again.data.createMemoryStore.memoryStore?.id).toBe(created.id);

      // A's key is no CONFLICT in another workspace either, whatever the input.
      const third = await server.newWorkspace();
      const otherInput = await sendRaw(third, query, { input: { ...a.store.input, name: 'another input' } });
      expect(otherInput.data.createMemoryStore).toMatchObject({ __typename: 'CreateMemoryStoreSuccess', memoryStore: { name: 'another input' } });
      expect(await storeIdsOfWorkspace(third.workspaceId)).toEqual([otherInput.data.createMemoryStore.memoryStore.id]);
    },
  },

  'Mutation.updateMemoryStore': {
    says: 'answers NotFoundError for A\'s stores, as for ids that never existed',
    async run(context) {
      const query = `mutation ($input: UpdateMemoryStoreInput!) { updateMemoryStore(input: $input) { ${ERROR_FIELDS} } }`;
      for (const id of storeIds(context.a)) {
        await expectNotFoundAsMissing(context, 'updateMemoryStore', query, (asked) => ({ input: { id: asked, name: 'taken over', metadata: { team: 'b' } } }), id, 'memoryStore');
      }
    },
  },

  'Mutation.archiveMemoryStore': {
    says: 'answers NotFoundError for A\'s stores — never the CONFLICT A\'s mounted store would get',
    async run(context) {
      const query = `mutation ($id: ID!) { archiveMemoryStore(input: { id: $id }) { ${ERROR_FIELDS} } }`;
      for (const id of storeIds(context.a)) {
        await expectNotFoundAsMissing(context, 'archiveMemoryStore', query, (asked) => ({ id: asked }), id, 'memoryStore');
      }
    },
  },

  'Mutation.deleteMemoryStore': {
    says: 'answers NotFoundError for A\'s stores and deletes nothing',
    async run(context) {
      const query = `mutation ($id: ID!) { deleteMemoryStore(input: { id: $id }) { ${ERROR_FIELDS} } }`;
      for (const id of storeIds(context.a)) {
        await expectNotFoundAsMissing(context, 'deleteMemoryStore', query, (asked) => ({ id: asked }), id, 'memoryStore');
      }
    },
  },

  'Mutation.createMemory': {
    says: 'answers NotFoundError for a memory in A\'s stores, even at a path A uses',
    async run(context) {
      const query = `mutation ($input: CreateMemoryInput!) { createMemory(input: $input) { ${ERROR_FIELDS} } }`;
      for (const id of storeIds(context.a)) {
        for (const path of [context.a.memory.path, 'fresh/path.md']) {
          await expectNotFoundAsMissing(context, 'createMemory', query, (asked) => ({ input: { memoryStoreId: asked, path, content: 'from B' } }), id, 'memoryStore');
        }
      }
    },
  },

  'Mutation.updateMemory': {
    says: 'answers NotFoundError for A\'s memories, with or without their current sha',
    async run(context) {
      const { a } = context;
      // A's own view of its memory, for its current sha.
      const live = (await a.admin.data(GetMemory, { id: a.memory.id })).memory;
      const query = `mutation ($input: UpdateMemoryInput!) { updateMemory(input: $input) { ${ERROR_FIELDS} } }`;
      for (const id of [a.memory.id, a.deletedMemory.id]) {
        await expectNotFoundAsMissing(context, 'updateMemory', query, (asked) => ({ input: { id: asked, content: 'from B' } }), id, 'memory');
        await expectNotFoundAsMissing(
          context,
          'updateMemory',
          query,
          (asked) => ({ input: { id: asked, content: 'from B', expectedContentSha256: live!.contentSha256 } }),
          id,
          'memory',
        );
        await expectNotFoundAsMissing(context, 'updateMemory', query, (asked) => ({ input: { id: asked, path: 'renamed/by-b.md' } }), id, 'memory');
      }
    },
  },

  'Mutation.deleteMemory': {
    says: 'answers NotFoundError for A\'s memories and deletes nothing',
    async run(context) {
      const query = `mutation ($input: DeleteMemoryInput!) { deleteMemory(input: $input) { ${ERROR_FIELDS} } }`;
      for (const id of [context.a.memory.id, context.a.deletedMemory.id]) {
        await expectNotFoundAsMissing(context, 'deleteMemory', query, (asked) => ({ input: { id: asked } }), id, 'memory');
        await expectNotFoundAsMissing(context, 'deleteMemory', query, (asked) => ({ input: { id: asked, expectedContentSha256: '0'.repeat(64) } }), id, 'memory');
      }
    },
  },

  'Mutation.redactMemoryVersion': {
    says: 'answers NotFoundError for A\'s versions — never the CONFLICT A\'s redacted version would get',
    async run(context) {
      const query = `mutation ($id: ID!) { redactMemoryVersion(input: { id: $id }) { ${ERROR_FIELDS} } }`;
      for (const id of context.a.memory.versionIds) {
        await expectNotFoundAsMissing(context, 'redactMemoryVersion', query, (asked) => ({ id: asked }), id, 'memoryVersion');
      }
    },
  },

  'Query.searchMemories': {
    says: 'finds nothing of A — by A\'s words, in A\'s stores, under A\'s paths — while B\'s own memory with the same words is found',
    async run(context) {
      const { a, b } = context;
      const query = `query ($query: String!, $store: ID, $prefix: String) {
        searchMemories(query: $query, memoryStoreId: $store, pathPrefix: $prefix) { totalCount edges { node { id path } snippet { text } } }
      }`;
      const words = ['second', 'notes live', 'read only guide', 'agent wrote this', 'gone soon', 'first'];
      for (const store of [...storeIds(a), undefined]) {
        for (const text of words) {
          const response = await context.ask(query, { query: text, store, prefix: store ? 'notes/' : undefined });
          expect(response.errors, text).toBeUndefined();
          expect(response.data.searchMemories, `${text} in ${store}`).toEqual({ totalCount: 0, edges: [] });
        }
      }
      const own = await createStore(b);
      const mine = await createMemory(b, own.id, { path: a.memory.path, content: 'second' });
      const response = await context.ask(query, { query: 'second notes' });
      expect(response.data.searchMemories).toEqual({ totalCount: 1, edges: [{ node: { id: mine.id, path: a.memory.path }, snippet: { text: 'second' } }] });
    },
  },

  'Mutation.restoreMemoryVersion': {
    says: 'answers NotFoundError for A\'s versions — of live and deleted memories, redacted or not — and restores nothing',
    async run(context) {
      const { a } = context;
      const query = `mutation ($input: RestoreMemoryVersionInput!) { restoreMemoryVersion(input: $input) { ${ERROR_FIELDS} } }`;
      const deletedVersions = await server.db
        .select({ id: memoryVersions.id })
        .from(memoryVersions)
        .where(and(eq(memoryVersions.workspaceId, a.admin.workspaceId), eq(memoryVersions.memoryId, a.deletedMemory.id)));
      for (const id of [...a.memory.versionIds, ...deletedVersions.map((row) => row.id)]) {
        await expectNotFoundAsMissing(context, 'restoreMemoryVersion', query, (asked) => ({ input: { id: asked } }), id, 'memoryVersion');
        await expectNotFoundAsMissing(context, 'restoreMemoryVersion', query, (asked) => ({ input: { id: asked, expectedContentSha256: '0'.repeat(64) } }), id, 'memoryVersion');
      }
    },
  },

  'Mutation.mountMemoryStore': {
    says: 'answers NotFoundError for mounting A\'s stores, on B\'s pairs and on A\'s pair',
    async run(context) {
      const query = `mutation ($input: MountMemoryStoreInput!) { mountMemoryStore(input: $input) { ${ERROR_FIELDS} } }`;
      for (const pair of [freshPair(), context.a.pair]) {
        for (const id of storeIds(context.a)) {
          await expectNotFoundAsMissing(context, 'mountMemoryStore', query, (asked) => ({ input: { memoryStoreId: asked, ...pair } }), id, 'memoryStore');
        }
      }
      expect(await storeIdsOfWorkspace(context.b.workspaceId)).toEqual([]);
    },
  },

  'Mutation.unmountMemoryStore': {
    says: 'answers NotFoundError for A\'s mounts — never the CONFLICT of A\'s default slot',
    async run(context) {
      const { a } = context;
      const query = `mutation ($input: UnmountMemoryStoreInput!) { unmountMemoryStore(input: $input) { ${ERROR_FIELDS} } }`;
      for (const id of [a.mountedStoreId, a.session.defaultMemoryStoreId]) {
        await expectNotFoundAsMissing(context, 'unmountMemoryStore', query, (asked) => ({ input: { memoryStoreId: asked, ...a.pair } }), id, 'memoryStore');
      }
    },
  },

  'Mutation.createSession': {
    says: 'for A\'s identity and template creates B\'s own, empty default store and injects nothing of A',
    async run(context) {
      const { a, b } = context;
      const query = `mutation ($input: CreateSessionInput!) {
        createSession(input: $input) {
          ${ERROR_FIELDS}
          ... on CreateSessionSuccess {
            session { id defaultMemoryStoreId defaultMemoryStore { id entryCount systemManaged } mounts { memoryStoreId systemManaged name entryCount } files { totalCount edges { node { path } } } }
          }
        }
      }`;
      const response = await context.ask(query, { input: { ...a.pair, environment: 'MANAGED' } });
      expect(response.errors).toBeUndefined();
      expect(response.data.createSession.__typename).toBe('CreateSessionSuccess');
      const { session } = response.data.createSession;
      expect(session.id).not.toBe(a.session.id);
      expect(session.defaultMemoryStoreId).not.toBe(a.session.defaultMemoryStoreId);
      expect(session.defaultMemoryStore).toEqual({ id: session.defaultMemoryStoreId, entryCount: 0, systemManaged: true });
      expect(session.mounts).toEqual([{ memoryStoreId: session.defaultMemoryStoreId, systemManaged: true, name: 'System Default Memory', entryCount: 0 }]);
      expect(session.files).toEqual({ totalCount: 0, edges: [] });
      const [row] = await server.db
        .select()
        .from(memoryStores)
        .where(and(eq(memoryStores.workspaceId, b.workspaceId), eq(memoryStores.id, session.defaultMemoryStoreId)));
      expect(row).toMatchObject({ systemManaged: true, identityId: a.pair.identityId, templateId: a.pair.templateId, entryCount: 0 });
    },
  },

  'Mutation.writeSessionMemory': {
    says: 'answers NotFoundError for A\'s session and writes nothing into A\'s default store',
    async run(context) {
      const query = `mutation ($input: WriteSessionMemoryInput!) { writeSessionMemory(input: $input) { ${ERROR_FIELDS} } }`;
      for (const path of [context.a.agentPath, 'agent/new.md']) {
        await expectNotFoundAsMissing(context, 'writeSessionMemory', query, (asked) => ({ input: { sessionId: asked, path, content: 'from B' } }), context.a.session.id, 'session');
      }
    },
  },

  'Mutation.deleteSessionMemory': {
    says: 'answers NotFoundError for A\'s session and deletes nothing',
    async run(context) {
      const query = `mutation ($input: DeleteSessionMemoryInput!) { deleteSessionMemory(input: $input) { ${ERROR_FIELDS} } }`;
      await expectNotFoundAsMissing(context, 'deleteSessionMemory', query, (asked) => ({ input: { sessionId: asked, path: context.a.agentPath } }), context.a.session.id, 'session');
    },
  },

  'Mutation.createApiKey': {
    says: 'creates B\'s key, even for A\'s identity, and that key sees nothing of A',
    async run(context) {
      const { a, b } = context;
      const query = `mutation ($input: CreateApiKeyInput!) {
        createApiKey(input: $input) { ${ERROR_FIELDS} ... on CreateApiKeySuccess { token apiKey { id kind identityId } } }
      }`;
      const response = await context.ask(query, { input: { name: 'for A\'s identity', kind: 'IDENTITY', identityId: a.pair.identityId } });
      expect(response.data.createApiKey.__typename).toBe('CreateApiKeySuccess');
      const { token, apiKey } = response.data.createApiKey;
      const [row] = await server.db.select().from(apiKeys).where(eq(apiKeys.id, apiKey.id));
      expect(row?.workspaceId).toBe(b.workspaceId);
      const mounts = await sendRaw(server.anonymous(token), 'query ($identityId: ID!, $templateId: ID!) { memoryStoreMounts(identityId: $identityId, templateId: $templateId) { totalCount edges { node { memoryStoreId } } } }', {
        ...a.pair,
      });
      expect(mounts.errors).toBeUndefined();
      expect(mounts.data).toEqual({ memoryStoreMounts: { totalCount: 0, edges: [] } });
    },
  },

  'Mutation.revokeApiKey': {
    says: 'answers NotFoundError for A\'s keys, and they keep working',
    async run(context) {
      const { a } = context;
      const query = `mutation ($id: ID!) { revokeApiKey(input: { id: $id }) { ${ERROR_FIELDS} } }`;
      for (const id of [a.adminKeyId, a.identityKey.id]) {
        await expectNotFoundAsMissing(context, 'revokeApiKey', query, (asked) => ({ id: asked }), id, 'apiKey');
      }
      expect((await sendRaw(a.admin, '{ memoryStores { totalCount } }')).status).toBe(200);
      const identity = await sendRaw(a.identityKey.client, 'query ($identityId: ID!, $templateId: ID!) { memoryStoreMounts(identityId: $identityId, templateId: $templateId) { totalCount } }', {
        ...a.pair,
      });
      expect(identity.data).toEqual({ memoryStoreMounts: { totalCount: 2 } });
    },
  },
};

/** Seeds A, lets the case act as B, and checks that A is untouched and B's answers name nothing of A. */
async function runCase(isolationCase: IsolationCase): Promise<void> {
  const a = await seedWorkspace(server);
  const b = await server.newWorkspace();
  const before = await tenantSnapshot(server.db, a.admin.workspaceId);
  const idsOfA = idsInSnapshot(before);
  const exchanges: { variables: Record<string, unknown>; response: GraphQLResponse<any> }[] = [];
  const ask = async (query: string, variables: Record<string, unknown> = {}) => {
    const response = await sendRaw(b, query, variables);
    exchanges.push({ variables, response });
    return response;
  };

  await isolationCase.run({ a, b, ask });

  expect(await tenantSnapshot(server.db, a.admin.workspaceId), 'A\'s rows after B\'s requests').toEqual(before);
  expect(exchanges.length).toBeGreaterThan(0);
  for (const { variables, response } of exchanges) {
    const asked = JSON.stringify(variables);
    const answered = JSON.stringify({ data: response.data, errors: response.errors });
    const leaked = [...idsOfA].filter((id) => !asked.includes(id) && answered.includes(id));
    expect(leaked, `B's answer to ${asked} names ids of A it did not ask about`).toEqual([]);
  }
}

/** Every root field, as `Query.<name>` / `Mutation.<name>`, read from the executable schema. */
function rootFieldCoordinates(): string[] {
  const query = Object.keys(schema.getQueryType()!.getFields()).map((name) => `Query.${name}`);
  const mutation = Object.keys(schema.getMutationType()?.getFields() ?? {}).map((name) => `Mutation.${name}`);
  return [...query, ...mutation].sort();
}

describe('tenant isolation of every root field', () => {
  it('has a case for every root field of the schema and none for fields it does not have', () => {
    expect(Object.keys(CASES).sort()).toEqual(rootFieldCoordinates());
  });

  for (const [coordinate, isolationCase] of Object.entries(CASES)) {
    it(`${coordinate} ${isolationCase.says}; A is unchanged`, () => runCase(isolationCase));
  }
});

describe('tenant isolation of nested fields', () => {
  it('in B\'s own store, versions(memoryId:), memory(path:) and A\'s cursors show nothing of A', async () => {
    await runCase({
      says: '',
      async run(context) {
        const { a, b } = context;
        const store = await createStore(b);
        const bMemory = await createMemory(b, store.id, { path: a.memory.path, content: 'B\'s own' });
        const response = await context.ask(
          `query ($storeId: ID!, $memoryId: ID!, $path: String!, $memoriesCursor: String, $versionsCursor: String) {
            memoryStore(id: $storeId) {
              byForeignMemory: versions(memoryId: $memoryId) { totalCount edges { node { id } } }
              atForeignPath: memory(path: $path) { id content }
              afterForeignMemory: memories(after: $memoriesCursor) { edges { node { id } } }
              afterForeignVersion: versions(after: $versionsCursor) { edges { node { id memoryId } } }
              mounts { totalCount }
              bindingInfo { identityTemplateCount }
              rootOfB: entries { totalCount edges { node { __typename ... on MemoryFolder { path memoryCount } ... on Memory { id } } } }
              folderOfB: entries(folder: "notes/") { totalCount edges { node { __typename ... on MemoryFolder { path memoryCount } ... on Memory { id } } } }
            }
          }`,
          { storeId: store.id, memoryId: a.memory.id, path: a.memory.path, memoriesCursor: a.cursors.memories, versionsCursor: a.cursors.storeVersions },
        );
        expect(response.errors).toBeUndefined();
        const view = response.data.memoryStore;
        expect(view.byForeignMemory).toEqual({ totalCount: 0, edges: [] });
        expect(view.atForeignPath).toEqual({ id: bMemory.id, content: 'B\'s own' });
        for (const id of nodeIds(view.afterForeignMemory)) expect(id).toBe(bMemory.id);
        for (const edge of view.afterForeignVersion.edges) expect(edge.node.memoryId).toBe(bMemory.id);
        expect(view.mounts).toEqual({ totalCount: 0 });
        expect(view.bindingInfo).toEqual({ identityTemplateCount: 0 });
        expect(a.memory.path.startsWith('notes/')).toBe(true);
        expect(view.rootOfB).toEqual({ totalCount: 1, edges: [{ node: { __typename: 'MemoryFolder', path: 'notes/', memoryCount: 1 } }] });
        expect(view.folderOfB).toEqual({ totalCount: 1, edges: [{ node: { __typename: 'Memory', id: bMemory.id } }] });
      },
    });
  });

  it('B\'s own versions diffed against A\'s versions answer null, as against versions that never existed', async () => {
    await runCase({
      says: '',
      async run(context) {
        const { a, b } = context;
        const store = await createStore(b);
        const bMemory = await createMemory(b, store.id, { path: a.memory.path, content: 'B\'s own' });
        const query = `query ($id: ID!, $against: ID) { memory(id: $id) { latestVersion { number restoredFrom { id } diff(against: $against) { unified } } } }`;
        for (const id of a.memory.versionIds) {
          const response = await expectAnsweredAsMissing(context, query, (asked) => ({ id: bMemory.id, against: asked }), id, 'memoryVersion');
          expect(response.data.memory.latestVersion).toEqual({ number: 1, restoredFrom: null, diff: null });
        }
      },
    });
  });

  it('B\'s pair with A\'s identity and template lists only B\'s mounts after B mounts its own store', async () => {
    await runCase({
      says: '',
      async run(context) {
        const { a, b } = context;
        const store = await createStore(b);
        const mount = await context.ask(
          `mutation ($input: MountMemoryStoreInput!) { mountMemoryStore(input: $input) { ${ERROR_FIELDS} ... on MountMemoryStoreSuccess { mount { memoryStoreId } } } }`,
          { input: { memoryStoreId: store.id, ...a.pair } },
        );
        expect(mount.data.mountMemoryStore.__typename).toBe('MountMemoryStoreSuccess');
        const list = await context.ask(
          'query ($identityId: ID!, $templateId: ID!) { memoryStoreMounts(identityId: $identityId, templateId: $templateId) { totalCount edges { node { memoryStoreId } } } }',
          { ...a.pair },
        );
        expect(list.data.memoryStoreMounts).toEqual({ totalCount: 1, edges: [{ node: { memoryStoreId: store.id } }] });
      },
    });
  });
});
