import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memoryStores } from '../src/db/schema.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../src/domain/limits.js';
import type { ListStoresQueryVariables } from './generated/graphql.js';
import { createStore } from './support/builders.js';
import { ListStores } from './support/documents.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

type ListArguments = ListStoresQueryVariables;

async function list(client: TestClient, variables: ListArguments = {}) {
  return (await client.data(ListStores, variables)).memoryStores;
}

/** A workspace holding `count` stores named s00, s01, … created in that order; returns their ids, newest first. */
async function workspaceWithStores(count: number) {
  const client = await server.newWorkspace();
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    ids.push((await createStore(client, { name: `s${String(index).padStart(2, '0')}` })).id);
  }
  return { client, newestFirst: ids.reverse() };
}

async function expectRequestError(client: TestClient, variables: ListArguments, message: RegExp) {
  const response = await client.send({ query: 'query($first: Int, $last: Int, $after: String, $before: String) { memoryStores(first: $first, last: $last, after: $after, before: $before) { totalCount } }', variables });
  expect(response.data ?? null).toBeNull();
  expect(response.errors).toHaveLength(1);
  expect(response.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
  expect(response.errors?.[0]?.message).toMatch(message);
}

describe('memoryStores', () => {
  it('lists the workspace\'s stores newest first with totalCount', async () => {
    const { client, newestFirst } = await workspaceWithStores(3);
    const page = await list(client);
    expect(page.edges.map((edge) => edge.node.id)).toEqual(newestFirst);
    expect(page.totalCount).toBe(3);
    expect(page.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
  });

  it('orders by creation time even when ids were made in another order', async () => {
    const client = await server.newWorkspace();
    const older = await createStore(client, { name: 'older' });
    const newer = await createStore(client, { name: 'newer' });
    // Swap creation times: the list follows createdAt, not the id.
    await server.db.update(memoryStores).set({ createdAt: new Date('2020-01-01T00:00:00Z') }).where(and(eq(memoryStores.workspaceId, client.workspaceId), eq(memoryStores.id, newer.id)));
    const page = await list(client);
    expect(page.edges.map((edge) => edge.node.name)).toEqual(['older', 'newer']);
    expect(older.id < newer.id).toBe(true);
  });

  it('never shows another workspace\'s stores', async () => {
    const mine = await workspaceWithStores(1);
    await workspaceWithStores(2);
    expect((await list(mine.client)).totalCount).toBe(1);
  });

  describe('pagination', () => {
    it(`returns ${DEFAULT_PAGE_SIZE} items when neither first nor last is given`, async () => {
      const { client, newestFirst } = await workspaceWithStores(DEFAULT_PAGE_SIZE + 2);
      const page = await list(client);
      expect(page.edges.map((edge) => edge.node.id)).toEqual(newestFirst.slice(0, DEFAULT_PAGE_SIZE));
      expect(page.pageInfo.hasNextPage).toBe(true);
      expect(page.totalCount).toBe(DEFAULT_PAGE_SIZE + 2);
    });

    it('pages forward with first/after without gaps or repeats, and knows what lies behind', async () => {
      const { client, newestFirst } = await workspaceWithStores(7);
      const seen: string[] = [];
      let after: string | null = null;
      let pages = 0;
      for (;;) {
        const page: Awaited<ReturnType<typeof list>> = await list(client, { first: 3, after });
        pages += 1;
        seen.push(...page.edges.map((edge) => edge.node.id));
        expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
        expect(page.pageInfo.startCursor).toBe(page.edges[0]?.cursor ?? null);
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      expect(seen).toEqual(newestFirst);
      expect(pages).toBe(3);
    });

    it('pages backward with last/before', async () => {
      const { client, newestFirst } = await workspaceWithStores(7);
      const lastThree = await list(client, { last: 3 });
      expect(lastThree.edges.map((edge) => edge.node.id)).toEqual(newestFirst.slice(4));
      expect(lastThree.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
      const before = await list(client, { last: 3, before: lastThree.pageInfo.startCursor });
      expect(before.edges.map((edge) => edge.node.id)).toEqual(newestFirst.slice(1, 4));
      expect(before.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
      const first = await list(client, { last: 3, before: before.pageInfo.startCursor });
      expect(first.edges.map((edge) => edge.node.id)).toEqual(newestFirst.slice(0, 1));
      expect(first.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });
    });

    it('takes both after and before as bounds', async () => {
      const { client, newestFirst } = await workspaceWithStores(6);
      const all = await list(client);
      const between = await list(client, { after: all.edges[0]!.cursor, before: all.edges[4]!.cursor });
      expect(between.edges.map((edge) => edge.node.id)).toEqual(newestFirst.slice(1, 4));
    });

    it('answers hasPreviousPage false after the first item once everything before it is gone', async () => {
      const { client } = await workspaceWithStores(3);
      const all = await list(client);
      await server.db.delete(memoryStores).where(and(eq(memoryStores.workspaceId, client.workspaceId), eq(memoryStores.id, all.edges[0]!.node.id)));
      const rest = await list(client, { first: 5, after: all.edges[0]!.cursor });
      expect(rest.edges).toHaveLength(2);
      expect(rest.pageInfo.hasPreviousPage).toBe(false);
    });

    it(`accepts first and last from 0 to ${MAX_PAGE_SIZE}`, async () => {
      const { client } = await workspaceWithStores(2);
      const empty = await list(client, { first: 0 });
      expect(empty.edges).toEqual([]);
      expect(empty.pageInfo).toMatchObject({ hasNextPage: true, startCursor: null, endCursor: null });
      expect((await list(client, { first: MAX_PAGE_SIZE })).edges).toHaveLength(2);
      expect((await list(client, { last: MAX_PAGE_SIZE })).edges).toHaveLength(2);
      expect((await list(client, { last: 0 })).edges).toHaveLength(0);
    });

    it('refuses first or last outside 0..100 instead of clamping', async () => {
      const client = await server.newWorkspace();
      await expectRequestError(client, { first: MAX_PAGE_SIZE + 1 }, /"first" must be between 0 and 100/);
      await expectRequestError(client, { first: -1 }, /"first" must be between 0 and 100/);
      await expectRequestError(client, { last: MAX_PAGE_SIZE + 1 }, /"last" must be between 0 and 100/);
      await expectRequestError(client, { last: -5 }, /"last" must be between 0 and 100/);
    });

    it('refuses first and last together', async () => {
      const client = await server.newWorkspace();
      await expectRequestError(client, { first: 1, last: 1 }, /not both/);
    });

    it('refuses cursors it did not make', async () => {
      const { client } = await workspaceWithStores(1);
      const forged = Buffer.from(JSON.stringify(['memories', 'x'])).toString('base64url');
      const wrongShape = Buffer.from(JSON.stringify(['stores', 'not a date', 'x'])).toString('base64url');
      for (const cursor of ['garbage!', 'bm90IGpzb24', forged, wrongShape, '']) {
        await expectRequestError(client, { after: cursor }, /is not a cursor of this list/);
        await expectRequestError(client, { before: cursor }, /is not a cursor of this list/);
      }
    });

    it('gives opaque cursors (no raw ids)', async () => {
      const { client, newestFirst } = await workspaceWithStores(1);
      const cursor = (await list(client)).edges[0]!.cursor;
      expect(cursor).not.toContain(newestFirst[0]);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    });
  });

  describe('filters', () => {
    it('filters by status and counts only the matches', async () => {
      const client = await server.newWorkspace();
      const kept = await createStore(client, { name: 'kept' });
      const archived = await createStore(client, { name: 'old' });
      await client.send({ query: `mutation { archiveMemoryStore(input: { id: "${archived.id}" }) { __typename } }` });
      const active = await list(client, { status: 'ACTIVE' });
      expect(active.edges.map((edge) => edge.node.id)).toEqual([kept.id]);
      expect(active.totalCount).toBe(1);
      expect((await list(client, { status: 'ARCHIVED' })).edges.map((edge) => edge.node.id)).toEqual([archived.id]);
    });

    it('filters by systemManaged', async () => {
      const client = await server.newWorkspace();
      const user = await createStore(client, { name: 'user' });
      await server.db.update(memoryStores).set({ systemManaged: true, identityId: 'idn_x', templateId: 'tmpl_x' }).where(eq(memoryStores.id, user.id));
      const other = await createStore(client, { name: 'other' });
      expect((await list(client, { systemManaged: true })).edges.map((edge) => edge.node.id)).toEqual([user.id]);
      expect((await list(client, { systemManaged: false })).edges.map((edge) => edge.node.id)).toEqual([other.id]);
    });

    it('filters by a case-insensitive plain name prefix', async () => {
      const client = await server.newWorkspace();
      for (const name of ['Project Alpha', 'project beta', 'Other', 'proj%ect', 'proj_x']) await createStore(client, { name });
      const names = async (namePrefix: string) => (await list(client, { namePrefix })).edges.map((edge) => edge.node.name).sort();
      expect(await names('PROJECT')).toEqual(['Project Alpha', 'project beta']);
      expect(await names('proj%')).toEqual(['proj%ect']);
      expect(await names('proj_')).toEqual(['proj_x']);
      expect(await names('nothing')).toEqual([]);
      expect((await list(client, { namePrefix: 'project' })).totalCount).toBe(2);
    });

    it('filters by creation time, strictly after and strictly before', async () => {
      const client = await server.newWorkspace();
      const stores = [];
      for (const [index, createdAt] of ['2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'].entries()) {
        const store = await createStore(client, { name: `m${index}` });
        await server.db.update(memoryStores).set({ createdAt: new Date(createdAt) }).where(eq(memoryStores.id, store.id));
        stores.push(store.id);
      }
      const ids = async (variables: ListArguments) => (await list(client, variables)).edges.map((edge) => edge.node.id);
      expect(await ids({ createdAfter: '2026-01-01T00:00:00.000Z' })).toEqual([stores[2], stores[1]]);
      expect(await ids({ createdBefore: '2026-03-01T00:00:00.000Z' })).toEqual([stores[1], stores[0]]);
      expect(await ids({ createdAfter: '2026-01-15T00:00:00+01:00', createdBefore: '2026-02-15T00:00:00Z' })).toEqual([stores[1]]);
    });

    it('refuses a malformed DateTime as a request error', async () => {
      const client = await server.newWorkspace();
      const response = await client.send({ query: '{ memoryStores(createdAfter: "yesterday") { totalCount } }' });
      expect(response.errors?.[0]?.message).toMatch(/RFC 3339/);
      const impossible = await client.send({ query: '{ memoryStores(createdAfter: "2026-02-30T00:00:00Z") { totalCount } }' });
      expect(impossible.errors?.[0]?.message).toMatch(/not a valid date/);
    });
  });
});

describe('memoryStores pagination at the edges', () => {
  it('uses the page size API.md names: 20', () => {
    expect(DEFAULT_PAGE_SIZE).toBe(20);
    expect(MAX_PAGE_SIZE).toBe(100);
  });

  it('knows an item lies behind the cursor while that item still exists', async () => {
    const { client } = await workspaceWithStores(3);
    const all = await list(client);
    expect((await list(client, { first: 5, after: all.edges[0]!.cursor })).pageInfo.hasPreviousPage).toBe(true);
    expect((await list(client, { last: 5, before: all.edges[2]!.cursor })).pageInfo.hasNextPage).toBe(true);
  });

  it('says an exactly full last page has nothing after it', async () => {
    const { client } = await workspaceWithStores(3);
    expect((await list(client, { first: 3 })).pageInfo.hasNextPage).toBe(false);
    expect((await list(client, { last: 3 })).pageInfo.hasPreviousPage).toBe(false);
    const all = await list(client);
    expect((await list(client, { first: 2, after: all.edges[0]!.cursor })).pageInfo.hasNextPage).toBe(false);
  });

  it('refuses cursors that are nearly right: trailing characters, another list\'s tag, wrong value types', async () => {
    const { client } = await workspaceWithStores(2);
    const good = (await list(client)).edges[0]!.cursor;
    const [, createdAt, id] = JSON.parse(Buffer.from(good, 'base64url').toString('utf8')) as [string, string, string];
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of [`${good}!`, `${good}=`, encode(['memories', createdAt, id]), encode(['stores', Date.parse(createdAt), id]), encode(['stores', createdAt, 7])]) {
      await expectRequestError(client, { after: cursor }, /is not a cursor of this list/);
    }
  });

  it('refuses forged cursors holding values no stored row has, as a request error (not an internal one)', async () => {
    // Found by test/fuzz.test.ts: each of these reached PostgreSQL and failed there.
    const { client } = await workspaceWithStores(1);
    const good = (await list(client)).edges[0]!.cursor;
    const [, createdAt, id] = JSON.parse(Buffer.from(good, 'base64url').toString('utf8')) as [string, string, string];
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of [
      encode(['stores', '0000-01-01T00:00:00.000Z', id]),
      encode(['stores', '+275760-09-13T00:00:00.000Z', id]),
      encode(['stores', createdAt, 'memstore_\u0000']),
      encode(['stores', createdAt, '\ud800']),
    ]) {
      await expectRequestError(client, { after: cursor }, /is not a cursor of this list/);
      await expectRequestError(client, { before: cursor }, /is not a cursor of this list/);
    }
  });

  it('refuses createdAfter and createdBefore outside years 0001–9999 as a request error', async () => {
    const client = await server.newWorkspace();
    for (const instant of ['0000-01-01T00:00:00Z', '9999-12-31T23:59:59-14:00']) {
      const response = await client.send({ query: 'query($at: DateTime) { memoryStores(createdAfter: $at, createdBefore: $at) { totalCount } }', variables: { at: instant } });
      expect(response.data ?? null).toBeNull();
      expect(response.errors?.[0]?.message).toMatch(/outside the supported range/);
      expect(response.errors?.[0]?.extensions?.code).not.toBe('INTERNAL_SERVER_ERROR');
    }
  });

  it('answers a namePrefix no name can have (NUL, a lone surrogate) with an empty list', async () => {
    const { client } = await workspaceWithStores(1);
    for (const namePrefix of ['s\u0000', '\ud800']) {
      const page = await list(client, { namePrefix });
      expect([page.totalCount, page.edges.length]).toEqual([0, 0]);
    }
  });

  it('refuses a DateTime without a time zone offset', async () => {
    const client = await server.newWorkspace();
    const response = await client.send({ query: '{ memoryStores(createdAfter: "2026-01-01T00:00:00") { totalCount } }' });
    expect(response.errors?.[0]?.message).toMatch(/RFC 3339/);
  });
});
