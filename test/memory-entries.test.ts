import { and, asc, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memoryFolders } from '../src/db/schema.js';
import { MAX_PAGE_SIZE } from '../src/domain/limits.js';
import { archiveStore, createMemory, createStore, deleteMemory, updateMemory } from './support/builders.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer, WRITE_PATHS, type TestClient } from './support/server.js';

const ENTRIES = `query ($store: ID!, $folder: String!, $first: Int, $last: Int, $after: String, $before: String) {
  memoryStore(id: $store) {
    entries(folder: $folder, first: $first, last: $last, after: $after, before: $before) {
      totalCount
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      edges { cursor node { __typename ... on MemoryFolder { path name memoryCount totalSize updatedAt } ... on Memory { id path contentSizeBytes updatedAt } } }
    }
  }
}`;

type Window = { first?: number; last?: number; after?: string; before?: string };

describe.each(WRITE_PATHS)('MemoryStore.entries, $writes', ({ singleStatementWrites }) => {
  const server = useTestServer({ singleStatementWrites });

  async function entries(client: TestClient, store: string, folder: string, window: Window = {}) {
    const response = await client.send({ query: ENTRIES, variables: { store, folder, ...window } });
    expect(response.errors, JSON.stringify(response.errors)).toBeUndefined();
    return response.data.memoryStore.entries;
  }

  const names = (connection: { edges: { node: any }[] }) => connection.edges.map(({ node }) => (node.__typename === 'MemoryFolder' ? `${node.name}/` : node.path.split('/').at(-1)));

  async function seeded() {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const made: Record<string, Awaited<ReturnType<typeof createMemory>>> = {};
    for (const [path, content] of [
      ['README.md', 'root file'],
      ['a.md', 'aa'],
      ['B.md', 'bbb'],
      ['notes/2026/12/02.md', 'today'],
      ['notes/2026/12/01.md', 'yesterday!'],
      ['notes/todo.md', 'todo'],
      ['notes-old/x.md', 'x'],
      ['a/b.md', '12345'],
      ['a-b/c.md', '1'],
      ['Zeta/deep/er/still/file.md', 'deep'],
      ['ü/ñ.md', 'unicode'],
    ] as const) {
      made[path] = await createMemory(client, store.id, { path, content });
    }
    return { client, storeId: store.id, made };
  }

  it('lists the root: folders first, then memories, each by name in byte order, with rollups of everything below', async () => {
    const { client, storeId, made } = await seeded();
    const root = await entries(client, storeId, '');
    expect(names(root)).toEqual(['Zeta/', 'a/', 'a-b/', 'notes/', 'notes-old/', 'ü/', 'B.md', 'README.md', 'a.md']);
    expect(root.totalCount).toBe(9);
    expect(root.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
    const notes = root.edges.find((edge: any) => edge.node.path === 'notes/').node;
    const newest = [made['notes/2026/12/02.md']!, made['notes/2026/12/01.md']!, made['notes/todo.md']!].map((memory) => memory.updatedAt).sort().at(-1);
    expect(notes).toEqual({ __typename: 'MemoryFolder', path: 'notes/', name: 'notes', memoryCount: 3, totalSize: 5 + 10 + 4, updatedAt: newest });
    expect(root.edges.at(-1).node).toMatchObject({ __typename: 'Memory', id: made['a.md']!.id, path: 'a.md', contentSizeBytes: 2 });
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('lists deep folders one level at a time; an unknown folder is empty', async () => {
    const { client, storeId } = await seeded();
    expect(names(await entries(client, storeId, 'notes/'))).toEqual(['2026/', 'todo.md']);
    expect(names(await entries(client, storeId, 'notes/2026/12/'))).toEqual(['01.md', '02.md']);
    const deep = await entries(client, storeId, 'Zeta/deep/er/');
    expect(deep.edges.map((edge: any) => edge.node)).toMatchObject([{ __typename: 'MemoryFolder', path: 'Zeta/deep/er/still/', name: 'still', memoryCount: 1, totalSize: 4 }]);
    expect(names(await entries(client, storeId, 'ü/'))).toEqual(['ñ.md']);
    expect(await entries(client, storeId, 'nothing/here/')).toEqual({ totalCount: 0, pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null }, edges: [] });
  });

  it('pages forward and backward across the folders-then-memories boundary with exact page info', async () => {
    const { client, storeId } = await seeded();
    const all = names(await entries(client, storeId, ''));
    for (const size of [1, 2, 4, 9, 10]) {
      const forward: string[] = [];
      let after: string | undefined;
      for (let pages = 0; ; pages += 1) {
        const page = await entries(client, storeId, '', { first: size, after });
        forward.push(...names(page));
        expect(page.pageInfo.hasPreviousPage).toBe(after !== undefined);
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
        expect(pages).toBeLessThan(20);
      }
      expect(forward, `first: ${size}`).toEqual(all);
      const backward: string[] = [];
      let before: string | undefined;
      for (let pages = 0; ; pages += 1) {
        const page = await entries(client, storeId, '', { last: size, before });
        backward.unshift(...names(page));
        expect(page.pageInfo.hasNextPage).toBe(before !== undefined);
        if (!page.pageInfo.hasPreviousPage) break;
        before = page.pageInfo.startCursor;
        expect(pages).toBeLessThan(20);
      }
      expect(backward, `last: ${size}`).toEqual(all);
    }
    // Both bounds: the entries strictly between two cursors.
    const page = await entries(client, storeId, '', { first: 9 });
    const between = await entries(client, storeId, '', { first: 100, after: page.edges[3].cursor, before: page.edges[7].cursor });
    expect(names(between)).toEqual(all.slice(4, 7));
    expect(between.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
    const none = await entries(client, storeId, '', { first: 0 });
    expect(none).toMatchObject({ totalCount: 9, edges: [], pageInfo: { hasNextPage: true } });
  });

  it('keeps every folder\'s count, bytes and newest update exact through updates, renames, deletes and restores; empty folders vanish', async () => {
    const { client, storeId, made } = await seeded();
    const check = async () => expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    const folder = async (path: string) =>
      (await server.db.select().from(memoryFolders).where(and(eq(memoryFolders.workspaceId, client.workspaceId), eq(memoryFolders.memoryStoreId, storeId), eq(memoryFolders.path, path))))[0];

    await updateMemory(client, { id: made['notes/todo.md']!.id, content: 'a much longer todo list' });
    await check();
    expect(await folder('notes/')).toMatchObject({ memoryCount: 3, totalSize: 5 + 10 + 23 });
    // The newest memory of notes/2026/12/ goes: the folder's updatedAt is the newest one left.
    const newestDay = [made['notes/2026/12/02.md']!, made['notes/2026/12/01.md']!].sort((x, y) => (x.updatedAt < y.updatedAt ? 1 : -1));
    await deleteMemory(client, newestDay[0]!.id);
    await check();
    expect((await folder('notes/2026/12/'))?.updatedAt.toISOString()).toBe(newestDay[1]!.updatedAt);
    // A rename out of a folder, into a new deep one.
    await updateMemory(client, { id: newestDay[1]!.id, path: 'archive/2026/12/01.md' });
    await check();
    expect(await folder('notes/2026/')).toBeUndefined();
    expect(await folder('archive/2026/12/')).toMatchObject({ memoryCount: 1, parent: 'archive/2026/', name: '12' });
    // A rename within one folder.
    await updateMemory(client, { id: made['a-b/c.md']!.id, path: 'a-b/d.md' });
    await check();
    await deleteMemory(client, made['Zeta/deep/er/still/file.md']!.id);
    await check();
    expect(names(await entries(client, storeId, ''))).toEqual(['a/', 'a-b/', 'archive/', 'notes/', 'notes-old/', 'ü/', 'B.md', 'README.md', 'a.md']);
    // A restore brings the folders back.
    const versions = await client.send({ query: 'query ($id: ID!) { memoryVersion: node(id: $id) { id } }', variables: { id: made['Zeta/deep/er/still/file.md']!.id } });
    expect(versions.data.memoryVersion).toBeNull();
    const history = await client.send({
      query: 'query ($store: ID!, $memory: ID!) { memoryStore(id: $store) { versions(memoryId: $memory) { edges { node { id operation } } } } }',
      variables: { store: storeId, memory: made['Zeta/deep/er/still/file.md']!.id },
    });
    const created = history.data.memoryStore.versions.edges.find((edge: any) => edge.node.operation === 'CREATED').node.id;
    const restored = await client.send({ query: 'mutation ($id: ID!) { restoreMemoryVersion(input: { id: $id }) { __typename } }', variables: { id: created } });
    expect(restored.data.restoreMemoryVersion.__typename).toBe('RestoreMemoryVersionSuccess');
    await check();
    expect(await folder('Zeta/deep/er/still/')).toMatchObject({ memoryCount: 1, totalSize: 4 });
    // An agent-style overwrite of many memories, then every one deleted.
    for (const memory of Object.values(made)) {
      const live = await client.send({ query: 'query ($id: ID!) { memory(id: $id) { id } }', variables: { id: memory.id } });
      if (live.data.memory) await deleteMemory(client, memory.id);
    }
    await check();
    expect(await server.db.select().from(memoryFolders).where(eq(memoryFolders.workspaceId, client.workspaceId)).orderBy(asc(memoryFolders.path))).toEqual([]);
  });

  it('refuses a folder that is not "" or a valid path ending in "/", and bad page sizes, as INVALID_REQUEST', async () => {
    const { client, storeId } = await seeded();
    for (const folder of ['notes', '/notes/', 'notes//', '../', './', 'a/ b /', 'a\u0000/', ' /']) {
      const response = await client.send({ query: ENTRIES, variables: { store: storeId, folder } });
      expect(response.errors?.map((error: any) => error.extensions?.code), JSON.stringify(folder)).toEqual(['INVALID_REQUEST']);
    }
    for (const window of [{ first: MAX_PAGE_SIZE + 1 }, { last: -1 }, { first: 1, last: 1 }, { after: 'bogus' }]) {
      const response = await client.send({ query: ENTRIES, variables: { store: storeId, folder: '', ...window } });
      expect(response.errors?.[0]?.extensions?.code, JSON.stringify(window)).toBe('INVALID_REQUEST');
    }
    // A cursor of another list is refused too.
    const memories = await client.send({ query: 'query ($id: ID!) { memoryStore(id: $id) { memories(first: 1) { pageInfo { endCursor } } } }', variables: { id: storeId } });
    const foreignCursor = await client.send({ query: ENTRIES, variables: { store: storeId, folder: '', after: memories.data.memoryStore.memories.pageInfo.endCursor } });
    expect(foreignCursor.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
  });

  it('answers for archived stores, and a deleted store takes its folders with it', async () => {
    const { client, storeId } = await seeded();
    await archiveStore(client, storeId);
    expect(names(await entries(client, storeId, 'notes/'))).toEqual(['2026/', 'todo.md']);
    const other = await createStore(client);
    await createMemory(client, other.id, { path: 'x/y/z.md', content: 'z' });
    const deleted = await client.send({ query: 'mutation ($id: ID!) { deleteMemoryStore(input: { id: $id }) { __typename } }', variables: { id: other.id } });
    expect(deleted.data.deleteMemoryStore.__typename).toBe('DeleteMemoryStoreSuccess');
    expect(await server.db.select().from(memoryFolders).where(and(eq(memoryFolders.workspaceId, client.workspaceId), eq(memoryFolders.memoryStoreId, other.id)))).toEqual([]);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('lists the largest page of a folder holding more entries than a page', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    for (let index = 0; index < MAX_PAGE_SIZE + 5; index += 1) {
      await createMemory(client, store.id, { path: index % 2 ? `big/sub${String(index).padStart(3, '0')}/f.md` : `big/f${String(index).padStart(3, '0')}.md`, content: 'x' });
    }
    const page = await entries(client, store.id, 'big/', { first: MAX_PAGE_SIZE });
    expect(page.edges).toHaveLength(MAX_PAGE_SIZE);
    expect(page.totalCount).toBe(MAX_PAGE_SIZE + 5);
    expect(page.edges.slice(0, 52).every((edge: any) => edge.node.__typename === 'MemoryFolder')).toBe(true);
    expect(page.pageInfo.hasNextPage).toBe(true);
    const rest = await entries(client, store.id, 'big/', { first: MAX_PAGE_SIZE, after: page.pageInfo.endCursor });
    expect(rest.edges).toHaveLength(5);
  });
});
