import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiKeys } from '../src/db/schema.js';
import { schema } from '../src/graphql/schema.js';
import { graphql } from './generated/gql.js';
import type { GraphQLResponse, TestClient } from './support/server.js';
import { useTestServer } from './support/server.js';
import {
  createKey,
  FixtureCreateApiKey,
  FixtureRevokeApiKey,
  freshPair,
  revokeKey,
  seedWorkspace,
  sendRaw,
  tenantSnapshot,
  type CreatedKey,
  type SeededWorkspace,
} from './support/workspace-fixture.js';

/**
 * Who may call what (API.md §7), as a table over every root field of the schema × every
 * kind of caller: no key and revoked keys are refused with HTTP 401; ADMIN keys may do
 * everything; IDENTITY keys may only list, mount and unmount stores and create sessions
 * for their own identity, and get FORBIDDEN — changing nothing — for anything else.
 */

const server = useTestServer();

const ListKeys = graphql(`
  query PermissionsListKeys($first: Int, $after: String, $kind: ApiKeyKind, $includeRevoked: Boolean! = true) {
    apiKeys(first: $first, after: $after, kind: $kind, includeRevoked: $includeRevoked) {
      totalCount
      edges {
        cursor
        node {
          id
          name
          kind
          identityId
          createdAt
          revoked
          revokedAt
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

/** A workspace seeded with one of everything, and a key of every kind. */
interface World {
  seed: SeededWorkspace;
  /** An IDENTITY key of seed.pair.identityId: the identity every identity-scoped row acts for. */
  ownIdentity: CreatedKey;
  /** An IDENTITY key of another identity of the same workspace. */
  otherIdentity: CreatedKey;
  /** Keys that worked once and were then revoked by an ADMIN key. */
  revokedAdmin: TestClient;
  revokedIdentity: TestClient;
}

async function newWorld(): Promise<World> {
  const seed = await seedWorkspace(server);
  const otherIdentity = await createKey(seed.admin, 'IDENTITY', freshPair().identityId, 'another identity');
  const mountsQuery = 'query ($identityId: ID!, $templateId: ID!) { memoryStoreMounts(identityId: $identityId, templateId: $templateId) { totalCount } }';
  const revokedAdmin = await createKey(seed.admin, 'ADMIN', undefined, 'soon revoked admin');
  const revokedIdentity = await createKey(seed.admin, 'IDENTITY', seed.pair.identityId, 'soon revoked identity');
  // Both work until they are revoked.
  expect((await sendRaw(revokedAdmin.client, '{ memoryStores { totalCount } }')).errors).toBeUndefined();
  expect((await sendRaw(revokedIdentity.client, mountsQuery, { ...seed.pair })).errors).toBeUndefined();
  await revokeKey(seed.admin, revokedAdmin.id);
  await revokeKey(seed.admin, revokedIdentity.id);
  return { seed, ownIdentity: seed.identityKey, otherIdentity, revokedAdmin: revokedAdmin.client, revokedIdentity: revokedIdentity.client };
}

type CallerName = 'no key' | 'a revoked ADMIN key' | 'a revoked IDENTITY key' | 'an IDENTITY key of another identity' | 'an IDENTITY key of its own identity' | 'an ADMIN key';

const CALLERS: Record<CallerName, (world: World) => TestClient> = {
  'no key': () => server.anonymous(),
  'a revoked ADMIN key': (world) => world.revokedAdmin,
  'a revoked IDENTITY key': (world) => world.revokedIdentity,
  'an IDENTITY key of another identity': (world) => world.otherIdentity.client,
  'an IDENTITY key of its own identity': (world) => world.ownIdentity.client,
  'an ADMIN key': (world) => world.seed.admin,
};

interface PermissionRow {
  /** One operation calling the field; it selects only what IDENTITY keys may read. */
  query: string;
  variables(world: World): Record<string, unknown>;
  /** The four fields an IDENTITY key may call, for its own identity (access.ts). */
  identityMayCall?: true;
}

const RESULT = '__typename ... on Error { code message }';

const ROWS: Record<string, PermissionRow> = {
  'Query.node': { query: 'query ($id: ID!) { node(id: $id) { id } }', variables: ({ seed }) => ({ id: seed.store.id }) },
  'Query.nodes': { query: 'query ($ids: [ID!]!) { nodes(ids: $ids) { id } }', variables: ({ seed }) => ({ ids: [seed.store.id, seed.memory.id] }) },
  'Query.memoryStores': { query: '{ memoryStores { totalCount edges { node { id } } } }', variables: () => ({}) },
  'Query.memoryStore': { query: 'query ($id: ID!) { memoryStore(id: $id) { id } }', variables: ({ seed }) => ({ id: seed.session.defaultMemoryStoreId }) },
  'Query.memory': { query: 'query ($id: ID!) { memory(id: $id) { id content } }', variables: ({ seed }) => ({ id: seed.memory.id }) },
  'Query.memoryVersion': { query: 'query ($id: ID!) { memoryVersion(id: $id) { id } }', variables: ({ seed }) => ({ id: seed.memory.versionIds[1] }) },
  'Query.searchMemories': { query: '{ searchMemories(query: "second") { totalCount edges { node { id } score } } }', variables: () => ({}) },
  'Query.session': { query: 'query ($id: ID!) { session(id: $id) { id defaultMemoryStoreId } }', variables: ({ seed }) => ({ id: seed.session.id }) },
  'Query.memoryStoreMounts': {
    query: 'query ($identityId: ID!, $templateId: ID!) { memoryStoreMounts(identityId: $identityId, templateId: $templateId) { totalCount edges { node { memoryStoreId name status entryCount } } } }',
    variables: ({ seed }) => ({ ...seed.pair }),
    identityMayCall: true,
  },
  'Query.apiKeys': { query: '{ apiKeys { totalCount edges { node { id kind } } } }', variables: () => ({}) },

  'Mutation.createMemoryStore': {
    query: `mutation ($input: CreateMemoryStoreInput!) { createMemoryStore(input: $input) { ${RESULT} } }`,
    variables: () => ({ input: { name: 'new store' } }),
  },
  'Mutation.updateMemoryStore': {
    query: `mutation ($input: UpdateMemoryStoreInput!) { updateMemoryStore(input: $input) { ${RESULT} } }`,
    variables: ({ seed }) => ({ input: { id: seed.store.id, name: 'renamed' } }),
  },
  'Mutation.archiveMemoryStore': {
    query: `mutation ($id: ID!) { archiveMemoryStore(input: { id: $id }) { ${RESULT} } }`,
    variables: ({ seed }) => ({ id: seed.store.id }),
  },
  'Mutation.deleteMemoryStore': {
    query: `mutation ($id: ID!) { deleteMemoryStore(input: { id: $id }) { ${RESULT} } }`,
    variables: ({ seed }) => ({ id: seed.store.id }),
  },
  'Mutation.createMemory': {
    query: `mutation ($input: CreateMemoryInput!) { createMemory(input: $input) { ${RESULT} } }`,
    variables: ({ seed }) => ({ input: { memoryStoreId: seed.session.defaultMemoryStoreId, path: 'written/by-key.md', content: 'x' } }),
  },
  'Mutation.updateMemory': {
    query: `mutation ($input: UpdateMemoryInput!) { updateMemory(input: $input) { ${RESULT} } }`,
    variables: ({ seed }) => ({ input: { id: seed.memory.id, content: 'changed' } }),
  },
  'Mutation.deleteMemory': {
    query: `mutation ($input: DeleteMemoryInput!) { deleteMemory(input: $input) { ${RESULT} } }`,
    variables: ({ seed }) => ({ input: { id: seed.memory.id } }),
  },
  'Mutation.redactMemoryVersion': {
    query: `mutation ($id: ID!) { redactMemoryVersion(input: { id: $id }) { ${RESULT} } }`,
    variables: ({ seed }) => ({ id: seed.memory.versionIds[1] }),
  },
  'Mutation.restoreMemoryVersion': {
    // The memory's newest version: restoring it writes nothing, so the world stays as it is.
    query: `mutation ($id: ID!) { restoreMemoryVersion(input: { id: $id }) { ${RESULT} } }`,
    variables: ({ seed }) => ({ id: seed.memory.versionIds[1] }),
  },
  'Mutation.mountMemoryStore': {
    query: `mutation ($input: MountMemoryStoreInput!) { mountMemoryStore(input: $input) { ${RESULT} ... on MountMemoryStoreSuccess { mount { memoryStoreId name status entryCount } } } }`,
    variables: ({ seed }) => ({ input: { memoryStoreId: seed.store.id, ...seed.pair } }),
    identityMayCall: true,
  },
  'Mutation.unmountMemoryStore': {
    query: `mutation ($input: UnmountMemoryStoreInput!) { unmountMemoryStore(input: $input) { ${RESULT} ... on UnmountMemoryStoreSuccess { unmountedMemoryStoreId } } }`,
    variables: ({ seed }) => ({ input: { memoryStoreId: seed.mountedStoreId, ...seed.pair } }),
    identityMayCall: true,
  },
  'Mutation.createSession': {
    query: `mutation ($input: CreateSessionInput!) { createSession(input: $input) { ${RESULT} ... on CreateSessionSuccess { session { id defaultMemoryStoreId } } } }`,
    variables: ({ seed }) => ({ input: { ...seed.pair, environment: 'MANAGED' } }),
    identityMayCall: true,
  },
  'Mutation.writeSessionMemory': {
    query: `mutation ($input: WriteSessionMemoryInput!) { writeSessionMemory(input: $input) { ${RESULT} } }`,
    variables: ({ seed }) => ({ input: { sessionId: seed.session.id, path: seed.agentPath, content: 'agent again' } }),
  },
  'Mutation.deleteSessionMemory': {
    query: `mutation ($input: DeleteSessionMemoryInput!) { deleteSessionMemory(input: $input) { ${RESULT} } }`,
    variables: ({ seed }) => ({ input: { sessionId: seed.session.id, path: seed.agentPath } }),
  },
  'Mutation.createApiKey': {
    query: `mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) { ${RESULT} } }`,
    variables: () => ({ input: { name: 'escalation', kind: 'ADMIN' } }),
  },
  'Mutation.revokeApiKey': {
    query: `mutation ($id: ID!) { revokeApiKey(input: { id: $id }) { ${RESULT} } }`,
    variables: (world) => ({ id: world.ownIdentity.id }),
  },
};

function rootFieldCoordinates(): string[] {
  const query = Object.keys(schema.getQueryType()!.getFields()).map((name) => `Query.${name}`);
  const mutation = Object.keys(schema.getMutationType()?.getFields() ?? {}).map((name) => `Mutation.${name}`);
  return [...query, ...mutation].sort();
}

type Expected = 'UNAUTHENTICATED' | 'FORBIDDEN' | 'allowed';

function expectedFor(caller: CallerName, row: PermissionRow): Expected {
  switch (caller) {
    case 'no key':
    case 'a revoked ADMIN key':
    case 'a revoked IDENTITY key':
      return 'UNAUTHENTICATED';
    case 'an IDENTITY key of another identity':
      return 'FORBIDDEN';
    case 'an IDENTITY key of its own identity':
      return row.identityMayCall ? 'allowed' : 'FORBIDDEN';
    case 'an ADMIN key':
      return 'allowed';
  }
}

function expectUnauthenticated(response: GraphQLResponse<unknown>): void {
  expect(response.status).toBe(401);
  expect(response.errors?.map((error) => error.extensions?.code)).toEqual(['UNAUTHENTICATED']);
  expect(response.data ?? null).toBeNull();
}

function expectForbidden(coordinate: string, response: GraphQLResponse<any>): void {
  const [root, field] = coordinate.split('.') as [string, string];
  if (root === 'Query') {
    expect(response.errors?.map((error) => [error.extensions?.code, error.path])).toEqual([['FORBIDDEN', [field]]]);
    // Nothing of the answer reaches the caller.
    expect(response.data?.[field] ?? null).toBeNull();
  } else {
    expect(response.errors).toBeUndefined();
    expect(response.data?.[field]).toMatchObject({ __typename: 'PermissionError', code: 'FORBIDDEN' });
  }
}

function expectAllowed(coordinate: string, response: GraphQLResponse<any>): void {
  const [root, field] = coordinate.split('.') as [string, string];
  expect(response.status).toBe(200);
  expect(response.errors).toBeUndefined();
  expect(response.data?.[field]).not.toBeNull();
  if (root === 'Mutation') expect(response.data?.[field].__typename).toMatch(/Success$/);
}

describe('the access table over every root field', () => {
  it('has a row for every root field of the schema and none for fields it does not have', () => {
    expect(Object.keys(ROWS).sort()).toEqual(rootFieldCoordinates());
  });

  // Refused calls and allowed queries share one world: each refused call checks that it
  // changed nothing.
  let world: World;
  beforeAll(async () => {
    world = await newWorld();
  });

  for (const [coordinate, row] of Object.entries(ROWS)) {
    describe(coordinate, () => {

      for (const caller of Object.keys(CALLERS) as CallerName[]) {
        const expected = expectedFor(caller, row);
        const sentence =
          expected === 'UNAUTHENTICATED'
            ? 'is refused with HTTP 401 UNAUTHENTICATED and changes nothing'
            : expected === 'FORBIDDEN'
              ? `is FORBIDDEN (${coordinate.startsWith('Query') ? 'a top-level error' : 'a PermissionError'}) and changes nothing`
              : 'is allowed';
        it(`with ${caller} ${sentence}`, async () => {
          // An allowed mutation may change the workspace: it gets a world of its own.
          const used = expected === 'allowed' && coordinate.startsWith('Mutation') ? await newWorld() : world;
          const before = await tenantSnapshot(server.db, used.seed.admin.workspaceId);
          const response = await sendRaw(CALLERS[caller](used), row.query, row.variables(used));
          if (expected === 'UNAUTHENTICATED') expectUnauthenticated(response);
          else if (expected === 'FORBIDDEN') expectForbidden(coordinate, response);
          else expectAllowed(coordinate, response);
          if (expected !== 'allowed') expect(await tenantSnapshot(server.db, used.seed.admin.workspaceId)).toEqual(before);
        });
      }
    });
  }
});

describe('what IDENTITY keys may read', () => {
  it('reads its mounts\' name, status and entryCount, but not MemoryStoreMount.memoryStore', async () => {
    const world = await newWorld();
    const { seed } = world;
    const response = await sendRaw(
      world.ownIdentity.client,
      `query ($identityId: ID!, $templateId: ID!) {
        memoryStoreMounts(identityId: $identityId, templateId: $templateId) {
          edges { node { memoryStoreId systemManaged access name status entryCount memoryStore { id } } }
        }
      }`,
      { ...seed.pair },
    );
    expect(response.errors?.map((error) => [error.extensions?.code, error.path])).toEqual([
      ['FORBIDDEN', ['memoryStoreMounts', 'edges', 0, 'node', 'memoryStore']],
      ['FORBIDDEN', ['memoryStoreMounts', 'edges', 1, 'node', 'memoryStore']],
    ]);
    expect(response.data.memoryStoreMounts.edges.map((edge: { node: unknown }) => edge.node)).toEqual([
      { memoryStoreId: seed.session.defaultMemoryStoreId, systemManaged: true, access: 'READ_WRITE', name: 'System Default Memory', status: 'active', entryCount: 1, memoryStore: null },
      { memoryStoreId: seed.mountedStoreId, systemManaged: false, access: 'READ_ONLY', name: `mounted ${seed.store.input.name}`, status: 'active', entryCount: 1, memoryStore: null },
    ]);
  });

  it('reads Session.defaultMemoryStoreId and its mounts, but not Session.defaultMemoryStore or Session.files', async () => {
    const world = await newWorld();
    const { seed } = world;
    const create = (selection: string) =>
      sendRaw(world.ownIdentity.client, `mutation ($input: CreateSessionInput!) { createSession(input: $input) { ${RESULT} ... on CreateSessionSuccess { session { ${selection} } } } }`, {
        input: { ...seed.pair, environment: 'MANAGED' },
      });

    const readable = await create('id identityId templateId environment memoryInjected defaultMemoryStoreId mounts { memoryStoreId name status entryCount access }');
    expect(readable.errors).toBeUndefined();
    const session = readable.data.createSession.session;
    expect(session.defaultMemoryStoreId).toBe(seed.session.defaultMemoryStoreId);
    expect(session.mounts.map((mount: { name: string }) => mount.name)).toEqual(['System Default Memory', `mounted ${seed.store.input.name}`]);

    for (const [selection, path] of [
      ['defaultMemoryStore { id }', ['createSession', 'session', 'defaultMemoryStore']],
      ['files { totalCount }', ['createSession', 'session', 'files']],
      ['mounts { memoryStore { id } }', ['createSession', 'session', 'mounts', 0, 'memoryStore']],
    ] as const) {
      const response = await create(`id ${selection}`);
      expect(response.errors?.[0]?.extensions?.code, selection).toBe('FORBIDDEN');
      expect(response.errors?.[0]?.path, selection).toEqual(path);
      // Nothing of the store or its files is in the answer.
      expect(JSON.stringify(response.data ?? null), selection).not.toContain('agent wrote this');
    }
  });

  it('cannot reach a store through mountMemoryStore\'s mount', async () => {
    const world = await newWorld();
    const response = await sendRaw(
      world.ownIdentity.client,
      `mutation ($input: MountMemoryStoreInput!) { mountMemoryStore(input: $input) { ${RESULT} ... on MountMemoryStoreSuccess { mount { name entryCount memoryStore { id entryCount } } } } }`,
      { input: { memoryStoreId: world.seed.store.id, ...world.seed.pair } },
    );
    expect(response.errors?.map((error) => [error.extensions?.code, error.path])).toEqual([['FORBIDDEN', ['mountMemoryStore', 'mount', 'memoryStore']]]);
    expect(response.data.mountMemoryStore).toEqual({ __typename: 'MountMemoryStoreSuccess', mount: { name: world.seed.store.input.name, entryCount: 1, memoryStore: null } });
  });

  it("cannot mount another identity's default store on its own pair: NOT_FOUND, word for word as for a store that does not exist", async () => {
    const world = await newWorld();
    const otherPair = freshPair();
    const other = await createKey(world.seed.admin, 'IDENTITY', otherPair.identityId, 'other identity');
    const mount = (memoryStoreId: string) =>
      sendRaw(other.client, `mutation ($input: MountMemoryStoreInput!) { mountMemoryStore(input: $input) { ${RESULT} } }`, { input: { memoryStoreId, ...otherPair } });
    const before = await tenantSnapshot(server.db, world.seed.admin.workspaceId);
    const missing = 'memstore_00000000000000000000';
    const refused = await mount(world.seed.session.defaultMemoryStoreId);
    const unknown = await mount(missing);
    expect(refused.data.mountMemoryStore.code).toBe('NOT_FOUND');
    expect(refused.data.mountMemoryStore).toEqual({
      ...unknown.data.mountMemoryStore,
      message: unknown.data.mountMemoryStore.message.replace(missing, world.seed.session.defaultMemoryStoreId),
    });
    expect(await tenantSnapshot(server.db, world.seed.admin.workspaceId)).toEqual(before);
  });

  it('ADMIN keys read all three nested fields', async () => {
    const world = await newWorld();
    const { seed } = world;
    const response = await sendRaw(
      seed.admin,
      `query ($identityId: ID!, $templateId: ID!, $sessionId: ID!) {
        memoryStoreMounts(identityId: $identityId, templateId: $templateId) { edges { node { memoryStore { id } } } }
        session(id: $sessionId) { defaultMemoryStore { id } files { totalCount } }
      }`,
      { ...seed.pair, sessionId: seed.session.id },
    );
    expect(response.errors).toBeUndefined();
    expect(response.data.memoryStoreMounts.edges.map((edge: { node: { memoryStore: { id: string } } }) => edge.node.memoryStore.id)).toEqual([seed.session.defaultMemoryStoreId, seed.mountedStoreId]);
    expect(response.data.session.defaultMemoryStore.id).toBe(seed.session.defaultMemoryStoreId);
    expect(response.data.session.files.totalCount).toBe(2);
  });

  it('in one document, an allowed field answers and a refused one is FORBIDDEN', async () => {
    const world = await newWorld();
    const response = await sendRaw(
      world.ownIdentity.client,
      'query ($identityId: ID!, $templateId: ID!, $id: ID!) { memoryStoreMounts(identityId: $identityId, templateId: $templateId) { totalCount } memoryStore(id: $id) { id } }',
      { ...world.seed.pair, id: world.seed.mountedStoreId },
    );
    expect(response.errors?.map((error) => [error.extensions?.code, error.path])).toEqual([['FORBIDDEN', ['memoryStore']]]);
    expect(response.data).toEqual({ memoryStoreMounts: { totalCount: 2 }, memoryStore: null });
  });
});

// ---------------------------------------------------------------------------------------
// Key management

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

async function keyRows(workspaceId: string) {
  return server.db.select().from(apiKeys).where(eq(apiKeys.workspaceId, workspaceId));
}

describe('createApiKey', () => {
  it('creates an ADMIN key whose token, shown once, works for requests', async () => {
    const admin = await server.newWorkspace();
    const result = (await admin.data(FixtureCreateApiKey, { input: { name: 'second admin', kind: 'ADMIN' } })).createApiKey;
    if (result.__typename !== 'CreateApiKeySuccess') throw new Error(JSON.stringify(result));
    expect(result.token).toMatch(/^msk_[0-9A-Za-z]{40}$/);
    expect(result.apiKey).toMatchObject({ name: 'second admin', kind: 'ADMIN', identityId: null, revoked: false, revokedAt: null });
    expect(result.apiKey.id).toMatch(/^key_[0-9a-z]{20}$/);
    const [row] = (await keyRows(admin.workspaceId)).filter((key) => key.id === result.apiKey.id);
    expect(row?.tokenSha256).toBe(sha256(result.token));
    expect(JSON.stringify(row)).not.toContain(result.token);
    const created = await sendRaw(server.anonymous(result.token), `mutation { createMemoryStore(input: { name: "by the new key" }) { ${RESULT} } }`);
    expect(created.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
  });

  it('creates an IDENTITY key bound to its identity, whose token works for that identity only', async () => {
    const admin = await server.newWorkspace();
    const pair = freshPair();
    const result = (await admin.data(FixtureCreateApiKey, { input: { name: 'agent runtime', kind: 'IDENTITY', identityId: pair.identityId } })).createApiKey;
    if (result.__typename !== 'CreateApiKeySuccess') throw new Error(JSON.stringify(result));
    expect(result.apiKey).toMatchObject({ kind: 'IDENTITY', identityId: pair.identityId, revoked: false });
    const client = server.anonymous(result.token);
    const session = await sendRaw(client, `mutation ($input: CreateSessionInput!) { createSession(input: $input) { ${RESULT} } }`, { input: { ...pair, environment: 'MANAGED' } });
    expect(session.data.createSession.__typename).toBe('CreateSessionSuccess');
    const foreign = await sendRaw(client, `mutation ($input: CreateSessionInput!) { createSession(input: $input) { ${RESULT} } }`, { input: { ...freshPair(), environment: 'MANAGED' } });
    expect(foreign.data.createSession).toMatchObject({ __typename: 'PermissionError', code: 'FORBIDDEN' });
  });

  it('refuses an IDENTITY key without a well-formed identityId, and an ADMIN key with one, on ["input","identityId"]', async () => {
    const admin = await server.newWorkspace();
    const before = await keyRows(admin.workspaceId);
    const attempts = [
      { name: 'no identity', kind: 'IDENTITY' as const },
      { name: 'null identity', kind: 'IDENTITY' as const, identityId: null },
      { name: 'empty', kind: 'IDENTITY' as const, identityId: '' },
      { name: 'bare prefix', kind: 'IDENTITY' as const, identityId: 'idn_' },
      { name: 'not an identity', kind: 'IDENTITY' as const, identityId: 'tmpl_abc' },
      { name: 'odd characters', kind: 'IDENTITY' as const, identityId: 'idn_a-b' },
      { name: 'too long', kind: 'IDENTITY' as const, identityId: `idn_${'a'.repeat(65)}` },
      { name: 'admin with identity', kind: 'ADMIN' as const, identityId: freshPair().identityId },
    ];
    for (const input of attempts) {
      const result = (await admin.data(FixtureCreateApiKey, { input })).createApiKey;
      expect(result.__typename, input.name).toBe('InvalidRequestError');
      if (result.__typename !== 'InvalidRequestError') continue;
      expect(result.code, input.name).toBe('INVALID_REQUEST');
      expect(result.issues.map((issue) => issue.field), input.name).toEqual([['input', 'identityId']]);
    }
    expect(await keyRows(admin.workspaceId)).toEqual(before);
  });

  it('never shows a secret again: ApiKey has no field for it, and apiKeys answers hold neither token nor hash', async () => {
    const admin = await server.newWorkspace();
    const created = await createKey(admin, 'ADMIN');
    const identity = await createKey(admin, 'IDENTITY', freshPair().identityId);
    const apiKeyType = schema.getType('ApiKey') as { getFields(): Record<string, unknown> };
    expect(Object.keys(apiKeyType.getFields()).sort()).toEqual(['createdAt', 'id', 'identityId', 'kind', 'name', 'revoked', 'revokedAt']);
    const listed = await admin.execute(ListKeys, {});
    const text = JSON.stringify(listed);
    for (const key of [created, identity, { token: admin.token! }]) {
      expect(text).not.toContain(key.token);
      expect(text).not.toContain(sha256(key.token));
    }
    // Only the creation's answer holds a token.
    const typesWithToken = Object.values(schema.getTypeMap()).filter(
      (type) => !type.name.startsWith('__') && 'getFields' in type && 'token' in (type as { getFields(): Record<string, unknown> }).getFields(),
    );
    expect(typesWithToken.map((type) => type.name)).toEqual(['CreateApiKeySuccess']);
  });
});

describe('revokeApiKey', () => {
  it('refuses the key from its next request on, and lists it as revoked', async () => {
    const admin = await server.newWorkspace();
    const second = await createKey(admin, 'ADMIN');
    expect((await sendRaw(second.client, '{ memoryStores { totalCount } }')).status).toBe(200);
    const result = (await admin.data(FixtureRevokeApiKey, { id: second.id })).revokeApiKey;
    expect(result).toMatchObject({ __typename: 'RevokeApiKeySuccess', apiKey: { id: second.id, kind: 'ADMIN', revoked: true } });
    expectUnauthenticated(await sendRaw(second.client, '{ memoryStores { totalCount } }'));
    expectUnauthenticated(await sendRaw(second.client, `mutation { createMemoryStore(input: { name: "after revocation" }) { ${RESULT} } }`));
    const [row] = (await keyRows(admin.workspaceId)).filter((key) => key.id === second.id);
    expect(row?.revokedAt).toBeInstanceOf(Date);
    const listed = (await admin.data(ListKeys, {})).apiKeys.edges.find((edge) => edge.node.id === second.id);
    expect(listed?.node).toMatchObject({ revoked: true, revokedAt: row!.revokedAt!.toISOString() });
  });

  it('lets an ADMIN key revoke itself while another ADMIN key remains', async () => {
    const admin = await server.newWorkspace();
    const second = await createKey(admin, 'ADMIN');
    const own = (await admin.data(ListKeys, { kind: 'ADMIN' })).apiKeys.edges.map((edge) => edge.node.id).filter((id) => id !== second.id);
    const result = (await admin.data(FixtureRevokeApiKey, { id: own[0]! })).revokeApiKey;
    expect(result.__typename).toBe('RevokeApiKeySuccess');
    expectUnauthenticated(await sendRaw(admin, '{ memoryStores { totalCount } }'));
    expect((await sendRaw(second.client, '{ memoryStores { totalCount } }')).status).toBe(200);
  });

  it('answers ConflictError for a second revocation, and changes nothing', async () => {
    const admin = await server.newWorkspace();
    const key = await createKey(admin, 'IDENTITY', freshPair().identityId);
    await revokeKey(admin, key.id);
    const before = await keyRows(admin.workspaceId);
    const again = (await admin.data(FixtureRevokeApiKey, { id: key.id })).revokeApiKey;
    expect(again).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await keyRows(admin.workspaceId)).toEqual(before);
  });

  it('answers ConflictError for the workspace\'s last active ADMIN key (IDENTITY and revoked keys do not count)', async () => {
    const admin = await server.newWorkspace();
    await createKey(admin, 'IDENTITY', freshPair().identityId);
    const spare = await createKey(admin, 'ADMIN');
    await revokeKey(admin, spare.id);
    const [own] = (await keyRows(admin.workspaceId)).filter((key) => key.kind === 'admin' && key.revokedAt === null);
    const before = await keyRows(admin.workspaceId);
    const result = (await admin.data(FixtureRevokeApiKey, { id: own!.id })).revokeApiKey;
    expect(result).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await keyRows(admin.workspaceId)).toEqual(before);
    expect((await sendRaw(admin, '{ memoryStores { totalCount } }')).status).toBe(200);
  });

  it('two ADMIN keys revoking each other at once: exactly one succeeds, and an ADMIN key stays active', async () => {
    for (let round = 0; round < 5; round += 1) {
      const first = await server.newWorkspace();
      const firstKeyId = (await keyRows(first.workspaceId))[0]!.id;
      const second = await createKey(first, 'ADMIN');
      const results = await Promise.all([
        first.execute(FixtureRevokeApiKey, { id: second.id }),
        second.client.execute(FixtureRevokeApiKey, { id: firstKeyId }),
      ]);
      // The loser either ran and found the other revocation done (CONFLICT), or arrived with
      // a key that had just been revoked (401): which one depends on when it arrived.
      const outcomes = results.map((result) => result.data?.revokeApiKey.__typename ?? result.errors?.[0]?.extensions?.code).sort();
      expect(outcomes.filter((outcome) => outcome === 'RevokeApiKeySuccess'), `round ${round}`).toHaveLength(1);
      expect(outcomes.filter((outcome) => outcome !== 'RevokeApiKeySuccess').every((outcome) => outcome === 'ConflictError' || outcome === 'UNAUTHENTICATED'), `round ${round}: ${outcomes}`).toBe(true);
      const active = (await keyRows(first.workspaceId)).filter((key) => key.kind === 'admin' && key.revokedAt === null);
      expect(active, `round ${round}`).toHaveLength(1);
    }
  });

  it('answers NotFoundError for unknown and malformed key ids', async () => {
    const admin = await server.newWorkspace();
    for (const id of ['key_00000000000000000000', 'key_', 'memstore_00000000000000000000', 'x']) {
      const result = (await admin.data(FixtureRevokeApiKey, { id })).revokeApiKey;
      expect(result, id).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
  });
});

describe('apiKeys', () => {
  async function workspaceWithKeys() {
    const admin = await server.newWorkspace();
    const [firstKey] = await keyRows(admin.workspaceId);
    const created: CreatedKey[] = [];
    created.push(await createKey(admin, 'IDENTITY', freshPair().identityId, 'identity one'));
    created.push(await createKey(admin, 'ADMIN', undefined, 'admin two'));
    created.push(await createKey(admin, 'IDENTITY', freshPair().identityId, 'identity two'));
    created.push(await createKey(admin, 'IDENTITY', freshPair().identityId, 'identity three'));
    await revokeKey(admin, created[2]!.id);
    return { admin, idsOldestFirst: [firstKey!.id, ...created.map((key) => key.id)], revokedId: created[2]!.id };
  }

  it('lists the workspace\'s keys newest first, revoked ones included by default', async () => {
    const { admin, idsOldestFirst } = await workspaceWithKeys();
    const { apiKeys: list } = await admin.data(ListKeys, {});
    expect(list.edges.map((edge) => edge.node.id)).toEqual([...idsOldestFirst].reverse());
    expect(list.totalCount).toBe(idsOldestFirst.length);
    const times = list.edges.map((edge) => edge.node.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
  });

  it('pages newest first with first/after', async () => {
    const { admin, idsOldestFirst } = await workspaceWithKeys();
    const seen: string[] = [];
    let after: string | null | undefined;
    for (;;) {
      const { apiKeys: page } = await admin.data(ListKeys, { first: 2, after });
      seen.push(...page.edges.map((edge) => edge.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual([...idsOldestFirst].reverse());
  });

  it('filters by kind and leaves revoked keys out with includeRevoked: false', async () => {
    const { admin, idsOldestFirst, revokedId } = await workspaceWithKeys();
    const rows = await keyRows(admin.workspaceId);
    const kindOf = new Map(rows.map((row) => [row.id, row.kind]));
    const newestFirst = [...idsOldestFirst].reverse();
    const ids = async (variables: { kind?: 'ADMIN' | 'IDENTITY'; includeRevoked?: boolean }) => {
      const { apiKeys: list } = await admin.data(ListKeys, variables);
      expect(list.totalCount, JSON.stringify(variables)).toBe(list.edges.length);
      return list.edges.map((edge) => edge.node.id);
    };
    expect(await ids({ kind: 'IDENTITY' })).toEqual(newestFirst.filter((id) => kindOf.get(id) === 'identity'));
    expect(await ids({ kind: 'ADMIN' })).toEqual(newestFirst.filter((id) => kindOf.get(id) === 'admin'));
    expect(await ids({ includeRevoked: false })).toEqual(newestFirst.filter((id) => id !== revokedId));
    expect(await ids({ kind: 'IDENTITY', includeRevoked: false })).toEqual(newestFirst.filter((id) => kindOf.get(id) === 'identity' && id !== revokedId));
    const { apiKeys: list } = await admin.data(ListKeys, { kind: 'IDENTITY' });
    for (const edge of list.edges) expect(edge.node.identityId).toMatch(/^idn_/);
  });
});
