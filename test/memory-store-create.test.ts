import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { idempotencyKeys } from '../src/db/schema.js';
import {
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  STORE_DESCRIPTION_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from '../src/domain/limits.js';
import { countStoreRows, createStore, storeRow } from './support/builders.js';
import { CreateStore } from './support/documents.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

type CreateInput = { name: string; description?: string | null; metadata?: Record<string, unknown> | null; idempotencyKey?: string };

async function attemptCreate(client: TestClient, input: CreateInput) {
  const response = await client.execute(CreateStore, { input });
  expect(response.errors).toBeUndefined();
  return response.data!.createMemoryStore;
}

/** Asserts the create was refused with INVALID_REQUEST naming exactly these fields, and stored nothing. */
async function expectRejected(input: CreateInput, fields: string[][]) {
  const client = await server.newWorkspace();
  const result = await attemptCreate(client, input);
  expect(result.__typename).toBe('InvalidRequestError');
  if (result.__typename !== 'InvalidRequestError') return;
  expect(result.code).toBe('INVALID_REQUEST');
  expect(result.issues.map((issue) => issue.field)).toEqual(fields);
  expect(await countStoreRows(server.db, client.workspaceId)).toBe(0);
  return result;
}

async function expectCreated(input: CreateInput) {
  const client = await server.newWorkspace();
  const result = await attemptCreate(client, input);
  expect(result.__typename, JSON.stringify(result)).toBe('CreateMemoryStoreSuccess');
  return result;
}

const letters = (count: number, letter = 'a') => letter.repeat(count);

describe('createMemoryStore', () => {
  it('creates an active, empty store with created_by "forward" added to its metadata', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client, { name: 'project-alpha-memory', description: 'Agent knowledge base', metadata: { team: 'backend' } });
    expect(store).toMatchObject({
      name: 'project-alpha-memory',
      description: 'Agent knowledge base',
      status: 'ACTIVE',
      entryCount: 0,
      totalSize: 0,
      metadata: { team: 'backend', created_by: 'forward' },
      systemManaged: false,
      identityId: null,
      archivedAt: null,
      bindingInfo: { identityTemplateCount: 0 },
    });
    expect(store.id).toMatch(/^memstore_[0-9a-z]{20}$/);
    expect(store.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(store.updatedAt).toBe(store.createdAt);
    const row = await storeRow(server.db, client.workspaceId, store.id);
    expect(row).toMatchObject({ name: 'project-alpha-memory', status: 'active', metadata: { team: 'backend', created_by: 'forward' } });
  });

  it('stores an omitted or null description as "" and omitted metadata as just created_by', async () => {
    for (const description of [undefined, null]) {
      const result = await expectCreated({ name: 'n', description, metadata: null });
      if (result.__typename === 'CreateMemoryStoreSuccess') {
        expect(result.memoryStore.description).toBe('');
        expect(result.memoryStore.metadata).toEqual({ created_by: 'forward' });
      }
    }
  });

  describe('name', () => {
    it(`accepts ${STORE_NAME_MAX_CHARACTERS} characters and refuses one more`, async () => {
      await expectCreated({ name: letters(STORE_NAME_MAX_CHARACTERS) });
      await expectRejected({ name: letters(STORE_NAME_MAX_CHARACTERS + 1) }, [['input', 'name']]);
    });

    it('counts characters, not bytes or UTF-16 units', async () => {
      await expectCreated({ name: letters(STORE_NAME_MAX_CHARACTERS, '😀') });
      await expectRejected({ name: letters(STORE_NAME_MAX_CHARACTERS + 1, 'é') }, [['input', 'name']]);
    });

    it('refuses an empty or blank name', async () => {
      await expectRejected({ name: '' }, [['input', 'name']]);
      await expectRejected({ name: ' \t\n ' }, [['input', 'name']]);
    });

    it('refuses control characters other than \\n \\r \\t, and lone surrogates', async () => {
      await expectCreated({ name: 'line one\nline two\r\n\tend' });
      for (const bad of ['a\u0000b', 'a\u0001b', 'a\u001fb', 'a\u007fb', 'a\ud800b']) {
        await expectRejected({ name: bad }, [['input', 'name']]);
      }
    });
  });

  describe('description', () => {
    it(`accepts ${STORE_DESCRIPTION_MAX_CHARACTERS} characters and refuses one more`, async () => {
      await expectCreated({ name: 'n', description: letters(STORE_DESCRIPTION_MAX_CHARACTERS) });
      await expectRejected({ name: 'n', description: letters(STORE_DESCRIPTION_MAX_CHARACTERS + 1) }, [['input', 'description']]);
    });

    it('allows \\n \\r \\t and refuses other control characters', async () => {
      await expectCreated({ name: 'n', description: 'a\nb\rc\td' });
      await expectRejected({ name: 'n', description: 'bell\u0007' }, [['input', 'description']]);
      await expectRejected({ name: 'n', description: 'del\u007f' }, [['input', 'description']]);
    });
  });

  describe('metadata (the seed\'s store metadata constraints)', () => {
    const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`key${index}`, 'v']));

    it(`accepts ${STORE_METADATA_MAX_KEYS} keys and refuses ${STORE_METADATA_MAX_KEYS + 1} (created_by takes the 16th slot)`, async () => {
      const result = await expectCreated({ name: 'n', metadata: keys(STORE_METADATA_MAX_KEYS) });
      if (result.__typename === 'CreateMemoryStoreSuccess') {
        expect(Object.keys(result.memoryStore.metadata)).toHaveLength(STORE_METADATA_MAX_KEYS + 1);
      }
      await expectRejected({ name: 'n', metadata: keys(STORE_METADATA_MAX_KEYS + 1) }, [['input', 'metadata']]);
    });

    it(`accepts keys of 1 to ${METADATA_KEY_MAX_CHARACTERS} characters`, async () => {
      await expectCreated({ name: 'n', metadata: { k: 'v', [letters(METADATA_KEY_MAX_CHARACTERS)]: 'v' } });
      await expectRejected({ name: 'n', metadata: { '': 'v' } }, [['input', 'metadata', '']]);
      const long = letters(METADATA_KEY_MAX_CHARACTERS + 1);
      await expectRejected({ name: 'n', metadata: { [long]: 'v' } }, [['input', 'metadata', long]]);
    });

    it('requires string values', async () => {
      for (const value of [1, true, null, { nested: 'x' }, ['x']]) {
        await expectRejected({ name: 'n', metadata: { team: value } }, [['input', 'metadata', 'team']]);
      }
    });

    it(`accepts values of up to ${METADATA_VALUE_MAX_CHARACTERS} characters`, async () => {
      await expectCreated({ name: 'n', metadata: { team: letters(METADATA_VALUE_MAX_CHARACTERS), empty: '' } });
      await expectRejected({ name: 'n', metadata: { team: letters(METADATA_VALUE_MAX_CHARACTERS + 1) } }, [['input', 'metadata', 'team']]);
    });

    it('refuses the reserved key created_by with INVALID_REQUEST', async () => {
      const result = await expectRejected({ name: 'n', metadata: { created_by: 'me' } }, [['input', 'metadata', 'created_by']]);
      expect(result?.message).toContain('reserved');
    });

    it('refuses a metadata argument that is not an object as a request error', async () => {
      const client = await server.newWorkspace();
      const response = await client.send({
        query: 'mutation($input: CreateMemoryStoreInput!) { createMemoryStore(input: $input) { __typename } }',
        variables: { input: { name: 'n', metadata: ['not', 'an', 'object'] } },
      });
      expect(response.errors?.[0]?.message).toMatch(/JSONObject/);
      expect(await countStoreRows(server.db, client.workspaceId)).toBe(0);
    });
  });

  it('reports every problem of a request at once', async () => {
    const result = await expectRejected(
      { name: '', description: letters(STORE_DESCRIPTION_MAX_CHARACTERS + 1), metadata: { created_by: 'x', n: 1 } },
      [['input', 'name'], ['input', 'description'], ['input', 'metadata', 'created_by'], ['input', 'metadata', 'n']],
    );
    expect(result?.message).toMatch(/4 problems/);
  });

  describe('idempotencyKey', () => {
    it('returns the first store again for the same key and the same input', async () => {
      const client = await server.newWorkspace();
      const input = { name: 'once', metadata: { a: '1', b: '2' }, idempotencyKey: 'request-1' };
      const first = await createStore(client, input);
      const again = await createStore(client, { ...input, metadata: { b: '2', a: '1' } });
      expect(again.id).toBe(first.id);
      expect(await countStoreRows(server.db, client.workspaceId)).toBe(1);
    });

    it('is a CONFLICT for the same key with a different input, and creates nothing', async () => {
      const client = await server.newWorkspace();
      await createStore(client, { name: 'once', idempotencyKey: 'request-1' });
      const result = await attemptCreate(client, { name: 'other', idempotencyKey: 'request-1' });
      expect(result).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
      expect(await countStoreRows(server.db, client.workspaceId)).toBe(1);
    });

    it('remembers a key for 24 hours only', async () => {
      const client = await server.newWorkspace();
      const first = await createStore(client, { name: 'once', idempotencyKey: 'request-1' });
      await server.db
        .update(idempotencyKeys)
        .set({ createdAt: new Date(Date.now() - 24 * 60 * 60 * 1000 - 1000) })
        .where(eq(idempotencyKeys.workspaceId, client.workspaceId));
      const later = await createStore(client, { name: 'different now', idempotencyKey: 'request-1' });
      expect(later.id).not.toBe(first.id);
      expect(await countStoreRows(server.db, client.workspaceId)).toBe(2);
    });

    it('keeps keys apart per workspace', async () => {
      const alice = await server.newWorkspace();
      const bob = await server.newWorkspace();
      const aliceStore = await createStore(alice, { name: 'same', idempotencyKey: 'shared' });
      const bobStore = await createStore(bob, { name: 'same', idempotencyKey: 'shared' });
      expect(bobStore.id).not.toBe(aliceStore.id);
    });

    it('creates exactly one store when the same request races with itself', async () => {
      const client = await server.newWorkspace();
      const results = await Promise.all(
        Array.from({ length: 8 }, () => attemptCreate(client, { name: 'race', idempotencyKey: 'race-key' })),
      );
      const ids = new Set(results.map((result) => (result.__typename === 'CreateMemoryStoreSuccess' ? result.memoryStore.id : result.__typename)));
      expect([...ids]).toHaveLength(1);
      expect([...ids][0]).toMatch(/^memstore_/);
      expect(await countStoreRows(server.db, client.workspaceId)).toBe(1);
    });

    it('says NOT_FOUND when the store it created has since been deleted', async () => {
      const client = await server.newWorkspace();
      const store = await createStore(client, { name: 'gone', idempotencyKey: 'k' });
      const response = await client.send({ query: `mutation { deleteMemoryStore(input: { id: "${store.id}" }) { __typename } }` });
      expect(response.data.deleteMemoryStore.__typename).toBe('DeleteMemoryStoreSuccess');
      const result = await attemptCreate(client, { name: 'gone', idempotencyKey: 'k' });
      expect(result).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    });

    it('must be 1 to 255 characters of text', async () => {
      await expectRejected({ name: 'n', idempotencyKey: '' }, [['input', 'idempotencyKey']]);
      await expectRejected({ name: 'n', idempotencyKey: letters(256) }, [['input', 'idempotencyKey']]);
    });
  });
});

describe('idempotencyKey, what counts as the same input', () => {
  it('is a CONFLICT when only the metadata or only the description differs, and treats an omitted description as ""', async () => {
    const client = await server.newWorkspace();
    await createStore(client, { name: 'n', description: 'd', metadata: { a: '1' }, idempotencyKey: 'k' });
    expect((await attemptCreate(client, { name: 'n', description: 'd', metadata: { a: '2' }, idempotencyKey: 'k' })).__typename).toBe('ConflictError');
    expect((await attemptCreate(client, { name: 'n', description: 'other', metadata: { a: '1' }, idempotencyKey: 'k' })).__typename).toBe('ConflictError');
    const omitted = await createStore(client, { name: 'm', idempotencyKey: 'k2' });
    const empty = await attemptCreate(client, { name: 'm', description: '', idempotencyKey: 'k2' });
    expect(empty.__typename === 'CreateMemoryStoreSuccess' && empty.memoryStore.id).toBe(omitted.id);
  });

  it('still remembers a key a minute before its 24 hours are over', async () => {
    const client = await server.newWorkspace();
    const first = await createStore(client, { name: 'x', idempotencyKey: 'k' });
    await server.db
      .update(idempotencyKeys)
      .set({ createdAt: new Date(Date.now() - 24 * 60 * 60 * 1000 + 60_000) })
      .where(eq(idempotencyKeys.workspaceId, client.workspaceId));
    expect((await createStore(client, { name: 'x', idempotencyKey: 'k' })).id).toBe(first.id);
    expect((await attemptCreate(client, { name: 'y', idempotencyKey: 'k' })).__typename).toBe('ConflictError');
  });
});
