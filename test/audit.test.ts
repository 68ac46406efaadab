import { and, eq, isNotNull } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memoryVersions } from '../src/db/schema.js';
import { newId } from '../src/domain/ids.js';
import { graphql } from './generated/gql.js';
import { createMemory, createStore, deleteMemory, updateMemory } from './support/builders.js';
import { useTestServer, type TestClient } from './support/server.js';
import { agentDelete, agentWrite, createKey, firstKeyIdOf, FixtureRevokeApiKey, freshPair, redactVersion, sendRaw, sessionOf } from './support/workspace-fixture.js';

/**
 * Every version records who made it (API.md §7): the API key of an API write, the session
 * of an agent write, and the key that redacted it; both version lists filter by author.
 */

const server = useTestServer();

const AuditVersionFields = graphql(`
  fragment AuditVersionFields on MemoryVersion {
    id
    memoryId
    path
    operation
    redacted
    createdBy {
      __typename
      ... on ApiKeyActor {
        apiKeyId
      }
      ... on SessionActor {
        sessionId
      }
    }
    redactedBy {
      __typename
      ... on ApiKeyActor {
        apiKeyId
      }
      ... on SessionActor {
        sessionId
      }
    }
  }
`);

const AuditStoreVersions = graphql(`
  query AuditStoreVersions($storeId: ID!, $memoryId: ID, $apiKeyId: ID, $sessionId: ID, $first: Int, $after: String) {
    memoryStore(id: $storeId) {
      versions(memoryId: $memoryId, apiKeyId: $apiKeyId, sessionId: $sessionId, first: $first, after: $after) {
        totalCount
        edges {
          node {
            ...AuditVersionFields
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

const AuditMemoryVersions = graphql(`
  query AuditMemoryVersions($memoryId: ID!, $apiKeyId: ID, $sessionId: ID, $first: Int, $after: String) {
    memory(id: $memoryId) {
      versions(apiKeyId: $apiKeyId, sessionId: $sessionId, first: $first, after: $after) {
        totalCount
        edges {
          node {
            ...AuditVersionFields
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

const AuditVersion = graphql(`
  query AuditVersion($id: ID!) {
    memoryVersion(id: $id) {
      ...AuditVersionFields
    }
  }
`);

type Actor = { __typename: 'ApiKeyActor'; apiKeyId: string } | { __typename: 'SessionActor'; sessionId: string };
const byKey = (apiKeyId: string): Actor => ({ __typename: 'ApiKeyActor', apiKeyId });
const bySession = (sessionId: string): Actor => ({ __typename: 'SessionActor', sessionId });

/** A store's versions (or one memory's, deleted ones included), newest first, with an optional author filter. */
async function storeVersions(client: TestClient, storeId: string, filter: { memoryId?: string; apiKeyId?: string; sessionId?: string } = {}) {
  const versions = (await client.data(AuditStoreVersions, { storeId, first: 100, ...filter })).memoryStore!.versions;
  expect(versions.totalCount, JSON.stringify(filter)).toBe(versions.edges.length);
  return versions.edges.map((edge) => edge.node);
}

/** A live memory's versions, newest first, with an optional author filter. */
async function memoryVersionsOf(client: TestClient, memoryId: string, filter: { apiKeyId?: string; sessionId?: string } = {}) {
  const versions = (await client.data(AuditMemoryVersions, { memoryId, first: 100, ...filter })).memory!.versions;
  expect(versions.totalCount, JSON.stringify(filter)).toBe(versions.edges.length);
  return versions.edges.map((edge) => edge.node);
}

/** A new workspace with two ADMIN keys (the workspace's first, and a second one). */
async function workspaceWithTwoKeys() {
  const first = await server.newWorkspace();
  const firstKeyId = await firstKeyIdOf(server.db, first.workspaceId);
  const second = await createKey(first, 'ADMIN', undefined, 'second admin');
  return { first, firstKeyId, second: second.client, secondKeyId: second.id };
}

describe('who made a version', () => {
  it('createMemory, updateMemory and deleteMemory record the API key that made each version', async () => {
    const { first, firstKeyId, second, secondKeyId } = await workspaceWithTwoKeys();
    const store = await createStore(first);
    const memory = await createMemory(first, store.id, { path: 'audit/a.md', content: 'one' });
    await updateMemory(second, { id: memory.id, content: 'two' });
    await updateMemory(second, { id: memory.id, path: 'audit/renamed.md' });
    const deleted = await deleteMemory(first, memory.id);

    const versions = await storeVersions(first, store.id, { memoryId: memory.id });
    expect(versions.map((version) => [version.operation, version.createdBy])).toEqual([
      ['DELETED', byKey(firstKeyId)],
      ['UPDATED', byKey(secondKeyId)],
      ['UPDATED', byKey(secondKeyId)],
      ['CREATED', byKey(firstKeyId)],
    ]);
    expect(deleted.version.createdBy).toEqual(byKey(firstKeyId));
    for (const version of versions) expect(version.redactedBy).toBeNull();

    const rows = await server.db
      .select({ id: memoryVersions.id, apiKeyId: memoryVersions.createdByApiKeyId, sessionId: memoryVersions.createdBySessionId })
      .from(memoryVersions)
      .where(and(eq(memoryVersions.workspaceId, first.workspaceId), eq(memoryVersions.memoryId, memory.id)));
    expect(new Map(rows.map((row) => [row.id, row.apiKeyId]))).toEqual(new Map(versions.map((version) => [version.id, (version.createdBy as { apiKeyId: string }).apiKeyId])));
    for (const row of rows) expect(row.sessionId).toBeNull();
  });

  it('writeSessionMemory and deleteSessionMemory record the session, each session its own', async () => {
    const admin = await server.newWorkspace();
    const pair = freshPair();
    const session = await sessionOf(admin, pair);
    const later = await sessionOf(admin, pair);
    const written = await agentWrite(admin, session.id, 'agent/notes.md', 'first');
    await agentWrite(admin, later.id, 'agent/notes.md', 'second');
    const removed = await agentDelete(admin, session.id, 'agent/notes.md');

    const versions = await storeVersions(admin, session.defaultMemoryStoreId, { memoryId: written.id });
    expect(versions.map((version) => [version.id, version.operation, version.createdBy])).toEqual([
      [removed.version.id, 'DELETED', bySession(session.id)],
      [expect.any(String), 'UPDATED', bySession(later.id)],
      [written.latestVersion.id, 'CREATED', bySession(session.id)],
    ]);
    const single = (await admin.data(AuditVersion, { id: written.latestVersion.id })).memoryVersion;
    expect(single?.createdBy).toEqual(bySession(session.id));

    const rows = await server.db
      .select({ apiKeyId: memoryVersions.createdByApiKeyId })
      .from(memoryVersions)
      .where(and(eq(memoryVersions.workspaceId, admin.workspaceId), eq(memoryVersions.memoryId, written.id)));
    expect(rows.map((row) => row.apiKeyId)).toEqual([null, null, null]);
  });

  it('redactMemoryVersion records the API key that redacted it, and keeps who created it', async () => {
    const { first, firstKeyId, second, secondKeyId } = await workspaceWithTwoKeys();
    const pair = freshPair();
    const session = await sessionOf(first, pair);
    const byApi = await createMemory(first, session.defaultMemoryStoreId, { path: 'audit/api.md', content: 'by a key' });
    await updateMemory(first, { id: byApi.id, content: 'by a key, again' });
    const byAgent = await agentWrite(first, session.id, 'audit/agent.md', 'by the agent');

    const [newest, oldest] = await memoryVersionsOf(first, byApi.id);
    await redactVersion(second, oldest!.id);
    await redactVersion(second, byAgent.latestVersion.id);

    const redacted = (await first.data(AuditVersion, { id: oldest!.id })).memoryVersion;
    expect(redacted).toMatchObject({ redacted: true, createdBy: byKey(firstKeyId), redactedBy: byKey(secondKeyId) });
    const untouched = (await first.data(AuditVersion, { id: newest!.id })).memoryVersion;
    expect(untouched).toMatchObject({ redacted: false, createdBy: byKey(firstKeyId), redactedBy: null });
    const agentVersion = (await first.data(AuditVersion, { id: byAgent.latestVersion.id })).memoryVersion;
    expect(agentVersion).toMatchObject({ redacted: true, createdBy: bySession(session.id), redactedBy: byKey(secondKeyId) });

    const rows = await server.db
      .select()
      .from(memoryVersions)
      .where(and(eq(memoryVersions.workspaceId, first.workspaceId), isNotNull(memoryVersions.redactedAt)));
    expect(rows.map((row) => [row.id, row.redactedByApiKeyId, row.redactedBySessionId]).sort()).toEqual(
      [
        [oldest!.id, secondKeyId, null],
        [byAgent.latestVersion.id, secondKeyId, null],
      ].sort(),
    );
  });
});

describe('version filters by author', () => {
  /** Two API keys and two sessions of one pair, all writing into the pair's default store. */
  async function mixedAuthors() {
    const { first, firstKeyId, second, secondKeyId } = await workspaceWithTwoKeys();
    const pair = freshPair();
    const session = await sessionOf(first, pair);
    const otherSession = await sessionOf(first, pair);
    const storeId = session.defaultMemoryStoreId;

    const shared = await createMemory(first, storeId, { path: 'shared.md', content: 'key one' });
    await agentWrite(first, session.id, 'shared.md', 'agent one');
    await updateMemory(second, { id: shared.id, content: 'key two' });
    await agentWrite(first, otherSession.id, 'shared.md', 'agent two');
    await updateMemory(first, { id: shared.id, metadata: { reviewed: 'yes' } });
    await agentWrite(first, session.id, 'shared.md', 'agent one again');

    const agentOnly = await agentWrite(first, session.id, 'agent-only.md', 'from the agent');
    await updateMemory(second, { id: agentOnly.id, content: 'fixed by key two' });
    await agentDelete(first, session.id, 'agent-only.md');
    const keyOnly = await createMemory(second, storeId, { path: 'key-only.md', content: 'from key two' });
    await deleteMemory(first, keyOnly.id);

    return { client: first, storeId, sharedId: shared.id, firstKeyId, secondKeyId, sessionId: session.id, otherSessionId: otherSession.id };
  }

  const authorOf = (actor: Actor) => (actor.__typename === 'ApiKeyActor' ? actor.apiKeyId : actor.sessionId);

  it('MemoryStore.versions(apiKeyId:, sessionId:) lists exactly that author\'s versions, newest first', async () => {
    const world = await mixedAuthors();
    const all = await storeVersions(world.client, world.storeId);
    expect(all).toHaveLength(11);
    const authors = [world.firstKeyId, world.secondKeyId, world.sessionId, world.otherSessionId];
    expect(new Set(all.map((version) => authorOf(version.createdBy as Actor)))).toEqual(new Set(authors));
    for (const author of authors) {
      const filter = author.startsWith('key_') ? { apiKeyId: author } : { sessionId: author };
      const expected = all.filter((version) => authorOf(version.createdBy as Actor) === author).map((version) => version.id);
      expect(expected.length, author).toBeGreaterThan(0);
      expect((await storeVersions(world.client, world.storeId, filter)).map((version) => version.id), author).toEqual(expected);
      // The same filter with memoryId narrows to the shared memory's versions of that author.
      const ofShared = all.filter((version) => version.memoryId === world.sharedId && authorOf(version.createdBy as Actor) === author).map((version) => version.id);
      expect((await storeVersions(world.client, world.storeId, { ...filter, memoryId: world.sharedId })).map((version) => version.id), author).toEqual(ofShared);

      const rows = await server.db
        .select({ id: memoryVersions.id })
        .from(memoryVersions)
        .where(
          and(
            eq(memoryVersions.workspaceId, world.client.workspaceId),
            eq(memoryVersions.memoryStoreId, world.storeId),
            author.startsWith('key_') ? eq(memoryVersions.createdByApiKeyId, author) : eq(memoryVersions.createdBySessionId, author),
          ),
        );
      expect(rows.map((row) => row.id).sort(), author).toEqual([...expected].sort());
    }
  });

  it('Memory.versions(apiKeyId:, sessionId:) lists exactly that author\'s versions of the memory, newest first', async () => {
    const world = await mixedAuthors();
    const all = await memoryVersionsOf(world.client, world.sharedId);
    expect(all.map((version) => authorOf(version.createdBy as Actor))).toEqual([
      world.sessionId,
      world.firstKeyId,
      world.otherSessionId,
      world.secondKeyId,
      world.sessionId,
      world.firstKeyId,
    ]);
    for (const author of [world.firstKeyId, world.secondKeyId, world.sessionId, world.otherSessionId]) {
      const filter = author.startsWith('key_') ? { apiKeyId: author } : { sessionId: author };
      const expected = all.filter((version) => authorOf(version.createdBy as Actor) === author).map((version) => version.id);
      expect((await memoryVersionsOf(world.client, world.sharedId, filter)).map((version) => version.id), author).toEqual(expected);
    }
  });

  it('still finds a key\'s versions after the key is revoked', async () => {
    const world = await mixedAuthors();
    const before = (await storeVersions(world.client, world.storeId, { apiKeyId: world.secondKeyId })).map((version) => version.id);
    const result = (await world.client.data(FixtureRevokeApiKey, { id: world.secondKeyId })).revokeApiKey;
    expect(result.__typename).toBe('RevokeApiKeySuccess');
    const after = await storeVersions(world.client, world.storeId, { apiKeyId: world.secondKeyId });
    expect(after.map((version) => version.id)).toEqual(before);
    for (const version of after) expect(version.createdBy).toEqual(byKey(world.secondKeyId));
  });

  it('pages through a filtered list without gaps or repeats', async () => {
    const world = await mixedAuthors();
    const expected = (await storeVersions(world.client, world.storeId, { sessionId: world.sessionId })).map((version) => version.id);
    const seen: string[] = [];
    let after: string | null | undefined;
    for (;;) {
      const page = (await world.client.data(AuditStoreVersions, { storeId: world.storeId, sessionId: world.sessionId, first: 2, after })).memoryStore!.versions;
      expect(page.totalCount).toBe(expected.length);
      seen.push(...page.edges.map((edge) => edge.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual(expected);
  });

  it('answers an empty list for authors that wrote nothing here: unknown ids, an IDENTITY key, another workspace\'s key and session', async () => {
    const world = await mixedAuthors();
    const identityKey = await createKey(world.client, 'IDENTITY', freshPair().identityId);
    const other = await server.newWorkspace();
    const otherKeyId = await firstKeyIdOf(server.db, other.workspaceId);
    const otherSession = await sessionOf(other, freshPair());
    const otherStore = await createStore(other);
    await createMemory(other, otherStore.id);
    await agentWrite(other, otherSession.id, 'shared.md', 'elsewhere');
    for (const filter of [
      { apiKeyId: newId('apiKey') },
      { sessionId: newId('session') },
      { apiKeyId: identityKey.id },
      { apiKeyId: otherKeyId },
      { sessionId: otherSession.id },
    ]) {
      expect(await storeVersions(world.client, world.storeId, filter), JSON.stringify(filter)).toEqual([]);
      expect(await memoryVersionsOf(world.client, world.sharedId, filter), JSON.stringify(filter)).toEqual([]);
    }
  });

  it('refuses a malformed apiKeyId or sessionId as a top-level INVALID_REQUEST on both lists', async () => {
    const world = await mixedAuthors();
    const malformed = [
      { apiKeyId: world.sessionId },
      { apiKeyId: 'key_' },
      { apiKeyId: 'key_TOOSHORT' },
      { apiKeyId: '' },
      { apiKeyId: 'msk_0123456789012345678901234567890123456789' },
      { sessionId: world.firstKeyId },
      { sessionId: 'sesn_' },
      { sessionId: `${world.sessionId}x` },
      { sessionId: '' },
    ];
    for (const filter of malformed) {
      for (const query of [
        `query ($id: ID!, $apiKeyId: ID, $sessionId: ID) { memoryStore(id: $id) { versions(apiKeyId: $apiKeyId, sessionId: $sessionId) { totalCount } } }`,
        `query ($id: ID!, $apiKeyId: ID, $sessionId: ID) { memory(id: $id) { versions(apiKeyId: $apiKeyId, sessionId: $sessionId) { totalCount } } }`,
      ]) {
        const id = query.includes('memoryStore') ? world.storeId : world.sharedId;
        const response = await sendRaw(world.client, query, { id, ...filter });
        expect(response.errors?.map((error) => error.extensions?.code), `${JSON.stringify(filter)} on ${id}`).toEqual(['INVALID_REQUEST']);
      }
    }
  });
});
