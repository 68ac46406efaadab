import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memories, memoryStoreMounts, memoryStores, memoryVersions } from '../src/db/schema.js';
import { newId } from '../src/domain/ids.js';
import { createStore, insertMount, storeRow } from './support/builders.js';
import { ArchiveStore, DeleteStore, GetStore } from './support/documents.js';
import { graphql } from './generated/gql.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const UpdateStore = graphql(`
  mutation UpdateStore($input: UpdateMemoryStoreInput!) {
    updateMemoryStore(input: $input) {
      __typename
      ... on UpdateMemoryStoreSuccess {
        memoryStore {
          ...StoreFields
        }
      }
      ...ErrorFields
    }
  }
`);

async function update(client: TestClient, input: { id: string; name?: string | null; description?: string | null; metadata?: Record<string, unknown> | null }) {
  return (await client.data(UpdateStore, { input })).updateMemoryStore;
}

async function archive(client: TestClient, id: string) {
  return (await client.data(ArchiveStore, { id })).archiveMemoryStore;
}

async function remove(client: TestClient, id: string) {
  return (await client.data(DeleteStore, { id })).deleteMemoryStore;
}

/** A system-managed default store of a pair, with its default-slot mount (written directly). */
async function insertDefaultStore(client: TestClient) {
  const now = new Date();
  const id = newId('memoryStore');
  await server.db.insert(memoryStores).values({
    workspaceId: client.workspaceId,
    id,
    name: 'System Default Memory',
    description: '',
    status: 'active',
    metadata: { created_by: 'forward' },
    systemManaged: true,
    identityId: 'idn_owner',
    templateId: 'tmpl_one',
    createdAt: now,
    updatedAt: now,
  });
  await insertMount(server.db, client.workspaceId, id, { identityId: 'idn_owner', templateId: 'tmpl_one', systemManaged: true });
  return id;
}

/** A memory and one version of it, written directly (the memory API comes later). */
async function insertMemoryWithVersion(client: TestClient, memoryStoreId: string) {
  const now = new Date();
  const memoryId = newId('memory');
  const common = { workspaceId: client.workspaceId, memoryStoreId, path: 'notes/a.md', contentSizeBytes: 2, contentSha256: 'x'.repeat(64) };
  await server.db.insert(memories).values({ ...common, id: memoryId, content: 'hi', metadata: {}, versionSequence: 1, createdAt: now, updatedAt: now });
  await server.db.insert(memoryVersions).values({
    ...common,
    id: newId('memoryVersion'),
    memoryId,
    content: 'hi',
    operation: 'created',
    sequence: 1,
    createdByApiKeyId: 'key_test',
    createdAt: now,
  });
}

describe('updateMemoryStore', () => {
  it('changes the given fields, keeps the others and moves updatedAt', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client, { name: 'before', description: 'kept', metadata: { team: 'a' } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const result = await update(client, { id: store.id, name: 'after' });
    expect(result.__typename).toBe('UpdateMemoryStoreSuccess');
    if (result.__typename !== 'UpdateMemoryStoreSuccess') return;
    expect(result.memoryStore).toMatchObject({ name: 'after', description: 'kept', metadata: { team: 'a', created_by: 'forward' } });
    expect(result.memoryStore.createdAt).toBe(store.createdAt);
    expect(Date.parse(result.memoryStore.updatedAt)).toBeGreaterThan(Date.parse(store.updatedAt));
    expect((await storeRow(server.db, client.workspaceId, store.id))?.name).toBe('after');
  });

  it('replaces the whole metadata map and keeps created_by', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client, { metadata: { team: 'a', owner: 'b' } });
    const result = await update(client, { id: store.id, metadata: { project: 'c' } });
    expect(result.__typename === 'UpdateMemoryStoreSuccess' && result.memoryStore.metadata).toEqual({ project: 'c', created_by: 'forward' });
    const cleared = await update(client, { id: store.id, metadata: {} });
    expect(cleared.__typename === 'UpdateMemoryStoreSuccess' && cleared.memoryStore.metadata).toEqual({ created_by: 'forward' });
  });

  it('refuses created_by in the new metadata', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const result = await update(client, { id: store.id, metadata: { created_by: 'me' } });
    expect(result.__typename === 'InvalidRequestError' && result.issues.map((issue) => issue.field)).toEqual([['input', 'metadata', 'created_by']]);
  });

  it('needs at least one field to change', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const result = await update(client, { id: store.id });
    expect(result.__typename).toBe('InvalidRequestError');
    expect(result.__typename === 'InvalidRequestError' && result.issues.map((issue) => issue.field)).toEqual([['input']]);
  });

  it('refuses an explicit null for each field and changes nothing', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client, { name: 'same' });
    for (const field of ['name', 'description', 'metadata'] as const) {
      const result = await update(client, { id: store.id, [field]: null });
      expect(result.__typename === 'InvalidRequestError' && result.issues.map((issue) => issue.field)).toEqual([['input', field]]);
    }
    expect(await storeRow(server.db, client.workspaceId, store.id)).toMatchObject({ name: 'same', updatedAt: new Date(store.updatedAt) });
  });

  it('applies the create rules to the new values', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const result = await update(client, { id: store.id, name: ' ', description: 'x'.repeat(1025), metadata: { n: '\u0000' } });
    expect(result.__typename === 'InvalidRequestError' && result.issues.map((issue) => issue.field)).toEqual([
      ['input', 'name'],
      ['input', 'description'],
      ['input', 'metadata', 'n'],
    ]);
  });

  it('is a CONFLICT on an archived store, which stays unchanged', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client, { name: 'frozen' });
    await archive(client, store.id);
    const result = await update(client, { id: store.id, name: 'thawed' });
    expect(result).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect((await storeRow(server.db, client.workspaceId, store.id))?.name).toBe('frozen');
  });

  it('is NOT_FOUND for unknown, malformed and other workspaces\' ids', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const foreign = await createStore(other, { name: 'theirs' });
    for (const id of [newId('memoryStore'), 'memstore_nope', 'not-an-id', foreign.id]) {
      const result = await update(client, { id, name: 'mine' });
      expect(result).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    expect((await storeRow(server.db, other.workspaceId, foreign.id))?.name).toBe('theirs');
  });
});

describe('archiveMemoryStore', () => {
  it('archives an active store and sets archivedAt', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const result = await archive(client, store.id);
    expect(result.__typename).toBe('ArchiveMemoryStoreSuccess');
    if (result.__typename !== 'ArchiveMemoryStoreSuccess') return;
    expect(result.memoryStore.status).toBe('ARCHIVED');
    expect(result.memoryStore.archivedAt).not.toBeNull();
    expect(result.memoryStore.updatedAt).toBe(result.memoryStore.archivedAt);
    expect((await storeRow(server.db, client.workspaceId, store.id))?.status).toBe('archived');
  });

  it('is a CONFLICT when the store is already archived', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const first = await archive(client, store.id);
    const second = await archive(client, store.id);
    expect(second).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    const row = await storeRow(server.db, client.workspaceId, store.id);
    expect(first.__typename === 'ArchiveMemoryStoreSuccess' && row?.archivedAt?.toISOString()).toBe(
      first.__typename === 'ArchiveMemoryStoreSuccess' && first.memoryStore.archivedAt,
    );
  });

  it('is a CONFLICT while an explicit mount remains, and leaves the store active', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await insertMount(server.db, client.workspaceId, store.id);
    const result = await archive(client, store.id);
    expect(result).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(result.__typename === 'ConflictError' && result.message).toMatch(/mounted on 1 \(identity, template\) pair/);
    expect((await storeRow(server.db, client.workspaceId, store.id))?.status).toBe('active');
  });

  it('releases the default slot when archiving a system-managed store', async () => {
    const client = await server.newWorkspace();
    const storeId = await insertDefaultStore(client);
    const before = await client.data(GetStore, { id: storeId });
    expect(before.memoryStore?.bindingInfo.identityTemplateCount).toBe(1);
    const result = await archive(client, storeId);
    expect(result.__typename).toBe('ArchiveMemoryStoreSuccess');
    const slots = await server.db
      .select()
      .from(memoryStoreMounts)
      .where(and(eq(memoryStoreMounts.workspaceId, client.workspaceId), eq(memoryStoreMounts.identityId, 'idn_owner')));
    expect(slots).toEqual([]);
    expect((await client.data(GetStore, { id: storeId })).memoryStore?.bindingInfo.identityTemplateCount).toBe(0);
  });

  it('is NOT_FOUND for another workspace\'s store', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const foreign = await createStore(other);
    expect(await archive(client, foreign.id)).toMatchObject({ __typename: 'NotFoundError' });
    expect((await storeRow(server.db, other.workspaceId, foreign.id))?.status).toBe('active');
  });
});

describe('deleteMemoryStore', () => {
  it('deletes the store with its memories and versions', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await insertMemoryWithVersion(client, store.id);
    const result = await remove(client, store.id);
    expect(result).toEqual({ __typename: 'DeleteMemoryStoreSuccess', deletedMemoryStoreId: store.id });
    expect((await client.data(GetStore, { id: store.id })).memoryStore).toBeNull();
    expect(await storeRow(server.db, client.workspaceId, store.id)).toBeUndefined();
    expect(await server.db.select().from(memories).where(eq(memories.memoryStoreId, store.id))).toEqual([]);
    expect(await server.db.select().from(memoryVersions).where(eq(memoryVersions.memoryStoreId, store.id))).toEqual([]);
  });

  it('is a CONFLICT for an archived store, which keeps its memories', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await insertMemoryWithVersion(client, store.id);
    await archive(client, store.id);
    expect(await remove(client, store.id)).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await storeRow(server.db, client.workspaceId, store.id)).toBeDefined();
    expect(await server.db.select().from(memories).where(eq(memories.memoryStoreId, store.id))).toHaveLength(1);
  });

  it('is a CONFLICT while an explicit mount remains', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await insertMount(server.db, client.workspaceId, store.id, { identityId: 'idn_a' });
    await insertMount(server.db, client.workspaceId, store.id, { identityId: 'idn_b' });
    const result = await remove(client, store.id);
    expect(result).toMatchObject({ __typename: 'ConflictError' });
    expect(result.__typename === 'ConflictError' && result.message).toMatch(/mounted on 2 \(identity, template\) pairs/);
    expect(await storeRow(server.db, client.workspaceId, store.id)).toBeDefined();
  });

  it('is NOT_FOUND the second time and for other workspaces\' stores', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const store = await createStore(client);
    const foreign = await createStore(other);
    await remove(client, store.id);
    expect(await remove(client, store.id)).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    expect(await remove(client, foreign.id)).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    expect(await storeRow(server.db, other.workspaceId, foreign.id)).toBeDefined();
  });
});

describe('MemoryStore.bindingInfo', () => {
  it('counts the (identity, template) pairs mounting the store', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await insertMount(server.db, client.workspaceId, store.id, { identityId: 'idn_a', templateId: 'tmpl_1' });
    await insertMount(server.db, client.workspaceId, store.id, { identityId: 'idn_a', templateId: 'tmpl_2' });
    await insertMount(server.db, client.workspaceId, store.id, { identityId: 'idn_b', templateId: 'tmpl_1' });
    expect((await client.data(GetStore, { id: store.id })).memoryStore?.bindingInfo.identityTemplateCount).toBe(3);
  });
});

describe('MemoryStore.bindingInfo across workspaces', () => {
  it('counts only the mounts of the caller\'s workspace, even for a store id another workspace also has', async () => {
    const alice = await server.newWorkspace();
    const bob = await server.newWorkspace();
    const store = await createStore(alice);
    const now = new Date();
    await server.db.insert(memoryStores).values({ workspaceId: bob.workspaceId, id: store.id, name: 'twin', description: '', status: 'active', metadata: {}, systemManaged: false, createdAt: now, updatedAt: now });
    await insertMount(server.db, bob.workspaceId, store.id);
    expect((await alice.data(GetStore, { id: store.id })).memoryStore?.bindingInfo.identityTemplateCount).toBe(0);
  });
});
