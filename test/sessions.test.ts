import { createHash } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memoryStores, sessions } from '../src/db/schema.js';
import { newId } from '../src/domain/ids.js';
import { DEFAULT_STORE_NAME, SANDBOX_MEMORY_ROOT } from '../src/domain/limits.js';
import { graphql } from './generated/gql.js';
import {
  apiKeyIdOf,
  archiveStore,
  createMemory,
  createStore,
  defaultStoreRows,
  memoryRows,
  mountRows,
  mountStore,
  newPair,
  setMountTime,
  startSession,
  storeRow,
  updateMemory,
  versionRows,
  type Pair,
} from './support/builders.js';
import { GetSession, GetStore, PairMounts, StartSession, UnmountStore } from './support/documents.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const SessionFiles = graphql(`
  query SessionFiles($id: ID!, $pathPrefix: String, $first: Int, $after: String, $last: Int, $before: String) {
    session(id: $id) {
      files(pathPrefix: $pathPrefix, first: $first, after: $after, last: $last, before: $before) {
        totalCount
        edges {
          cursor
          node {
            path
            sandboxPath
            access
            memory {
              id
              memoryStoreId
              path
              content
            }
            shadowed {
              id
              memoryStoreId
              path
            }
          }
        }
        pageInfo {
          ...PageFields
        }
      }
    }
  }
`);

const SessionNode = graphql(`
  query SessionNode($id: ID!) {
    node(id: $id) {
      __typename
      id
      ... on Session {
        identityId
        templateId
        environment
      }
    }
  }
`);

const AgentWrite = graphql(`
  mutation AgentWrite($input: WriteSessionMemoryInput!) {
    writeSessionMemory(input: $input) {
      __typename
      ... on WriteSessionMemorySuccess {
        memory {
          ...MemoryFields
          latestVersion {
            id
            operation
            createdBy {
              __typename
              ... on SessionActor {
                sessionId
              }
              ... on ApiKeyActor {
                apiKeyId
              }
            }
          }
        }
      }
      ...ErrorFields
    }
  }
`);

const AgentDelete = graphql(`
  mutation AgentDelete($input: DeleteSessionMemoryInput!) {
    deleteSessionMemory(input: $input) {
      __typename
      ... on DeleteSessionMemorySuccess {
        deletedMemoryId
        version {
          id
          memoryId
          memoryStoreId
          path
          content
          contentSha256
          operation
          memory {
            id
          }
          createdBy {
            __typename
            ... on SessionActor {
              sessionId
            }
          }
        }
      }
      ... on Error {
        code
        message
      }
      ... on PreconditionFailedError {
        currentContentSha256
      }
    }
  }
`);

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const at = (day: number) => new Date(Date.UTC(2026, 0, day));

async function attemptSession(client: TestClient, input: Pair & { environment: 'MANAGED' | 'SELF_HOSTED' }) {
  const response = await client.execute(StartSession, { input });
  expect(response.errors).toBeUndefined();
  return response.data!.createSession;
}

async function filesPage(client: TestClient, id: string, args: { pathPrefix?: string; first?: number; after?: string; last?: number; before?: string } = {}) {
  const response = await client.execute(SessionFiles, { id, ...args });
  expect(response.errors).toBeUndefined();
  return response.data!.session!.files;
}

/** Every file of a session, paging forward with `first`. */
async function allFiles(client: TestClient, id: string, first = 100, pathPrefix?: string) {
  const files = [];
  let after: string | undefined;
  for (;;) {
    const page = await filesPage(client, id, { first, after, pathPrefix });
    files.push(...page.edges.map((edge) => edge.node));
    if (!page.pageInfo.hasNextPage) return files;
    after = page.pageInfo.endCursor!;
  }
}

async function write(client: TestClient, input: { sessionId: string; path: string; content: string; expectedContentSha256?: string }) {
  const response = await client.execute(AgentWrite, { input });
  expect(response.errors).toBeUndefined();
  return response.data!.writeSessionMemory;
}

async function remove(client: TestClient, input: { sessionId: string; path: string; expectedContentSha256?: string }) {
  const response = await client.execute(AgentDelete, { input });
  expect(response.errors).toBeUndefined();
  return response.data!.deleteSessionMemory;
}

/** A store's counters and its memory and version rows, for "nothing was written" checks. */
async function storeState(client: TestClient, storeId: string) {
  const store = await storeRow(server.db, client.workspaceId, storeId);
  return {
    entryCount: store?.entryCount,
    totalSize: store?.totalSize,
    memories: (await memoryRows(server.db, client.workspaceId, storeId)).map((row) => [row.path, row.content, row.metadata]),
    versions: (await versionRows(server.db, client.workspaceId, storeId)).length,
  };
}

async function sessionRows(client: TestClient) {
  return server.db.select().from(sessions).where(eq(sessions.workspaceId, client.workspaceId));
}

/**
 * A pair whose default store exists (made by a SELF_HOSTED session, which injects nothing),
 * so a test can fill it and set mount times before the session it looks at.
 */
async function pairWithDefaultStore(client: TestClient) {
  const pair = newPair();
  const warmUp = await startSession(client, pair, 'SELF_HOSTED');
  return { pair, defaultStoreId: warmUp.defaultMemoryStore.id };
}

describe('createSession', () => {
  it('creates the pair\'s system-managed default store on first use, mounted READ_WRITE in its default slot', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const result = await attemptSession(client, { ...pair, environment: 'MANAGED' });
    expect(result.__typename).toBe('CreateSessionSuccess');
    if (result.__typename !== 'CreateSessionSuccess') return;
    const { session } = result;
    expect(session.id).toMatch(/^sesn_[0-9a-z]{20}$/);
    expect(session).toMatchObject({ ...pair, environment: 'MANAGED', memoryInjected: true });
    const store = session.defaultMemoryStore!;
    expect(store).toMatchObject({
      name: DEFAULT_STORE_NAME,
      description: '',
      status: 'ACTIVE',
      systemManaged: true,
      identityId: pair.identityId,
      entryCount: 0,
      totalSize: 0,
      metadata: { created_by: 'forward' },
      archivedAt: null,
      bindingInfo: { identityTemplateCount: 1 },
    });
    expect(store.id).toMatch(/^memstore_[0-9a-z]{20}$/);
    expect(session.mounts).toEqual([
      {
        memoryStoreId: store.id,
        memoryStore: { id: store.id },
        ...pair,
        access: 'READ_WRITE',
        systemManaged: true,
        name: DEFAULT_STORE_NAME,
        status: 'active',
        entryCount: 0,
        createdAt: session.mounts[0]!.createdAt,
      },
    ]);

    expect((await defaultStoreRows(server.db, client.workspaceId, pair)).map((row) => [row.id, row.systemManaged, row.identityId, row.name])).toEqual([
      [store.id, true, pair.identityId, DEFAULT_STORE_NAME],
    ]);
    expect(await mountRows(server.db, client.workspaceId, pair)).toMatchObject([{ memoryStoreId: store.id, access: 'read_write', systemManaged: true }]);
    expect(await sessionRows(client)).toMatchObject([{ id: session.id, ...pair, environment: 'managed', defaultMemoryStoreId: store.id, memoryInjected: true }]);
  });

  it('reuses the default store for every later session of the pair, and gives each pair (and workspace) its own', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const pair = newPair();
    const first = await startSession(client, pair, 'SELF_HOSTED');
    const second = await startSession(client, pair);
    const third = await startSession(client, pair, 'SELF_HOSTED');
    const defaultStoreId = first.defaultMemoryStore.id;
    expect([second.defaultMemoryStore.id, third.defaultMemoryStore.id]).toEqual([defaultStoreId, defaultStoreId]);
    expect(new Set([first.id, second.id, third.id]).size).toBe(3);
    expect((await defaultStoreRows(server.db, client.workspaceId, pair)).map((row) => row.id)).toEqual([defaultStoreId]);
    expect(await mountRows(server.db, client.workspaceId, pair)).toHaveLength(1);

    const sameIdentity = { identityId: pair.identityId, templateId: newPair().templateId };
    const sibling = await startSession(client, sameIdentity);
    expect(sibling.defaultMemoryStore.id).not.toBe(defaultStoreId);
    const elsewhere = await startSession(other, pair);
    expect(elsewhere.defaultMemoryStore.id).not.toBe(defaultStoreId);
    expect((await defaultStoreRows(server.db, other.workspaceId, pair)).map((row) => row.id)).toEqual([elsewhere.defaultMemoryStore.id]);
    const systemStores = await server.db.select().from(memoryStores).where(and(eq(memoryStores.workspaceId, client.workspaceId), eq(memoryStores.systemManaged, true)));
    expect(systemStores).toHaveLength(2);
  });

  it('a MANAGED session injects every active mount in list order, the default slot first, and memoryInjected is true', async () => {
    const client = await server.newWorkspace();
    const { pair, defaultStoreId } = await pairWithDefaultStore(client);
    const [a, b, c] = [await createStore(client, { name: 'a' }), await createStore(client, { name: 'b' }), await createStore(client, { name: 'c' })];
    for (const store of [a, b, c]) await mountStore(client, store.id, pair);
    await setMountTime(server.db, client.workspaceId, pair, a.id, at(3));
    await setMountTime(server.db, client.workspaceId, pair, b.id, at(1));
    await setMountTime(server.db, client.workspaceId, pair, c.id, at(2));
    await setMountTime(server.db, client.workspaceId, pair, defaultStoreId, at(9));

    const session = await startSession(client, pair);
    expect(session.memoryInjected).toBe(true);
    expect(session.mounts.map((mount) => [mount.memoryStoreId, mount.access, mount.systemManaged, mount.createdAt, mount.name])).toEqual([
      [defaultStoreId, 'READ_WRITE', true, at(9).toISOString(), DEFAULT_STORE_NAME],
      [b.id, 'READ_ONLY', false, at(1).toISOString(), 'b'],
      [c.id, 'READ_ONLY', false, at(2).toISOString(), 'c'],
      [a.id, 'READ_ONLY', false, at(3).toISOString(), 'a'],
    ]);
    const listed = (await client.data(PairMounts, pair)).memoryStoreMounts.edges.map((edge) => edge.node);
    expect(session.mounts).toEqual(listed);
    const [row] = (await sessionRows(client)).filter((candidate) => candidate.id === session.id);
    expect(row?.injectedMounts.map((mount) => mount.memoryStoreId)).toEqual([defaultStoreId, b.id, c.id, a.id]);
  });

  it('does not inject a mount whose store is not active', async () => {
    const client = await server.newWorkspace();
    const { pair, defaultStoreId } = await pairWithDefaultStore(client);
    const active = await createStore(client);
    const inactive = await createStore(client);
    await mountStore(client, active.id, pair);
    await mountStore(client, inactive.id, pair);
    // The API cannot archive a mounted store; the row is changed directly to reach this state.
    await server.db.update(memoryStores).set({ status: 'archived', archivedAt: new Date() }).where(and(eq(memoryStores.workspaceId, client.workspaceId), eq(memoryStores.id, inactive.id)));
    const session = await startSession(client, pair);
    expect(session.mounts.map((mount) => mount.memoryStoreId)).toEqual([defaultStoreId, active.id]);
  });

  it('a SELF_HOSTED session injects nothing (mounts [], memoryInjected false), while mounts and stores still work through the API', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const explicit = await createStore(client, { name: 'explicit' });
    await createMemory(client, explicit.id, { path: 'team.md' });
    await mountStore(client, explicit.id, pair);
    const result = await attemptSession(client, { ...pair, environment: 'SELF_HOSTED' });
    expect(result.__typename).toBe('CreateSessionSuccess');
    if (result.__typename !== 'CreateSessionSuccess') return;
    const { session } = result;
    expect(session).toMatchObject({ environment: 'SELF_HOSTED', memoryInjected: false, mounts: [] });
    const defaultStoreId = session.defaultMemoryStore!.id;
    expect(session.defaultMemoryStore).toMatchObject({ systemManaged: true, name: DEFAULT_STORE_NAME, identityId: pair.identityId });
    expect(await sessionRows(client)).toMatchObject([{ id: session.id, environment: 'self_hosted', memoryInjected: false, injectedMounts: [] }]);

    // The mounts exist and the stores answer as usual.
    const listed = (await client.data(PairMounts, pair)).memoryStoreMounts;
    expect(listed.edges.map((edge) => [edge.node.memoryStoreId, edge.node.access])).toEqual([[defaultStoreId, 'READ_WRITE'], [explicit.id, 'READ_ONLY']]);
    const another = await createStore(client);
    expect((await mountStore(client, another.id, pair)).access).toBe('READ_ONLY');
    await createMemory(client, defaultStoreId, { path: 'mine.md' });
    expect((await client.data(GetStore, { id: defaultStoreId })).memoryStore).toMatchObject({ entryCount: 1 });
    expect((await client.data(GetStore, { id: explicit.id })).memoryStore).toMatchObject({ entryCount: 1, bindingInfo: { identityTemplateCount: 1 } });

    // ...but the agent sees none of it.
    expect(await filesPage(client, session.id)).toMatchObject({ totalCount: 0, edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false } });
    expect(await filesPage(client, session.id, { pathPrefix: 'mine' })).toMatchObject({ totalCount: 0, edges: [] });
  });

  it('snapshots Session.mounts: later mounts and unmounts do not change an existing session', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const [a, b] = [await createStore(client), await createStore(client)];
    await mountStore(client, a.id, pair);
    const before = await startSession(client, pair);
    const defaultStoreId = before.defaultMemoryStore.id;
    expect(before.mounts.map((mount) => mount.memoryStoreId)).toEqual([defaultStoreId, a.id]);

    await mountStore(client, b.id, pair);
    expect((await client.data(GetSession, { id: before.id })).session?.mounts).toEqual(before.mounts);
    const { unmountMemoryStore } = await client.data(UnmountStore, { input: { memoryStoreId: a.id, ...pair } });
    expect(unmountMemoryStore.__typename).toBe('UnmountMemoryStoreSuccess');
    expect((await client.data(GetSession, { id: before.id })).session?.mounts).toEqual(before.mounts);

    const after = await startSession(client, pair);
    expect(after.mounts.map((mount) => mount.memoryStoreId)).toEqual([defaultStoreId, b.id]);
  });

  it('refuses malformed identity and template ids with INVALID_REQUEST and creates nothing', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const cases: [Partial<Pair>, string[][]][] = [
      [{ identityId: 'idn_' }, [['input', 'identityId']]],
      [{ identityId: 'idn_has-dash' }, [['input', 'identityId']]],
      [{ identityId: 'user_1' }, [['input', 'identityId']]],
      [{ identityId: `idn_${'a'.repeat(65)}` }, [['input', 'identityId']]],
      [{ templateId: 'tmpl_' }, [['input', 'templateId']]],
      [{ templateId: 'tmpl_has-dash' }, [['input', 'templateId']]],
      [{ templateId: `tmpl_${'a'.repeat(65)}` }, [['input', 'templateId']]],
      [{ identityId: 'idn_', templateId: 'tmpl_' }, [['input', 'identityId'], ['input', 'templateId']]],
    ];
    for (const [change, fields] of cases) {
      const result = await attemptSession(client, { ...pair, ...change, environment: 'MANAGED' });
      expect(result.__typename, JSON.stringify(change)).toBe('InvalidRequestError');
      expect(result.__typename === 'InvalidRequestError' && result.issues.map((issue) => issue.field), JSON.stringify(change)).toEqual(fields);
    }
    expect(await sessionRows(client)).toEqual([]);
    expect(await server.db.select().from(memoryStores).where(eq(memoryStores.workspaceId, client.workspaceId))).toEqual([]);
    expect(await mountRows(server.db, client.workspaceId)).toEqual([]);
  });
});

describe('session(id) and node(id)', () => {
  it('answer a session by its sesn_ id, and null for other workspaces, unknown and malformed ids', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(client, pair, 'SELF_HOSTED');
    const foreign = await startSession(other, pair);

    const { session: found } = await client.data(GetSession, { id: session.id });
    expect(found).toEqual(session);
    expect((await client.data(SessionNode, { id: session.id })).node).toEqual({ __typename: 'Session', id: session.id, ...pair, environment: 'SELF_HOSTED' });

    for (const id of [foreign.id, newId('session'), 'sesn_nope', 'sesn_', session.defaultMemoryStore!.id, `${session.id}x`, '']) {
      const bySession = await client.execute(GetSession, { id });
      expect(bySession.errors, id).toBeUndefined();
      expect(bySession.data?.session, id).toBeNull();
      const byNode = await client.execute(SessionNode, { id });
      expect(byNode.errors, id).toBeUndefined();
      if (id !== session.defaultMemoryStore!.id) expect(byNode.data?.node, id).toBeNull();
    }
    expect((await other.data(GetSession, { id: foreign.id })).session?.id).toBe(foreign.id);
  });
});

describe('Session.files', () => {
  it('shows each memory at /data/.qoder/awareness/<path> with the access of the store it comes from', async () => {
    expect(SANDBOX_MEMORY_ROOT).toBe('/data/.qoder/awareness/');
    const client = await server.newWorkspace();
    const { pair, defaultStoreId } = await pairWithDefaultStore(client);
    const team = await createStore(client);
    await mountStore(client, team.id, pair);
    const mine = await createMemory(client, defaultStoreId, { path: 'notes/mine.md', content: 'mine' });
    const theirs = await createMemory(client, team.id, { path: 'docs/team.md', content: 'theirs' });
    const session = await startSession(client, pair);

    const page = await filesPage(client, session.id);
    expect(page.totalCount).toBe(2);
    expect(page.edges.map((edge) => edge.node)).toEqual([
      {
        path: 'docs/team.md',
        sandboxPath: '/data/.qoder/awareness/docs/team.md',
        access: 'READ_ONLY',
        memory: { id: theirs.id, memoryStoreId: team.id, path: 'docs/team.md', content: 'theirs' },
        shadowed: [],
      },
      {
        path: 'notes/mine.md',
        sandboxPath: '/data/.qoder/awareness/notes/mine.md',
        access: 'READ_WRITE',
        memory: { id: mine.id, memoryStoreId: defaultStoreId, path: 'notes/mine.md', content: 'mine' },
        shadowed: [],
      },
    ]);
  });

  it('shadows by mount time: the earliest mount wins, the default slot by its own creation time, and shadowed lists the others in precedence order', async () => {
    const client = await server.newWorkspace();
    const { pair, defaultStoreId } = await pairWithDefaultStore(client);
    const [early, late] = [await createStore(client), await createStore(client)];
    await mountStore(client, early.id, pair);
    await mountStore(client, late.id, pair);
    await setMountTime(server.db, client.workspaceId, pair, early.id, at(1));
    await setMountTime(server.db, client.workspaceId, pair, defaultStoreId, at(2));
    await setMountTime(server.db, client.workspaceId, pair, late.id, at(3));
    const put = async (storeId: string, path: string) => (await createMemory(client, storeId, { path, content: `${path} in ${storeId}` })).id;
    const allInEarly = await put(early.id, 'all.md');
    const allInDefault = await put(defaultStoreId, 'all.md');
    const allInLate = await put(late.id, 'all.md');
    const pairInDefault = await put(defaultStoreId, 'default-and-late.md');
    const pairInLate = await put(late.id, 'default-and-late.md');
    const bothInEarly = await put(early.id, 'early-and-late.md');
    const bothInLate = await put(late.id, 'early-and-late.md');
    const onlyLate = await put(late.id, 'late-only.md');

    const session = await startSession(client, pair);
    const files = await allFiles(client, session.id);
    expect(files.map((file) => [file.path, file.access, file.memory.id, file.shadowed.map((memory) => memory.id)])).toEqual([
      ['all.md', 'READ_ONLY', allInEarly, [allInDefault, allInLate]],
      ['default-and-late.md', 'READ_WRITE', pairInDefault, [pairInLate]],
      ['early-and-late.md', 'READ_ONLY', bothInEarly, [bothInLate]],
      ['late-only.md', 'READ_ONLY', onlyLate, []],
    ]);
    expect(files[0]!.shadowed.map((memory) => memory.memoryStoreId)).toEqual([defaultStoreId, late.id]);
    expect(files[0]!.shadowed.every((memory) => memory.path === 'all.md')).toBe(true);
  });

  it('breaks ties in mount time by store id, the default slot included', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const lowest = await createStore(client);
    await new Promise((resolve) => setTimeout(resolve, 3));
    const defaultStoreId = (await startSession(client, pair, 'SELF_HOSTED')).defaultMemoryStore.id;
    await new Promise((resolve) => setTimeout(resolve, 3));
    const highest = await createStore(client);
    // Ids sort by creation time: lowest < default < highest. Mount in the other order.
    expect([lowest.id, defaultStoreId, highest.id]).toEqual([lowest.id, defaultStoreId, highest.id].sort());
    await mountStore(client, highest.id, pair);
    await mountStore(client, lowest.id, pair);
    for (const storeId of [lowest.id, defaultStoreId, highest.id]) await setMountTime(server.db, client.workspaceId, pair, storeId, at(1));
    const put = async (storeId: string, path: string) => (await createMemory(client, storeId, { path, content: storeId })).id;
    const sameInLowest = await put(lowest.id, 'same.md');
    const sameInDefault = await put(defaultStoreId, 'same.md');
    const sameInHighest = await put(highest.id, 'same.md');
    const twoInDefault = await put(defaultStoreId, 'two.md');
    const twoInHighest = await put(highest.id, 'two.md');

    const session = await startSession(client, pair);
    const files = await allFiles(client, session.id);
    expect(files.map((file) => [file.path, file.access, file.memory.id, file.shadowed.map((memory) => memory.id)])).toEqual([
      ['same.md', 'READ_ONLY', sameInLowest, [sameInDefault, sameInHighest]],
      ['two.md', 'READ_WRITE', twoInDefault, [twoInHighest]],
    ]);
  });

  it('keeps only paths that start with pathPrefix (a plain string prefix), and totalCount counts them', async () => {
    const client = await server.newWorkspace();
    const { pair, defaultStoreId } = await pairWithDefaultStore(client);
    const team = await createStore(client);
    await mountStore(client, team.id, pair);
    for (const path of ['a/b.md', 'a/bc.md', 'ab.md', 'a_b.md']) await createMemory(client, defaultStoreId, { path });
    for (const path of ['a/b.md', 'a/c.md', 'b.md']) await createMemory(client, team.id, { path });
    const session = await startSession(client, pair);

    const paths = async (pathPrefix: string | undefined) => {
      const page = await filesPage(client, session.id, { pathPrefix });
      return { totalCount: page.totalCount, paths: page.edges.map((edge) => edge.node.path) };
    };
    expect(await paths('a/b')).toEqual({ totalCount: 2, paths: ['a/b.md', 'a/bc.md'] });
    expect(await paths('a/')).toEqual({ totalCount: 3, paths: ['a/b.md', 'a/bc.md', 'a/c.md'] });
    expect(await paths('a_')).toEqual({ totalCount: 1, paths: ['a_b.md'] });
    expect(await paths('a%')).toEqual({ totalCount: 0, paths: [] });
    expect(await paths('A')).toEqual({ totalCount: 0, paths: [] });
    expect(await paths(undefined)).toEqual({ totalCount: 6, paths: ['a/b.md', 'a/bc.md', 'a/c.md', 'a_b.md', 'ab.md', 'b.md'] });
    const prefixed = await allFiles(client, session.id, 1, 'a/');
    expect(prefixed.map((file) => file.path)).toEqual(['a/b.md', 'a/bc.md', 'a/c.md']);
    expect(prefixed[0]!.shadowed).toHaveLength(1);
  });

  it('pages in byte order with first/after and last/before, without gaps or repeats; totalCount counts distinct paths', async () => {
    const client = await server.newWorkspace();
    const { pair, defaultStoreId } = await pairWithDefaultStore(client);
    const [a, b] = [await createStore(client), await createStore(client)];
    await mountStore(client, a.id, pair);
    await mountStore(client, b.id, pair);
    for (const path of ['B.md', 'a.md', 'c.md']) await createMemory(client, defaultStoreId, { path });
    for (const path of ['a.md', 'b.md', 'é.md']) await createMemory(client, a.id, { path });
    for (const path of ['c.md', 'd.md', 'Z.md', 'a.md']) await createMemory(client, b.id, { path });
    const session = await startSession(client, pair);
    const expected = ['B.md', 'Z.md', 'a.md', 'b.md', 'c.md', 'd.md', 'é.md'];

    const seen: string[] = [];
    const hasNext: boolean[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await filesPage(client, session.id, { first: 3, after });
      expect(page.totalCount).toBe(expected.length);
      expect(page.pageInfo.hasPreviousPage).toBe(after !== undefined);
      seen.push(...page.edges.map((edge) => edge.node.path));
      hasNext.push(page.pageInfo.hasNextPage);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor!;
    }
    expect(seen).toEqual(expected);
    expect(hasNext).toEqual([true, true, false]);

    const tail = await filesPage(client, session.id, { last: 3 });
    expect(tail.edges.map((edge) => edge.node.path)).toEqual(['c.md', 'd.md', 'é.md']);
    expect(tail.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
    const before = await filesPage(client, session.id, { last: 3, before: tail.pageInfo.startCursor! });
    expect(before.edges.map((edge) => edge.node.path)).toEqual(['Z.md', 'a.md', 'b.md']);
    expect(before.pageInfo.hasPreviousPage).toBe(true);
    const shared = seen.indexOf('a.md');
    expect((await allFiles(client, session.id))[shared]!.shadowed).toHaveLength(2);
  });

  it('refuses page sizes outside 0..100 with a top-level INVALID_REQUEST error', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    const cases: { first?: number; last?: number }[] = [{ first: 101 }, { first: -1 }, { last: 101 }, { first: 1, last: 1 }];
    for (const args of cases) {
      const response = await client.execute(SessionFiles, { id: session.id, ...args });
      expect(response.errors?.[0]?.extensions?.code, JSON.stringify(args)).toBe('INVALID_REQUEST');
    }
  });
});

describe('writeSessionMemory', () => {
  it('creates the path in the session\'s default store with metadata {"source":"agent"} and a CREATED version by the session', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const team = await createStore(client);
    await mountStore(client, team.id, pair);
    const session = await startSession(client, pair);
    const defaultStoreId = session.defaultMemoryStore!.id;

    const result = await write(client, { sessionId: session.id, path: 'notes/agent.md', content: 'hello é' });
    expect(result.__typename).toBe('WriteSessionMemorySuccess');
    if (result.__typename !== 'WriteSessionMemorySuccess') return;
    expect(result.memory).toMatchObject({
      memoryStoreId: defaultStoreId,
      path: 'notes/agent.md',
      content: 'hello é',
      contentSizeBytes: 8,
      contentSha256: sha256('hello é'),
      metadata: { source: 'agent' },
      latestVersion: { operation: 'CREATED', createdBy: { __typename: 'SessionActor', sessionId: session.id } },
    });
    expect(await storeState(client, defaultStoreId)).toEqual({ entryCount: 1, totalSize: 8, memories: [['notes/agent.md', 'hello é', { source: 'agent' }]], versions: 1 });
    expect((await versionRows(server.db, client.workspaceId, defaultStoreId))[0]).toMatchObject({
      id: result.memory.latestVersion.id,
      operation: 'created',
      createdBySessionId: session.id,
      createdByApiKeyId: null,
    });
    expect(await storeState(client, team.id)).toEqual({ entryCount: 0, totalSize: 0, memories: [], versions: 0 });
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('updates an existing path in place and replaces metadata set through the API with {"source":"agent"}', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    const defaultStoreId = session.defaultMemoryStore!.id;
    const byApi = await createMemory(client, defaultStoreId, { path: 'shared.md', content: 'from the API', metadata: { team: 'backend', created_by: 'me' } });

    const first = await write(client, { sessionId: session.id, path: 'shared.md', content: 'from the agent' });
    expect(first.__typename).toBe('WriteSessionMemorySuccess');
    if (first.__typename !== 'WriteSessionMemorySuccess') return;
    expect(first.memory).toMatchObject({ id: byApi.id, content: 'from the agent', metadata: { source: 'agent' }, latestVersion: { operation: 'UPDATED', createdBy: { __typename: 'SessionActor', sessionId: session.id } } });
    const versions = await versionRows(server.db, client.workspaceId, defaultStoreId, byApi.id);
    expect(versions.map((version) => [version.operation, version.createdByApiKeyId, version.createdBySessionId])).toEqual([
      ['created', await apiKeyIdOf(server.db, client.workspaceId), null],
      ['updated', null, session.id],
    ]);

    // An API write sets other metadata; the agent's next write, even of the same content, replaces it again.
    await updateMemory(client, { id: byApi.id, metadata: { team: 'frontend' } });
    const second = await write(client, { sessionId: session.id, path: 'shared.md', content: 'from the agent' });
    expect(second.__typename === 'WriteSessionMemorySuccess' && second.memory.metadata).toEqual({ source: 'agent' });
    expect((await memoryRows(server.db, client.workspaceId, defaultStoreId)).map((row) => [row.id, row.content, row.metadata])).toEqual([
      [byApi.id, 'from the agent', { source: 'agent' }],
    ]);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('writes only to the default store, never to an explicitly mounted store that holds the path', async () => {
    const client = await server.newWorkspace();
    const { pair, defaultStoreId } = await pairWithDefaultStore(client);
    const team = await createStore(client);
    await mountStore(client, team.id, pair);
    await setMountTime(server.db, client.workspaceId, pair, team.id, at(1));
    const teamMemory = await createMemory(client, team.id, { path: 'shared.md', content: 'team' });
    const session = await startSession(client, pair);
    const before = await storeState(client, team.id);

    const result = await write(client, { sessionId: session.id, path: 'shared.md', content: 'agent' });
    expect(result.__typename === 'WriteSessionMemorySuccess' && result.memory.memoryStoreId).toBe(defaultStoreId);
    expect(await storeState(client, team.id)).toEqual(before);
    expect((await memoryRows(server.db, client.workspaceId, defaultStoreId)).map((row) => [row.path, row.content])).toEqual([['shared.md', 'agent']]);
    // The team's store was mounted earlier, so its entry stays the visible one.
    const [file] = (await filesPage(client, session.id)).edges;
    expect(file?.node).toMatchObject({ path: 'shared.md', access: 'READ_ONLY', memory: { id: teamMemory.id }, shadowed: [{ memoryStoreId: defaultStoreId }] });
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('a stale expectedContentSha256 is PRECONDITION_FAILED with the current sha and writes nothing; the current sha succeeds', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    const defaultStoreId = session.defaultMemoryStore!.id;
    await write(client, { sessionId: session.id, path: 'a.md', content: 'v1' });
    const before = await storeState(client, defaultStoreId);

    const stale = await write(client, { sessionId: session.id, path: 'a.md', content: 'v2', expectedContentSha256: sha256('v0') });
    expect(stale).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED', currentContentSha256: sha256('v1') });
    const missing = await write(client, { sessionId: session.id, path: 'missing.md', content: 'x', expectedContentSha256: sha256('v1') });
    expect(missing).toMatchObject({ __typename: 'PreconditionFailedError', currentContentSha256: '' });
    expect(await storeState(client, defaultStoreId)).toEqual(before);

    const current = await write(client, { sessionId: session.id, path: 'a.md', content: 'v2', expectedContentSha256: sha256('v1') });
    expect(current.__typename === 'WriteSessionMemorySuccess' && current.memory.content).toBe('v2');
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('is FORBIDDEN (PermissionError) in a SELF_HOSTED session, and writes nothing', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair(), 'SELF_HOSTED');
    const defaultStoreId = session.defaultMemoryStore!.id;
    const result = await write(client, { sessionId: session.id, path: 'a.md', content: 'x' });
    expect(result).toMatchObject({ __typename: 'PermissionError', code: 'FORBIDDEN' });
    expect(await storeState(client, defaultStoreId)).toEqual({ entryCount: 0, totalSize: 0, memories: [], versions: 0 });
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('is NOT_FOUND for unknown, malformed and other workspaces\' sessions, and writes nothing', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const foreign = await startSession(other, newPair());
    for (const sessionId of [newId('session'), 'sesn_nope', 'not-an-id', foreign.defaultMemoryStore.id, foreign.id]) {
      expect(await write(client, { sessionId, path: 'a.md', content: 'x' }), sessionId).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    expect(await storeState(other, foreign.defaultMemoryStore.id)).toEqual({ entryCount: 0, totalSize: 0, memories: [], versions: 0 });
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    expect(await invariantViolations(server.db, other.workspaceId)).toEqual([]);
  });

  it('is a CONFLICT once the session\'s default store is archived, and writes nothing (the pair\'s next session writes to its new store)', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(client, pair);
    const oldDefault = session.defaultMemoryStore!.id;
    await write(client, { sessionId: session.id, path: 'a.md', content: 'before' });
    await archiveStore(client, oldDefault);
    const before = await storeState(client, oldDefault);
    expect(await write(client, { sessionId: session.id, path: 'a.md', content: 'after' })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await write(client, { sessionId: session.id, path: 'b.md', content: 'after' })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await remove(client, { sessionId: session.id, path: 'a.md' })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await storeState(client, oldDefault)).toEqual(before);

    const next = await startSession(client, pair);
    const written = await write(client, { sessionId: next.id, path: 'a.md', content: 'after' });
    expect(written.__typename === 'WriteSessionMemorySuccess' && written.memory.memoryStoreId).toBe(next.defaultMemoryStore.id);
    expect(next.defaultMemoryStore.id).not.toBe(oldDefault);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('applies the path and content rules of createMemory: INVALID_REQUEST on the field, nothing written', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    const badPath = await write(client, { sessionId: session.id, path: '/absolute.md', content: 'x' });
    expect(badPath.__typename === 'InvalidRequestError' && badPath.issues.map((issue) => issue.field)).toEqual([['input', 'path']]);
    const badContent = await write(client, { sessionId: session.id, path: 'a.md', content: 'bell \u0007' });
    expect(badContent.__typename === 'InvalidRequestError' && badContent.issues.map((issue) => issue.field)).toEqual([['input', 'content']]);
    expect(await storeState(client, session.defaultMemoryStore!.id)).toEqual({ entryCount: 0, totalSize: 0, memories: [], versions: 0 });
  });
});

describe('deleteSessionMemory', () => {
  it('deletes the memory at the path in the default store, with a DELETED version by the session', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    const defaultStoreId = session.defaultMemoryStore!.id;
    const byApi = await createMemory(client, defaultStoreId, { path: 'gone.md', content: 'bye', metadata: { team: 'x' } });
    await createMemory(client, defaultStoreId, { path: 'kept.md', content: 'stay' });

    const result = await remove(client, { sessionId: session.id, path: 'gone.md' });
    expect(result).toMatchObject({
      __typename: 'DeleteSessionMemorySuccess',
      deletedMemoryId: byApi.id,
      version: {
        memoryId: byApi.id,
        memoryStoreId: defaultStoreId,
        path: 'gone.md',
        content: 'bye',
        contentSha256: sha256('bye'),
        operation: 'DELETED',
        memory: null,
        createdBy: { __typename: 'SessionActor', sessionId: session.id },
      },
    });
    expect(await storeState(client, defaultStoreId)).toEqual({ entryCount: 1, totalSize: 4, memories: [['kept.md', 'stay', {}]], versions: 3 });
    const versions = await versionRows(server.db, client.workspaceId, defaultStoreId, byApi.id);
    expect(versions.map((version) => [version.operation, version.createdBySessionId])).toEqual([['created', null], ['deleted', session.id]]);
    // The path is free again: the agent's next write there creates a new memory.
    const again = await write(client, { sessionId: session.id, path: 'gone.md', content: 'back' });
    expect(again.__typename === 'WriteSessionMemorySuccess' && again.memory.id).not.toBe(byApi.id);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('is NOT_FOUND for a missing path, and for a path held only by an explicitly mounted store (which keeps it)', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const team = await createStore(client);
    await mountStore(client, team.id, pair);
    await createMemory(client, team.id, { path: 'team.md', content: 'team' });
    const session = await startSession(client, pair);
    const before = await storeState(client, team.id);
    for (const path of ['missing.md', 'team.md']) {
      expect(await remove(client, { sessionId: session.id, path }), path).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    expect(await storeState(client, team.id)).toEqual(before);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('a stale expectedContentSha256 is PRECONDITION_FAILED and deletes nothing', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    await write(client, { sessionId: session.id, path: 'a.md', content: 'v1' });
    const before = await storeState(client, session.defaultMemoryStore!.id);
    expect(await remove(client, { sessionId: session.id, path: 'a.md', expectedContentSha256: sha256('v0') })).toMatchObject({
      __typename: 'PreconditionFailedError',
      currentContentSha256: sha256('v1'),
    });
    expect(await storeState(client, session.defaultMemoryStore!.id)).toEqual(before);
    expect((await remove(client, { sessionId: session.id, path: 'a.md', expectedContentSha256: sha256('v1') })).__typename).toBe('DeleteSessionMemorySuccess');
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('is FORBIDDEN (PermissionError) in a SELF_HOSTED session, and the memory stays', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair(), 'SELF_HOSTED');
    const defaultStoreId = session.defaultMemoryStore!.id;
    await createMemory(client, defaultStoreId, { path: 'a.md', content: 'x' });
    const before = await storeState(client, defaultStoreId);
    expect(await remove(client, { sessionId: session.id, path: 'a.md' })).toMatchObject({ __typename: 'PermissionError', code: 'FORBIDDEN' });
    expect(await storeState(client, defaultStoreId)).toEqual(before);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('is NOT_FOUND for unknown and other workspaces\' sessions', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const foreign = await startSession(other, newPair());
    await write(other, { sessionId: foreign.id, path: 'a.md', content: 'x' });
    for (const sessionId of [newId('session'), 'sesn_nope', foreign.id]) {
      expect(await remove(client, { sessionId, path: 'a.md' }), sessionId).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    expect((await storeState(other, foreign.defaultMemoryStore.id)).entryCount).toBe(1);
  });
});

describe('a session whose default store is deleted', () => {
  it('keeps its defaultMemoryStoreId and answers defaultMemoryStore null (a deviation from API.md, which lists the field as non-null)', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    const defaultStoreId = session.defaultMemoryStore.id;
    const deleted = await client.send({ query: `mutation { deleteMemoryStore(input: { id: "${defaultStoreId}" }) { __typename } }` });
    expect(deleted.data.deleteMemoryStore.__typename).toBe('DeleteMemoryStoreSuccess');
    const response = await client.send({ query: `{ session(id: "${session.id}") { id defaultMemoryStoreId defaultMemoryStore { id } } }` });
    expect(response.errors).toBeUndefined();
    expect(response.data.session).toEqual({ id: session.id, defaultMemoryStoreId: defaultStoreId, defaultMemoryStore: null });
  });
});
