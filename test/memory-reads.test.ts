import { createHash } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memories, memoryVersions } from '../src/db/schema.js';
import { newId } from '../src/domain/ids.js';
import { PATH_MAX_BYTES } from '../src/domain/limits.js';
import { graphql } from './generated/gql.js';
import type { MemoryOrder, MemoryOperation } from './generated/graphql.js';
import { createMemory, createStore, deleteMemory, updateMemory, versionRows } from './support/builders.js';
import { GetMemory, MemoryAtPath, StoreVersions } from './support/documents.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const MemoryNode = graphql(`
  query MemoryNode($id: ID!) {
    node(id: $id) {
      __typename
      id
      ... on Memory {
        path
        content
      }
      ... on MemoryVersion {
        memoryId
        operation
      }
    }
  }
`);

const ListMemories = graphql(`
  query ListMemories(
    $storeId: ID!
    $first: Int
    $last: Int
    $after: String
    $before: String
    $pathPrefix: String
    $orderBy: MemoryOrder
    $withContent: Boolean! = false
  ) {
    memoryStore(id: $storeId) {
      memories(first: $first, last: $last, after: $after, before: $before, pathPrefix: $pathPrefix, orderBy: $orderBy) {
        totalCount
        edges {
          cursor
          node {
            id
            path
            content @include(if: $withContent)
          }
        }
        pageInfo {
          ...PageFields
        }
      }
    }
  }
`);

const MemoryHistory = graphql(`
  query MemoryHistory($id: ID!, $operation: MemoryOperation, $first: Int, $after: String) {
    memory(id: $id) {
      ...MemoryFields
      latestVersion {
        ...VersionFields
      }
      versions(operation: $operation, first: $first, after: $after) {
        totalCount
        edges {
          node {
            id
            operation
            path
            content
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

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

interface PageOf<Node> {
  edges: { cursor: string; node: Node }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor?: string | null; endCursor?: string | null };
}
type PageArguments = { first?: number; after?: string | null; last?: number; before?: string | null };

/**
 * Walks a whole connection page by page (forward with first/after, or backward with
 * last/before), checking pageInfo on the way; returns the nodes in list order.
 */
async function walk<Node>(fetchPage: (args: PageArguments) => Promise<PageOf<Node>>, size: number, direction: 'forward' | 'backward'): Promise<Node[]> {
  const nodes: Node[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 50; pages += 1) {
    const page: PageOf<Node> = await fetchPage(direction === 'forward' ? { first: size, after: cursor } : { last: size, before: cursor });
    const batch = page.edges.map((edge) => edge.node);
    if (direction === 'forward') {
      expect(page.pageInfo.hasPreviousPage).toBe(cursor !== null);
      nodes.push(...batch);
      if (!page.pageInfo.hasNextPage) return nodes;
      cursor = page.edges.at(-1)!.cursor;
    } else {
      expect(page.pageInfo.hasNextPage).toBe(cursor !== null);
      nodes.unshift(...batch);
      if (!page.pageInfo.hasPreviousPage) return nodes;
      cursor = page.edges[0]!.cursor;
    }
    expect(batch).toHaveLength(size);
  }
  throw new Error('the connection never ended');
}

async function listMemories(client: TestClient, storeId: string, args: PageArguments & { pathPrefix?: string; orderBy?: MemoryOrder; withContent?: boolean } = {}) {
  const store = (await client.data(ListMemories, { storeId, ...args })).memoryStore;
  if (!store) throw new Error('store not found');
  return store.memories;
}

async function listStoreVersions(
  client: TestClient,
  storeId: string,
  args: PageArguments & { memoryId?: string; operation?: MemoryOperation; createdAfter?: string; createdBefore?: string } = {},
) {
  const store = (await client.data(StoreVersions, { storeId, ...args })).memoryStore;
  if (!store) throw new Error('store not found');
  return store.versions;
}

/** A new workspace with one store holding memories at these paths, created in this order. */
async function storeWithPaths(paths: string[]) {
  const client = await server.newWorkspace();
  const store = await createStore(client);
  const created = [];
  for (const path of paths) created.push(await createMemory(client, store.id, { path, content: `content of ${path}` }));
  return { client, storeId: store.id, memories: created };
}

const at = (seconds: number) => new Date(Date.UTC(2026, 7, 14, 10, 0, seconds));

async function setMemoryTimes(client: TestClient, id: string, createdAt: Date, updatedAt: Date) {
  await server.db.update(memories).set({ createdAt, updatedAt }).where(and(eq(memories.workspaceId, client.workspaceId), eq(memories.id, id)));
}

async function setVersionTime(client: TestClient, id: string, createdAt: Date) {
  await server.db.update(memoryVersions).set({ createdAt }).where(and(eq(memoryVersions.workspaceId, client.workspaceId), eq(memoryVersions.id, id)));
}

/** Newest first, ties by id (descending): the order of the *_DESC lists. */
function newestFirst<Row extends { id: string }>(rows: Row[], time: (row: Row) => number): Row[] {
  return [...rows].sort((left, right) => time(right) - time(left) || (left.id < right.id ? 1 : left.id > right.id ? -1 : 0));
}

describe('memory(id) and node(id)', () => {
  it('memory(id) answers a live memory with its content, and null for unknown, malformed, deleted and other workspaces\' ids', async () => {
    const { client, storeId, memories: [memory, doomed] } = await storeWithPaths(['kept.md', 'doomed.md']);
    const other = await storeWithPaths(['theirs.md']);
    expect((await client.data(GetMemory, { id: memory!.id })).memory).toMatchObject({ id: memory!.id, memoryStoreId: storeId, path: 'kept.md', content: 'content of kept.md' });
    await deleteMemory(client, doomed!.id);
    for (const id of [newId('memory'), 'mem_nope', doomed!.id, other.memories[0]!.id, storeId]) {
      const response = await client.execute(GetMemory, { id });
      expect(response.errors, id).toBeUndefined();
      expect(response.data?.memory, id).toBeNull();
    }
  });

  it('node(id) answers memories by mem_ id and versions by memver_ id, and null for other workspaces\' ids', async () => {
    const { client, storeId, memories: [memory, doomed] } = await storeWithPaths(['live.md', 'gone.md']);
    const other = await storeWithPaths(['theirs.md']);
    const { version: deletedVersion } = await deleteMemory(client, doomed!.id);
    const [createdVersion] = await versionRows(server.db, client.workspaceId, storeId, memory!.id);
    expect((await client.data(MemoryNode, { id: memory!.id })).node).toEqual({ __typename: 'Memory', id: memory!.id, path: 'live.md', content: 'content of live.md' });
    expect((await client.data(MemoryNode, { id: createdVersion!.id })).node).toEqual({ __typename: 'MemoryVersion', id: createdVersion!.id, memoryId: memory!.id, operation: 'CREATED' });
    expect((await client.data(MemoryNode, { id: deletedVersion.id })).node).toMatchObject({ __typename: 'MemoryVersion', memoryId: doomed!.id, operation: 'DELETED' });
    const [foreignVersion] = await versionRows(server.db, other.client.workspaceId, other.storeId);
    for (const id of [doomed!.id, other.memories[0]!.id, foreignVersion!.id, newId('memoryVersion'), 'memver_x']) {
      expect((await client.data(MemoryNode, { id })).node, id).toBeNull();
    }
  });
});

describe('MemoryStore.memory(path)', () => {
  it('finds the live memory at exactly that path, case-sensitively, in that store only', async () => {
    const { client, storeId, memories: [upper] } = await storeWithPaths(['Notes/A.md']);
    const elsewhere = await createStore(client);
    const twin = await createMemory(client, elsewhere.id, { path: 'Notes/A.md' });
    const find = async (path: string, inStore = storeId) => (await client.data(MemoryAtPath, { storeId: inStore, path })).memoryStore?.memory ?? null;
    expect(await find('Notes/A.md')).toEqual({ id: upper!.id, path: 'Notes/A.md' });
    expect((await find('Notes/A.md', elsewhere.id))?.id).toBe(twin.id);
    for (const miss of ['notes/a.md', 'Notes/a.md', 'NOTES/A.MD', 'Notes', 'Notes/', 'Notes/A.m', 'Notes/A.md/x', 'other.md']) {
      expect(await find(miss), miss).toBeNull();
    }
  });

  it('answers null, not an error, for paths no memory can have', async () => {
    const { client, storeId } = await storeWithPaths(['a/b']);
    for (const invalid of ['a//b', '/a/b', 'a/b/', 'a\u0000b', 'a/b\u0000', '', 'a/./b', 'a\\b', 'a/\ud800']) {
      const response = await client.execute(MemoryAtPath, { storeId, path: invalid });
      expect(response.errors, JSON.stringify(invalid)).toBeUndefined();
      expect(response.data?.memoryStore?.memory, JSON.stringify(invalid)).toBeNull();
    }
  });
});

describe('MemoryStore.memories', () => {
  // Byte (code-point) order: upper case before lower case, "." < "/" < "_", and U+FF5E
  // before U+1F600 although UTF-16 (JavaScript's default sort) puts the emoji first.
  const codePointOrder = ['B.md', 'a.md', 'a/b', 'a_b', 'z', 'é', '\uFF5E', '😀'];

  it('lists by path in byte (code-point) order by default, not locale or UTF-16 order', async () => {
    expect([...codePointOrder].sort()).not.toEqual(codePointOrder);
    expect([...codePointOrder].sort((left, right) => left.localeCompare(right, 'en'))).not.toEqual(codePointOrder);
    const { client, storeId } = await storeWithPaths(['😀', 'a_b', 'é', 'a.md', '\uFF5E', 'z', 'B.md', 'a/b']);
    const page = await listMemories(client, storeId);
    expect(page.edges.map((edge) => edge.node.path)).toEqual(codePointOrder);
    expect(page.totalCount).toBe(codePointOrder.length);
    expect(page.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
    const descending = await listMemories(client, storeId, { orderBy: 'PATH_DESC' });
    expect(descending.edges.map((edge) => edge.node.path)).toEqual([...codePointOrder].reverse());
  });

  it('orders UPDATED_AT_DESC and CREATED_AT_DESC newest first, ties by id', async () => {
    const { client, storeId, memories: created } = await storeWithPaths(['m0', 'm1', 'm2', 'm3', 'm4']);
    const times = [[1, 9], [2, 3], [2, 7], [3, 7], [0, 1]] as const;
    for (const [index, [createdAt, updatedAt]] of times.entries()) await setMemoryTimes(client, created[index]!.id, at(createdAt), at(updatedAt));
    const paths = async (orderBy: MemoryOrder) => (await listMemories(client, storeId, { orderBy })).edges.map((edge) => edge.node.path);
    expect(await paths('UPDATED_AT_DESC')).toEqual(['m0', 'm3', 'm2', 'm1', 'm4']);
    expect(await paths('CREATED_AT_DESC')).toEqual(['m3', 'm2', 'm1', 'm0', 'm4']);
  });

  it('an update moves a memory to the front of UPDATED_AT_DESC but not of CREATED_AT_DESC', async () => {
    const { client, storeId, memories: [oldest] } = await storeWithPaths(['first', 'second', 'third']);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await updateMemory(client, { id: oldest!.id, content: 'touched' });
    expect((await listMemories(client, storeId, { orderBy: 'UPDATED_AT_DESC' })).edges.map((edge) => edge.node.path)).toEqual(['first', 'third', 'second']);
    expect((await listMemories(client, storeId, { orderBy: 'CREATED_AT_DESC' })).edges.map((edge) => edge.node.path)).toEqual(['third', 'second', 'first']);
  });

  it('pages forward and backward without gaps or repeats in every order', async () => {
    const paths = ['p/😀', 'p/B', 'p/a', 'p/\uFF5E', 'p/a/b', 'p/a_b', 'p/é', 'p/z'];
    const { client, storeId, memories: created } = await storeWithPaths(paths);
    // Ties in both times, so that the id must break them across page boundaries.
    const times = created.map((memory, index) => ({ id: memory.id, path: memory.path, createdAt: at(Math.floor(index / 3)), updatedAt: at(10 - (index % 3)) }));
    for (const row of times) await setMemoryTimes(client, row.id, row.createdAt, row.updatedAt);
    const expected: Record<MemoryOrder, string[]> = {
      PATH_ASC: ['p/B', 'p/a', 'p/a/b', 'p/a_b', 'p/z', 'p/é', 'p/\uFF5E', 'p/😀'],
      PATH_DESC: ['p/😀', 'p/\uFF5E', 'p/é', 'p/z', 'p/a_b', 'p/a/b', 'p/a', 'p/B'],
      UPDATED_AT_DESC: newestFirst(times, (row) => row.updatedAt.getTime()).map((row) => row.path),
      CREATED_AT_DESC: newestFirst(times, (row) => row.createdAt.getTime()).map((row) => row.path),
    };
    for (const [orderBy, order] of Object.entries(expected) as [MemoryOrder, string[]][]) {
      const fetchPage = async (args: PageArguments) => listMemories(client, storeId, { ...args, orderBy });
      for (const size of [1, 3]) {
        expect((await walk(fetchPage, size, 'forward')).map((node) => node.path), `${orderBy} forward by ${size}`).toEqual(order);
        expect((await walk(fetchPage, size, 'backward')).map((node) => node.path), `${orderBy} backward by ${size}`).toEqual(order);
      }
    }
  });

  it('refuses a cursor of one order in another order as a top-level INVALID_REQUEST', async () => {
    const { client, storeId } = await storeWithPaths(['a', 'b', 'c']);
    const orders: MemoryOrder[] = ['PATH_ASC', 'PATH_DESC', 'UPDATED_AT_DESC', 'CREATED_AT_DESC'];
    const versionCursor = (await listStoreVersions(client, storeId, { first: 1 })).edges[0]!.cursor;
    for (const from of orders) {
      const cursor = (await listMemories(client, storeId, { orderBy: from, first: 1 })).edges[0]!.cursor;
      for (const to of orders.filter((order) => order !== from)) {
        for (const argument of ['after', 'before'] as const) {
          const response = await client.execute(ListMemories, { storeId, orderBy: to, [argument]: cursor });
          expect(response.data?.memoryStore ?? null, `${from} → ${to}`).toBeNull();
          expect(response.errors?.[0]?.extensions?.code, `${from} → ${to}`).toBe('INVALID_REQUEST');
        }
      }
      const foreign = await client.execute(ListMemories, { storeId, orderBy: from, after: versionCursor });
      expect(foreign.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
    }
  });

  describe('pathPrefix', () => {
    const paths = ['a/b', 'a/b/c.md', 'a/bc.md', 'a/c.md', 'ab', '100%/x', '100a/x', 'x_y', 'xzy', '😀/a', '😁', 'A/b'];

    it('is a raw string prefix, case-sensitive, and totalCount honours it', async () => {
      const { client, storeId } = await storeWithPaths(paths);
      const matching = async (pathPrefix: string) => {
        const page = await listMemories(client, storeId, { pathPrefix });
        expect(page.totalCount, pathPrefix).toBe(page.edges.length);
        return page.edges.map((edge) => edge.node.path);
      };
      expect(await matching('a/b')).toEqual(['a/b', 'a/b/c.md', 'a/bc.md']);
      expect(await matching('a/b/')).toEqual(['a/b/c.md']);
      expect(await matching('a')).toEqual(['a/b', 'a/b/c.md', 'a/bc.md', 'a/c.md', 'ab']);
      expect(await matching('😀')).toEqual(['😀/a']);
      expect(await matching('nothing')).toEqual([]);
      expect((await listMemories(client, storeId, { pathPrefix: '' })).totalCount).toBe(paths.length);
      const firstOnly = await listMemories(client, storeId, { pathPrefix: 'a/b', first: 1 });
      expect(firstOnly.edges.map((edge) => edge.node.path)).toEqual(['a/b']);
      expect(firstOnly.totalCount).toBe(3);
      expect(firstOnly.pageInfo.hasNextPage).toBe(true);
    });

    it('matches the longest path a memory can have with that path itself, and nothing with a prefix longer than any path (250,000 characters, in a variable or in the document, also for search): no error, and a token no key has is still 401', async () => {
      const longest = ['a'.repeat(255), 'b'.repeat(255), 'c'.repeat(255), 'd'.repeat(254), 'e'].join('/');
      expect(Buffer.byteLength(longest)).toBe(PATH_MAX_BYTES);
      const { client, storeId } = await storeWithPaths([longest, 'x.md']);
      const matching = async (pathPrefix: string) => {
        const page = await listMemories(client, storeId, { pathPrefix });
        return { totalCount: page.totalCount, paths: page.edges.map((edge) => edge.node.path) };
      };
      expect(await matching(longest)).toEqual({ totalCount: 1, paths: [longest] });
      expect(await matching(`${longest}e`)).toEqual({ totalCount: 0, paths: [] });
      const tooLong = 'a'.repeat(250_000);
      expect(await matching(tooLong)).toEqual({ totalCount: 0, paths: [] });
      const inDocument = await client.send({ query: `{ memoryStore(id: "${storeId}") { memories(pathPrefix: "${tooLong}") { totalCount } } searchMemories(query: "content", pathPrefix: "${tooLong}") { totalCount } }` });
      expect([inDocument.status, inDocument.errors, inDocument.data]).toEqual([200, undefined, { memoryStore: { memories: { totalCount: 0 } }, searchMemories: { totalCount: 0 } }]);
      const stranger = await server.anonymous(`msk_${'A'.repeat(40)}`).send({ query: `{ memoryStore(id: "${storeId}") { memories(pathPrefix: "${tooLong}") { totalCount } } }` });
      expect(stranger.status).toBe(401);
    });

    it('treats "%" and "_" literally, not as LIKE wildcards', async () => {
      const { client, storeId } = await storeWithPaths(paths);
      const matching = async (pathPrefix: string) => (await listMemories(client, storeId, { pathPrefix })).edges.map((edge) => edge.node.path);
      expect(await matching('100%')).toEqual(['100%/x']);
      expect(await matching('x_')).toEqual(['x_y']);
      expect(await matching('%')).toEqual([]);
      expect(await matching('_')).toEqual([]);
      expect((await listMemories(client, storeId, { pathPrefix: '%' })).totalCount).toBe(0);
    });
  });
});

describe('Memory.versions and Memory.latestVersion', () => {
  it('lists a memory\'s versions newest first, filters by operation and counts them', async () => {
    const { client, memories: [memory] } = await storeWithPaths(['doc.md']);
    await updateMemory(client, { id: memory!.id, content: 'second' });
    await updateMemory(client, { id: memory!.id, metadata: { stage: 'third' } });
    await updateMemory(client, { id: memory!.id, path: 'renamed.md' });
    const history = async (operation?: MemoryOperation) => (await client.data(MemoryHistory, { id: memory!.id, operation })).memory!.versions;
    const all = await history();
    expect(all.edges.map((edge) => [edge.node.operation, edge.node.path, edge.node.content])).toEqual([
      ['UPDATED', 'renamed.md', 'second'],
      ['UPDATED', 'doc.md', 'second'],
      ['UPDATED', 'doc.md', 'second'],
      ['CREATED', 'doc.md', 'content of doc.md'],
    ]);
    expect(all.totalCount).toBe(4);
    const updated = await history('UPDATED');
    expect([updated.totalCount, updated.edges.length]).toEqual([3, 3]);
    expect(updated.edges.map((edge) => edge.node.id)).toEqual(all.edges.slice(0, 3).map((edge) => edge.node.id));
    expect((await history('CREATED')).edges.map((edge) => edge.node.id)).toEqual([all.edges[3]!.node.id]);
    expect(await history('DELETED')).toMatchObject({ totalCount: 0, edges: [] });
    const firstTwo = (await client.data(MemoryHistory, { id: memory!.id, first: 2 })).memory!.versions;
    const rest = (await client.data(MemoryHistory, { id: memory!.id, first: 2, after: firstTwo.pageInfo.endCursor })).memory!.versions;
    expect([...firstTwo.edges, ...rest.edges].map((edge) => edge.node.id)).toEqual(all.edges.map((edge) => edge.node.id));
    expect([firstTwo.pageInfo.hasNextPage, rest.pageInfo.hasNextPage]).toEqual([true, false]);
  });

  it('refuses a forged cursor whose version sequence does not fit a 32-bit integer, as a request error', async () => {
    // Found by test/fuzz.test.ts: PostgreSQL refused the value ("out of range for type integer").
    const { client, memories: [memory] } = await storeWithPaths(['doc.md']);
    for (const sequence of [2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1]) {
      const after = Buffer.from(JSON.stringify(['memory-versions', sequence])).toString('base64url');
      const response = await client.execute(MemoryHistory, { id: memory!.id, after });
      expect(response.errors?.[0]?.extensions?.code, String(sequence)).toBe('INVALID_REQUEST');
      expect(response.errors?.[0]?.message).toMatch(/is not a cursor of this list/);
    }
    const inRange = Buffer.from(JSON.stringify(['memory-versions', 2 ** 31 - 1])).toString('base64url');
    // Newest first: everything lies after the largest sequence there can be.
    expect((await client.data(MemoryHistory, { id: memory!.id, after: inRange })).memory!.versions.edges).toHaveLength(1);
  });

  it('latestVersion holds the memory\'s current state after each of several updates', async () => {
    const { client, memories: [memory] } = await storeWithPaths(['doc.md']);
    const changes = [{ content: 'two é' }, { path: 'moved/doc.md' }, { metadata: { k: 'v' } }, { content: '' }, { content: '', path: 'moved/doc.md' }];
    for (const change of changes) {
      await updateMemory(client, { id: memory!.id, ...change });
      const current = (await client.data(MemoryHistory, { id: memory!.id })).memory!;
      expect(current.latestVersion).toMatchObject({
        memoryId: memory!.id,
        path: current.path,
        content: current.content,
        contentSizeBytes: current.contentSizeBytes,
        contentSha256: current.contentSha256,
        createdAt: current.updatedAt,
      });
      expect(current.latestVersion.id).toBe(current.versions.edges[0]!.node.id);
      expect(current.latestVersion.contentSha256).toBe(sha256(current.content));
    }
    // The last change changed nothing, so it wrote no version.
    expect((await client.data(MemoryHistory, { id: memory!.id })).memory!.versions.totalCount).toBe(5);
  });
});

describe('MemoryStore.versions', () => {
  /** Two memories' histories (one deleted), with version times set to known instants. */
  async function storeWithHistory() {
    const { client, storeId, memories: [kept, removed] } = await storeWithPaths(['kept.md', 'removed.md']);
    await updateMemory(client, { id: kept!.id, content: 'kept v2' });
    await deleteMemory(client, removed!.id);
    await updateMemory(client, { id: kept!.id, content: 'kept v3' });
    const rows = await versionRows(server.db, client.workspaceId, storeId);
    // kept: created 10s, updated 30s, updated 40s; removed: created 20s, deleted 30s (a tie with kept's update).
    const seconds: Record<string, number> = { 'kept.md:1': 10, 'kept.md:2': 30, 'kept.md:3': 40, 'removed.md:1': 20, 'removed.md:2': 30 };
    const versions = [];
    for (const row of rows) {
      const createdAt = at(seconds[`${row.path}:${row.sequence}`]!);
      await setVersionTime(client, row.id, createdAt);
      versions.push({ ...row, createdAt });
    }
    return { client, storeId, kept: kept!, removed: removed!, versions: newestFirst(versions, (row) => row.createdAt.getTime()) };
  }

  it('lists every version of the store newest first (ties by id), deleted memories included', async () => {
    const { client, storeId, versions } = await storeWithHistory();
    const page = await listStoreVersions(client, storeId);
    expect(page.edges.map((edge) => edge.node.id)).toEqual(versions.map((row) => row.id));
    // The tie at 30s: the DELETED version was written after kept.md's first update, so its id is greater.
    expect(page.edges.map((edge) => [edge.node.path, edge.node.operation])).toEqual([
      ['kept.md', 'UPDATED'],
      ['removed.md', 'DELETED'],
      ['kept.md', 'UPDATED'],
      ['removed.md', 'CREATED'],
      ['kept.md', 'CREATED'],
    ]);
    expect(page.totalCount).toBe(5);
    const fetchPage = async (args: PageArguments) => listStoreVersions(client, storeId, args);
    for (const direction of ['forward', 'backward'] as const) {
      expect((await walk(fetchPage, 2, direction)).map((node) => node.id), direction).toEqual(versions.map((row) => row.id));
    }
  });

  it('filters by memoryId, operation, createdAfter and createdBefore (both strict), and counts under the filters', async () => {
    const { client, storeId, kept, removed, versions } = await storeWithHistory();
    const ids = async (args: Parameters<typeof listStoreVersions>[2]) => {
      const page = await listStoreVersions(client, storeId, args);
      expect(page.totalCount, JSON.stringify(args)).toBe(page.edges.length);
      return page.edges.map((edge) => edge.node.id);
    };
    const expectedIds = (keep: (row: (typeof versions)[number]) => boolean) => versions.filter(keep).map((row) => row.id);
    const seconds = (row: (typeof versions)[number]) => row.createdAt.getUTCSeconds();
    expect(await ids({ memoryId: kept.id })).toEqual(expectedIds((row) => row.memoryId === kept.id));
    expect(await ids({ memoryId: removed.id })).toEqual(expectedIds((row) => row.memoryId === removed.id));
    expect(await ids({ memoryId: newId('memory') })).toEqual([]);
    expect(await ids({ operation: 'UPDATED' })).toEqual(expectedIds((row) => row.operation === 'updated'));
    expect(await ids({ operation: 'DELETED' })).toEqual(expectedIds((row) => row.operation === 'deleted'));
    expect(await ids({ createdAfter: at(20).toISOString() })).toEqual(expectedIds((row) => seconds(row) > 20));
    expect(await ids({ createdBefore: at(30).toISOString() })).toEqual(expectedIds((row) => seconds(row) < 30));
    expect(await ids({ createdAfter: at(10).toISOString(), createdBefore: at(40).toISOString() })).toEqual(expectedIds((row) => seconds(row) > 10 && seconds(row) < 40));
    expect(await ids({ memoryId: kept.id, operation: 'UPDATED', createdBefore: at(40).toISOString() })).toEqual(
      expectedIds((row) => row.memoryId === kept.id && row.operation === 'updated' && seconds(row) < 40),
    );
    expect(await ids({ createdAfter: at(40).toISOString() })).toEqual([]);
  });
});

describe('content inside lists', () => {
  it('loads Memory.content and MemoryVersion.content when selected in lists (null only for redacted versions)', async () => {
    const { client, storeId, memories: created } = await storeWithPaths(['one.md', 'two.md', 'three.md']);
    await updateMemory(client, { id: created[0]!.id, content: '' });
    await updateMemory(client, { id: created[1]!.id, content: 'two, again é😀' });
    const [redacted] = await versionRows(server.db, client.workspaceId, storeId, created[2]!.id);
    const redaction = await client.send({ query: `mutation { redactMemoryVersion(input: { id: "${redacted!.id}" }) { __typename } }` });
    expect(redaction.data.redactMemoryVersion.__typename).toBe('RedactMemoryVersionSuccess');

    const listed = await listMemories(client, storeId, { withContent: true });
    expect(listed.edges.map((edge) => [edge.node.path, edge.node.content])).toEqual([
      ['one.md', ''],
      ['three.md', 'content of three.md'],
      ['two.md', 'two, again é😀'],
    ]);
    const versions = await listStoreVersions(client, storeId);
    const rows = await versionRows(server.db, client.workspaceId, storeId);
    const expected = new Map(rows.map((row) => [row.id, row.content]));
    expect(versions.edges).toHaveLength(5);
    for (const edge of versions.edges) expect(edge.node.content, edge.node.id).toBe(expected.get(edge.node.id));
    expect(versions.edges.find((edge) => edge.node.id === redacted!.id)?.node.content).toBeNull();
    const history = (await client.data(MemoryHistory, { id: created[1]!.id })).memory!.versions;
    expect(history.edges.map((edge) => edge.node.content)).toEqual(['two, again é😀', 'content of two.md']);
  });
});
