import { describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import { DEFAULT_STORE_NAME, EXTERNAL_ID_BODY_MAX_CHARACTERS, MAX_EXPLICIT_MOUNTS_PER_PAIR } from '../src/domain/limits.js';
import { graphql } from './generated/gql.js';
import {
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
  type Pair,
} from './support/builders.js';
import { ArchiveStore, DeleteStore, GetSession, GetStore, MountStore, PairMounts, UnmountStore } from './support/documents.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const RenameMountedStore = graphql(`
  mutation RenameMountedStore($id: ID!, $name: String!) {
    updateMemoryStore(input: { id: $id, name: $name }) {
      __typename
      ... on Error {
        code
      }
    }
  }
`);

const StoreMounts = graphql(`
  query StoreMounts($id: ID!, $first: Int, $after: String) {
    memoryStore(id: $id) {
      id
      bindingInfo {
        identityTemplateCount
      }
      mounts(first: $first, after: $after) {
        totalCount
        edges {
          cursor
          node {
            memoryStoreId
            identityId
            templateId
            access
            systemManaged
            createdAt
          }
        }
        pageInfo {
          hasNextPage
        }
      }
    }
  }
`);

async function attemptMount(client: TestClient, memoryStoreId: string, pair: Pair) {
  const response = await client.execute(MountStore, { input: { memoryStoreId, ...pair } });
  expect(response.errors).toBeUndefined();
  return response.data!.mountMemoryStore;
}

async function attemptUnmount(client: TestClient, memoryStoreId: string, pair: Pair) {
  const response = await client.execute(UnmountStore, { input: { memoryStoreId, ...pair } });
  expect(response.errors).toBeUndefined();
  return response.data!.unmountMemoryStore;
}

async function listMounts(client: TestClient, pair: Pair, page: { first?: number; after?: string; last?: number; before?: string } = {}) {
  return (await client.data(PairMounts, { ...pair, ...page })).memoryStoreMounts;
}

async function storeMounts(client: TestClient, id: string) {
  const { memoryStore } = await client.data(StoreMounts, { id });
  if (!memoryStore) throw new Error(`no store ${id}`);
  return memoryStore;
}

/** The (store, explicit?) list of a pair's mount rows, default slot first. */
async function mountedStores(client: TestClient, pair: Pair) {
  return (await mountRows(server.db, client.workspaceId, pair)).map((row) => [row.memoryStoreId, row.systemManaged ? 'default' : 'explicit']);
}

const at = (day: number) => new Date(Date.UTC(2026, 0, day));

const tooLongBody = 'a'.repeat(EXTERNAL_ID_BODY_MAX_CHARACTERS + 1);
const malformedIdentityIds = ['idn_', 'idn_has-dash', 'user_1', `idn_${tooLongBody}`, '', 'IDN_abc', 'idn_é', 'idn_a b', 'tmpl_abc'];
const malformedTemplateIds = ['tmpl_', 'tmpl_has-dash', 'template_1', `tmpl_${tooLongBody}`, '', 'TMPL_abc', 'tmpl_a.b', 'idn_abc'];

describe('mountMemoryStore', () => {
  it('mounts an active store READ_ONLY and not system-managed, and stores one mount row', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const store = await createStore(client, { name: 'team-a' });
    await createMemory(client, store.id);
    const result = await attemptMount(client, store.id, pair);
    expect(result.__typename).toBe('MountMemoryStoreSuccess');
    if (result.__typename !== 'MountMemoryStoreSuccess') return;
    expect(result.mount).toMatchObject({
      memoryStoreId: store.id,
      memoryStore: { id: store.id },
      ...pair,
      access: 'READ_ONLY',
      systemManaged: false,
      name: 'team-a',
      status: 'active',
      entryCount: 1,
    });
    const rows = await mountRows(server.db, client.workspaceId, pair);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ memoryStoreId: store.id, ...pair, access: 'read_only', systemManaged: false, createdAt: new Date(result.mount.createdAt) });
    expect((await storeMounts(client, store.id)).bindingInfo.identityTemplateCount).toBe(1);
  });

  it('is a CONFLICT for an archived store, and mounts nothing', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const store = await createStore(client);
    await archiveStore(client, store.id);
    expect(await attemptMount(client, store.id, pair)).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await mountRows(server.db, client.workspaceId)).toEqual([]);
  });

  it('mounts a system-managed default store on another pair of its identity READ_ONLY and not system-managed: explicit mounts are never writable', async () => {
    const client = await server.newWorkspace();
    const owner = newPair();
    // Another template of the same identity: another identity's default store cannot be mounted (test/default-store-privacy.test.ts).
    const reader = { identityId: owner.identityId, templateId: newPair().templateId };
    const session = await startSession(client, owner);
    const defaultStoreId = session.defaultMemoryStore!.id;
    const mount = await mountStore(client, defaultStoreId, reader);
    expect(mount).toMatchObject({ memoryStoreId: defaultStoreId, ...reader, access: 'READ_ONLY', systemManaged: false, name: DEFAULT_STORE_NAME });
    expect(await mountRows(server.db, client.workspaceId, reader)).toMatchObject([{ memoryStoreId: defaultStoreId, access: 'read_only', systemManaged: false }]);
    // The owner's default slot is untouched.
    expect(await mountRows(server.db, client.workspaceId, owner)).toMatchObject([{ memoryStoreId: defaultStoreId, access: 'read_write', systemManaged: true }]);
  });

  it(`takes ${MAX_EXPLICIT_MOUNTS_PER_PAIR} explicit mounts besides the default slot; the next is a CONFLICT that inserts nothing`, async () => {
    expect(MAX_EXPLICIT_MOUNTS_PER_PAIR).toBe(10);
    const client = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(client, pair);
    const stores = [];
    for (let index = 0; index <= MAX_EXPLICIT_MOUNTS_PER_PAIR; index += 1) stores.push(await createStore(client));
    for (const store of stores.slice(0, MAX_EXPLICIT_MOUNTS_PER_PAIR)) {
      expect((await attemptMount(client, store.id, pair)).__typename, store.id).toBe('MountMemoryStoreSuccess');
    }
    const extra = stores[MAX_EXPLICIT_MOUNTS_PER_PAIR]!;
    expect(await attemptMount(client, extra.id, pair)).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });

    const rows = await mountRows(server.db, client.workspaceId, pair);
    expect(rows).toHaveLength(MAX_EXPLICIT_MOUNTS_PER_PAIR + 1);
    expect(rows.filter((row) => row.systemManaged).map((row) => row.memoryStoreId)).toEqual([session.defaultMemoryStore!.id]);
    expect(rows.filter((row) => !row.systemManaged)).toHaveLength(MAX_EXPLICIT_MOUNTS_PER_PAIR);
    expect(rows.map((row) => row.memoryStoreId)).not.toContain(extra.id);
    expect((await storeMounts(client, extra.id)).bindingInfo.identityTemplateCount).toBe(0);
    expect((await listMounts(client, pair)).totalCount).toBe(MAX_EXPLICIT_MOUNTS_PER_PAIR + 1);

    // At the limit, mounting an already-mounted store is still the idempotent success.
    expect((await attemptMount(client, stores[0]!.id, pair)).__typename).toBe('MountMemoryStoreSuccess');
    // Unmounting one frees a place.
    expect((await attemptUnmount(client, stores[0]!.id, pair)).__typename).toBe('UnmountMemoryStoreSuccess');
    expect((await attemptMount(client, extra.id, pair)).__typename).toBe('MountMemoryStoreSuccess');
    expect(await mountRows(server.db, client.workspaceId, pair)).toHaveLength(MAX_EXPLICIT_MOUNTS_PER_PAIR + 1);
  });

  it(`counts the limit per pair: another pair can still mount ${MAX_EXPLICIT_MOUNTS_PER_PAIR} stores`, async () => {
    const client = await server.newWorkspace();
    const full = newPair();
    const other = { identityId: full.identityId, templateId: newPair().templateId };
    const stores = [];
    for (let index = 0; index < MAX_EXPLICIT_MOUNTS_PER_PAIR; index += 1) stores.push(await createStore(client));
    for (const store of stores) await mountStore(client, store.id, full);
    for (const store of stores) await mountStore(client, store.id, other);
    expect(await mountRows(server.db, client.workspaceId, full)).toHaveLength(MAX_EXPLICIT_MOUNTS_PER_PAIR);
    expect(await mountRows(server.db, client.workspaceId, other)).toHaveLength(MAX_EXPLICIT_MOUNTS_PER_PAIR);
    expect((await storeMounts(client, stores[0]!.id)).bindingInfo.identityTemplateCount).toBe(2);
  });

  it('is idempotent: mounting again returns the same mount with its first createdAt and adds no row', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const store = await createStore(client);
    const first = await mountStore(client, store.id, pair);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const again = await attemptMount(client, store.id, pair);
    expect(again.__typename).toBe('MountMemoryStoreSuccess');
    if (again.__typename !== 'MountMemoryStoreSuccess') return;
    expect(again.mount).toEqual(first);
    const rows = await mountRows(server.db, client.workspaceId, pair);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.createdAt).toEqual(new Date(first.createdAt));

    // The first mount time is the stored one, not the time of the latest request.
    await setMountTime(server.db, client.workspaceId, pair, store.id, at(1));
    const third = await attemptMount(client, store.id, pair);
    expect(third.__typename === 'MountMemoryStoreSuccess' && third.mount.createdAt).toBe(at(1).toISOString());
    expect(await mountRows(server.db, client.workspaceId, pair)).toHaveLength(1);
  });

  it('returns the pair\'s default mount (READ_WRITE, system-managed) when asked to mount the pair\'s own default store', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(client, pair);
    const defaultStoreId = session.defaultMemoryStore!.id;
    const result = await attemptMount(client, defaultStoreId, pair);
    expect(result.__typename).toBe('MountMemoryStoreSuccess');
    if (result.__typename !== 'MountMemoryStoreSuccess') return;
    expect(result.mount).toEqual(session.mounts[0]);
    expect(result.mount).toMatchObject({ memoryStoreId: defaultStoreId, access: 'READ_WRITE', systemManaged: true, name: DEFAULT_STORE_NAME, status: 'active' });
    expect(await mountedStores(client, pair)).toEqual([[defaultStoreId, 'default']]);
  });

  it('is NOT_FOUND for unknown, malformed and other workspaces\' stores, and mounts nothing', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const foreign = await createStore(other);
    const pair = newPair();
    for (const id of [newId('memoryStore'), 'memstore_nope', 'not-an-id', newId('memory'), foreign.id]) {
      expect(await attemptMount(client, id, pair), id).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    expect(await mountRows(server.db, client.workspaceId)).toEqual([]);
    expect(await mountRows(server.db, other.workspaceId)).toEqual([]);
  });

  it('refuses malformed identity and template ids with INVALID_REQUEST on that field, and mounts nothing', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const pair = newPair();
    for (const identityId of malformedIdentityIds) {
      const result = await attemptMount(client, store.id, { ...pair, identityId });
      expect(result.__typename, identityId).toBe('InvalidRequestError');
      expect(result.__typename === 'InvalidRequestError' && result.issues.map((issue) => issue.field), identityId).toEqual([['input', 'identityId']]);
    }
    for (const templateId of malformedTemplateIds) {
      const result = await attemptMount(client, store.id, { ...pair, templateId });
      expect(result.__typename, templateId).toBe('InvalidRequestError');
      expect(result.__typename === 'InvalidRequestError' && result.issues.map((issue) => issue.field), templateId).toEqual([['input', 'templateId']]);
    }
    const both = await attemptMount(client, store.id, { identityId: 'idn_', templateId: 'tmpl_' });
    expect(both.__typename === 'InvalidRequestError' && both.issues.map((issue) => issue.field)).toEqual([['input', 'identityId'], ['input', 'templateId']]);
    // Malformed ids are refused before the store is looked up.
    const unknownStore = await attemptMount(client, newId('memoryStore'), { ...pair, identityId: 'user_1' });
    expect(unknownStore.__typename).toBe('InvalidRequestError');
    expect(await mountRows(server.db, client.workspaceId)).toEqual([]);
  });

  it(`accepts identity and template ids of 1 and ${EXTERNAL_ID_BODY_MAX_CHARACTERS} letters or digits`, async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const longest = { identityId: `idn_${'Z9'.repeat(EXTERNAL_ID_BODY_MAX_CHARACTERS / 2)}`, templateId: `tmpl_${'a1'.repeat(EXTERNAL_ID_BODY_MAX_CHARACTERS / 2)}` };
    const shortest = { identityId: 'idn_A', templateId: 'tmpl_0' };
    for (const pair of [longest, shortest]) {
      expect(await mountStore(client, store.id, pair)).toMatchObject(pair);
      expect(await mountRows(server.db, client.workspaceId, pair)).toHaveLength(1);
    }
  });
});

describe('unmountMemoryStore', () => {
  it('removes the mount and returns the store id; other pairs keep theirs', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const other = newPair();
    const store = await createStore(client);
    const kept = await createStore(client);
    await mountStore(client, store.id, pair);
    await mountStore(client, kept.id, pair);
    await mountStore(client, store.id, other);
    expect(await attemptUnmount(client, store.id, pair)).toEqual({ __typename: 'UnmountMemoryStoreSuccess', unmountedMemoryStoreId: store.id });
    expect(await mountedStores(client, pair)).toEqual([[kept.id, 'explicit']]);
    expect(await mountedStores(client, other)).toEqual([[store.id, 'explicit']]);
    expect((await storeMounts(client, store.id)).bindingInfo.identityTemplateCount).toBe(1);
    // Unmounting is not idempotent: the second time there is nothing to unmount.
    expect(await attemptUnmount(client, store.id, pair)).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
  });

  it('is NOT_FOUND when the store is not mounted on that pair (unknown, unmounted, mounted elsewhere, other workspace)', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const pair = newPair();
    const elsewhere = newPair();
    const unmounted = await createStore(client);
    const mountedElsewhere = await createStore(client);
    await mountStore(client, mountedElsewhere.id, elsewhere);
    const foreign = await createStore(other);
    await mountStore(other, foreign.id, pair);
    for (const id of [newId('memoryStore'), 'memstore_nope', unmounted.id, mountedElsewhere.id, foreign.id]) {
      expect(await attemptUnmount(client, id, pair), id).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    expect(await mountedStores(client, elsewhere)).toEqual([[mountedElsewhere.id, 'explicit']]);
    expect(await mountedStores(other, pair)).toEqual([[foreign.id, 'explicit']]);
  });

  it('is a CONFLICT for the pair\'s default slot, which stays', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(client, pair);
    const defaultStoreId = session.defaultMemoryStore!.id;
    expect(await attemptUnmount(client, defaultStoreId, pair)).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await mountedStores(client, pair)).toEqual([[defaultStoreId, 'default']]);
    expect((await listMounts(client, pair)).edges.map((edge) => edge.node.memoryStoreId)).toEqual([defaultStoreId]);
  });

  it('refuses malformed identity and template ids with INVALID_REQUEST on that field', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const store = await createStore(client);
    await mountStore(client, store.id, pair);
    const badIdentity = await attemptUnmount(client, store.id, { ...pair, identityId: 'idn_has-dash' });
    expect(badIdentity.__typename === 'InvalidRequestError' && badIdentity.issues.map((issue) => issue.field)).toEqual([['input', 'identityId']]);
    const badTemplate = await attemptUnmount(client, store.id, { ...pair, templateId: `tmpl_${tooLongBody}` });
    expect(badTemplate.__typename === 'InvalidRequestError' && badTemplate.issues.map((issue) => issue.field)).toEqual([['input', 'templateId']]);
    expect(await mountedStores(client, pair)).toEqual([[store.id, 'explicit']]);
  });
});

describe('memoryStoreMounts', () => {
  it('lists the default slot first, then the explicit mounts in ascending mount time', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const [a, b, c] = [await createStore(client), await createStore(client), await createStore(client)];
    for (const store of [a, b, c]) await mountStore(client, store.id, pair);
    const session = await startSession(client, pair);
    const defaultStoreId = session.defaultMemoryStore!.id;
    // Mount times unlike both creation order and id order; the default slot is the newest.
    await setMountTime(server.db, client.workspaceId, pair, a.id, at(3));
    await setMountTime(server.db, client.workspaceId, pair, b.id, at(1));
    await setMountTime(server.db, client.workspaceId, pair, c.id, at(2));
    await setMountTime(server.db, client.workspaceId, pair, defaultStoreId, at(5));

    const list = await listMounts(client, pair);
    expect(list.totalCount).toBe(4);
    expect(list.edges.map((edge) => [edge.node.memoryStoreId, edge.node.access, edge.node.systemManaged, edge.node.createdAt])).toEqual([
      [defaultStoreId, 'READ_WRITE', true, at(5).toISOString()],
      [b.id, 'READ_ONLY', false, at(1).toISOString()],
      [c.id, 'READ_ONLY', false, at(2).toISOString()],
      [a.id, 'READ_ONLY', false, at(3).toISOString()],
    ]);
    for (const { node } of list.edges) expect(node).toMatchObject(pair);
    expect(list.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
  });

  it('pages with first/after without gaps or repeats, and totalCount counts every mount', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(client, pair);
    for (let index = 0; index < 5; index += 1) {
      const store = await createStore(client);
      await mountStore(client, store.id, pair);
      await setMountTime(server.db, client.workspaceId, pair, store.id, at(10 - index));
    }
    const all = (await listMounts(client, pair)).edges.map((edge) => edge.node.memoryStoreId);
    expect(all).toHaveLength(6);
    expect(all[0]).toBe(session.defaultMemoryStore!.id);

    const seen: string[] = [];
    const pages: boolean[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await listMounts(client, pair, { first: 4, after });
      expect(page.totalCount).toBe(6);
      seen.push(...page.edges.map((edge) => edge.node.memoryStoreId));
      pages.push(page.pageInfo.hasNextPage);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor!;
    }
    expect(pages).toEqual([true, false]);
    expect(seen).toEqual(all);

    const pairs = await listMounts(client, pair, { first: 2 });
    const second = await listMounts(client, pair, { first: 2, after: pairs.edges[1]!.cursor });
    expect(second.edges.map((edge) => edge.node.memoryStoreId)).toEqual(all.slice(2, 4));
    expect(second.pageInfo.hasNextPage).toBe(true);

    // Backwards with last/before, across the default slot.
    const tail = await listMounts(client, pair, { last: 4 });
    expect(tail.edges.map((edge) => edge.node.memoryStoreId)).toEqual(all.slice(2));
    expect(tail.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
    const head = await listMounts(client, pair, { last: 4, before: tail.pageInfo.startCursor! });
    expect(head.edges.map((edge) => edge.node.memoryStoreId)).toEqual(all.slice(0, 2));
    expect(head.pageInfo.hasPreviousPage).toBe(false);
  });

  it('is empty for a pair with no mounts, and scoped to the caller\'s workspace', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const pair = newPair();
    await mountStore(other, (await createStore(other)).id, pair);
    await startSession(other, pair);
    const list = await listMounts(client, pair);
    expect(list).toMatchObject({ totalCount: 0, edges: [], pageInfo: { hasNextPage: false, hasPreviousPage: false } });
    expect((await listMounts(other, pair)).totalCount).toBe(2);
  });

  it('answers malformed identity or template ids and bad page sizes with a top-level INVALID_REQUEST error', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    for (const identityId of ['idn_', 'idn_has-dash', 'user_1', `idn_${tooLongBody}`]) {
      const response = await client.execute(PairMounts, { ...pair, identityId });
      expect(response.errors?.[0]?.extensions?.code, identityId).toBe('INVALID_REQUEST');
      expect(response.data?.memoryStoreMounts ?? null).toBeNull();
    }
    for (const templateId of ['tmpl_', 'tmpl_has-dash', 'template_1', `tmpl_${tooLongBody}`]) {
      const response = await client.execute(PairMounts, { ...pair, templateId });
      expect(response.errors?.[0]?.extensions?.code, templateId).toBe('INVALID_REQUEST');
    }
    for (const first of [-1, 101]) {
      const response = await client.execute(PairMounts, { ...pair, first });
      expect(response.errors?.[0]?.extensions?.code, String(first)).toBe('INVALID_REQUEST');
    }
  });
});

describe('mount name, status and entryCount', () => {
  it('are read from the store as it is now', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const store = await createStore(client, { name: 'team-a' });
    await createMemory(client, store.id);
    await createMemory(client, store.id);
    const mount = await mountStore(client, store.id, pair);
    expect(mount).toMatchObject({ name: 'team-a', status: 'active', entryCount: 2 });

    expect((await client.data(RenameMountedStore, { id: store.id, name: 'team-b' })).updateMemoryStore.__typename).toBe('UpdateMemoryStoreSuccess');
    await createMemory(client, store.id);
    const [listed] = (await listMounts(client, pair)).edges;
    expect(listed?.node).toMatchObject({ memoryStoreId: store.id, name: 'team-b', status: 'active', entryCount: 3, createdAt: mount.createdAt });
  });

  it('show "archived" in lower case for an archived store, and "", "" and 0 once the store cannot be read', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const store = await createStore(client, { name: 'short-lived' });
    await createMemory(client, store.id);
    await mountStore(client, store.id, pair);
    const session = await startSession(client, pair);
    const defaultStoreId = session.defaultMemoryStore!.id;
    await createMemory(client, defaultStoreId);
    expect(session.mounts.map((mount) => [mount.memoryStoreId, mount.status])).toEqual([[defaultStoreId, 'active'], [store.id, 'active']]);

    // The session's mounts are a snapshot; their store fields are read now.
    await archiveStore(client, defaultStoreId);
    expect((await attemptUnmount(client, store.id, pair)).__typename).toBe('UnmountMemoryStoreSuccess');
    expect((await client.data(DeleteStore, { id: store.id })).deleteMemoryStore.__typename).toBe('DeleteMemoryStoreSuccess');
    const { session: later } = await client.data(GetSession, { id: session.id });
    expect(later?.mounts.map((mount) => [mount.memoryStoreId, mount.name, mount.status, mount.entryCount, mount.memoryStore?.id ?? null])).toEqual([
      [defaultStoreId, DEFAULT_STORE_NAME, 'archived', 1, defaultStoreId],
      [store.id, '', '', 0, null],
    ]);
  });
});

describe('MemoryStore.mounts and bindingInfo', () => {
  it('list the pairs mounting a store in ascending mount time, and identityTemplateCount counts them', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const [first, second, third] = [newPair(), newPair(), newPair()];
    for (const pair of [first, second, third]) await mountStore(client, store.id, pair);
    await setMountTime(server.db, client.workspaceId, first, store.id, at(3));
    await setMountTime(server.db, client.workspaceId, second, store.id, at(1));
    await setMountTime(server.db, client.workspaceId, third, store.id, at(2));

    const mounted = await storeMounts(client, store.id);
    expect(mounted.bindingInfo.identityTemplateCount).toBe(3);
    expect(mounted.mounts.totalCount).toBe(3);
    expect(mounted.mounts.edges.map((edge) => [edge.node.identityId, edge.node.templateId, edge.node.access, edge.node.systemManaged])).toEqual(
      [second, third, first].map((pair) => [pair.identityId, pair.templateId, 'READ_ONLY', false]),
    );
    const page = await client.data(StoreMounts, { id: store.id, first: 2 });
    expect(page.memoryStore?.mounts.pageInfo.hasNextPage).toBe(true);
    const rest = await client.data(StoreMounts, { id: store.id, first: 2, after: page.memoryStore!.mounts.edges[1]!.cursor });
    expect(rest.memoryStore?.mounts.edges.map((edge) => edge.node.identityId)).toEqual([first.identityId]);

    await attemptUnmount(client, store.id, second);
    const after = await storeMounts(client, store.id);
    expect(after.bindingInfo.identityTemplateCount).toBe(2);
    expect(after.mounts.edges.map((edge) => edge.node.identityId)).toEqual([third.identityId, first.identityId]);
    expect((await client.data(GetStore, { id: store.id })).memoryStore?.bindingInfo.identityTemplateCount).toBe(2);
  });

  it('count the owning pair\'s default slot for a default store, and explicit mounts by other pairs besides', async () => {
    const client = await server.newWorkspace();
    const owner = newPair();
    const reader = { identityId: owner.identityId, templateId: newPair().templateId };
    const session = await startSession(client, owner);
    const defaultStoreId = session.defaultMemoryStore!.id;
    expect(session.defaultMemoryStore.bindingInfo.identityTemplateCount).toBe(1);
    await mountStore(client, defaultStoreId, reader);
    const mounted = await storeMounts(client, defaultStoreId);
    expect(mounted.bindingInfo.identityTemplateCount).toBe(2);
    expect(mounted.mounts.edges.map((edge) => [edge.node.identityId, edge.node.access, edge.node.systemManaged])).toEqual([
      [owner.identityId, 'READ_WRITE', true],
      [reader.identityId, 'READ_ONLY', false],
    ]);
  });
});

describe('archive and delete guards', () => {
  it('archiveMemoryStore is a CONFLICT while any explicit mount remains, and succeeds once the last is unmounted', async () => {
    const client = await server.newWorkspace();
    const [first, second] = [newPair(), newPair()];
    const store = await createStore(client);
    await mountStore(client, store.id, first);
    await mountStore(client, store.id, second);
    const archive = async () => (await client.data(ArchiveStore, { id: store.id })).archiveMemoryStore;

    expect(await archive()).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await storeRow(server.db, client.workspaceId, store.id)).toMatchObject({ status: 'active', archivedAt: null });
    await attemptUnmount(client, store.id, first);
    expect(await archive()).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await mountedStores(client, second)).toEqual([[store.id, 'explicit']]);
    await attemptUnmount(client, store.id, second);
    const archived = await archive();
    expect(archived.__typename === 'ArchiveMemoryStoreSuccess' && archived.memoryStore.status).toBe('ARCHIVED');
    expect(await storeRow(server.db, client.workspaceId, store.id)).toMatchObject({ status: 'archived' });
  });

  it('deleteMemoryStore is a CONFLICT while any explicit mount remains, and succeeds once it is unmounted', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const store = await createStore(client);
    await createMemory(client, store.id);
    await mountStore(client, store.id, pair);
    const remove = async () => (await client.data(DeleteStore, { id: store.id })).deleteMemoryStore;

    expect(await remove()).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await storeRow(server.db, client.workspaceId, store.id)).toMatchObject({ status: 'active', entryCount: 1 });
    expect(await memoryRows(server.db, client.workspaceId, store.id)).toHaveLength(1);
    expect(await mountedStores(client, pair)).toEqual([[store.id, 'explicit']]);
    await attemptUnmount(client, store.id, pair);
    expect(await remove()).toEqual({ __typename: 'DeleteMemoryStoreSuccess', deletedMemoryStoreId: store.id });
    expect(await storeRow(server.db, client.workspaceId, store.id)).toBeUndefined();
  });

  it('archiving a default store that another pair mounts explicitly is a CONFLICT', async () => {
    const client = await server.newWorkspace();
    const owner = newPair();
    const reader = { identityId: owner.identityId, templateId: newPair().templateId };
    const defaultStoreId = (await startSession(client, owner)).defaultMemoryStore.id;
    await mountStore(client, defaultStoreId, reader);
    expect((await client.data(ArchiveStore, { id: defaultStoreId })).archiveMemoryStore).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await storeRow(server.db, client.workspaceId, defaultStoreId)).toMatchObject({ status: 'active' });
    expect(await mountedStores(client, owner)).toEqual([[defaultStoreId, 'default']]);
  });

  it('archiving a system-managed default store releases its slot: the pair\'s next session gets a new, empty default store', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const explicit = await createStore(client);
    await mountStore(client, explicit.id, pair);
    const firstSession = await startSession(client, pair);
    const oldDefault = firstSession.defaultMemoryStore.id;
    await createMemory(client, oldDefault, { path: 'kept.md', content: 'old' });

    const archived = await archiveStore(client, oldDefault);
    expect(archived).toMatchObject({ status: 'ARCHIVED', systemManaged: true, bindingInfo: { identityTemplateCount: 0 } });
    expect(await mountedStores(client, pair)).toEqual([[explicit.id, 'explicit']]);
    expect((await listMounts(client, pair)).edges.map((edge) => edge.node.memoryStoreId)).toEqual([explicit.id]);

    const nextSession = await startSession(client, pair);
    const newDefault = nextSession.defaultMemoryStore;
    expect(newDefault.id).not.toBe(oldDefault);
    expect(newDefault).toMatchObject({ name: DEFAULT_STORE_NAME, status: 'ACTIVE', systemManaged: true, identityId: pair.identityId, entryCount: 0, totalSize: 0 });
    expect(nextSession.mounts.map((mount) => [mount.memoryStoreId, mount.access])).toEqual([[newDefault.id, 'READ_WRITE'], [explicit.id, 'READ_ONLY']]);
    expect(await mountedStores(client, pair)).toEqual([[newDefault.id, 'default'], [explicit.id, 'explicit']]);
    // The archived store keeps its memories; the pair now has two system-managed stores, one active.
    expect((await defaultStoreRows(server.db, client.workspaceId, pair)).map((row) => [row.id, row.status, row.entryCount])).toEqual([
      [oldDefault, 'archived', 1],
      [newDefault.id, 'active', 0],
    ]);
    // The first session still names the store it was given.
    expect((await client.data(GetSession, { id: firstSession.id })).session?.defaultMemoryStore?.id).toBe(oldDefault);
  });
});
