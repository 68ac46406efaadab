import { createHash } from 'node:crypto';
import { print } from 'graphql';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import { CONTENT_MAX_BYTES, MEMORY_METADATA_MAX_KEYS, METADATA_KEY_MAX_CHARACTERS, METADATA_VALUE_MAX_CHARACTERS, PATH_MAX_BYTES, PATH_MAX_SEGMENTS, PATH_SEGMENT_MAX_BYTES } from '../src/domain/limits.js';
import { graphql } from './generated/gql.js';
import type { CreateMemoryInput, UpdateMemoryInput } from './generated/graphql.js';
import { apiKeyIdOf, archiveStore, createMemory, createStore, deleteMemory, memoryRows, storeRow, updateMemory, versionRows } from './support/builders.js';
import { CreateMemory, DeleteMemory, GetMemory, MemoryAtPath, StoreVersions, UpdateMemory } from './support/documents.js';
import { countStatements, recordStatements } from '../src/db/statement-count.js';
import { invariantViolations } from './support/invariants.js';
import { askAgain } from './support/ask-again.js';
import { postgresUrl } from './support/database.js';
import { useTestServer, WRITE_PATHS, type TestClient } from './support/server.js';

const RedactVersion = graphql(`
  mutation RedactVersion($id: ID!) {
    redactMemoryVersion(input: { id: $id }) {
      __typename
      ... on RedactMemoryVersionSuccess {
        memoryVersion {
          ...VersionFields
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

const GetVersion = graphql(`
  query GetVersion($id: ID!) {
    memoryVersion(id: $id) {
      ...VersionFields
      memory {
        id
      }
    }
  }
`);

describe.each(WRITE_PATHS)('memory writes, $writes', ({ singleStatementWrites }) => {
  const server = useTestServer({ singleStatementWrites });

  const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
  const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

  /** A new workspace holding one empty store. */
  async function workspaceWithStore() {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    return { client, storeId: store.id };
  }

  /** The store's counters and how many memory and version rows it holds. */
  async function storeState(client: TestClient, storeId: string) {
    const store = await storeRow(server.db, client.workspaceId, storeId);
    return {
      entryCount: store?.entryCount,
      totalSize: store?.totalSize,
      memories: (await memoryRows(server.db, client.workspaceId, storeId)).length,
      versions: (await versionRows(server.db, client.workspaceId, storeId)).length,
    };
  }

  async function attemptCreate(client: TestClient, input: CreateMemoryInput) {
    const response = await client.execute(CreateMemory, { input });
    expect(response.errors).toBeUndefined();
    return response.data!.createMemory;
  }

  async function attemptUpdate(client: TestClient, input: UpdateMemoryInput) {
    const response = await client.execute(UpdateMemory, { input });
    expect(response.errors).toBeUndefined();
    return response.data!.updateMemory;
  }

  /** Asserts the result is an InvalidRequestError whose every issue names `field` (and there is one). */
  function expectInvalid(result: { __typename: string; code?: string; issues?: { field: string[] }[] }, field: string[], label?: string) {
    expect(result.__typename, label).toBe('InvalidRequestError');
    expect(result.code, label).toBe('INVALID_REQUEST');
    expect(result.issues?.length, label).toBeGreaterThan(0);
    for (const issue of result.issues ?? []) expect(issue.field, label).toEqual(field);
  }

  /** Asserts createMemory refuses the input with INVALID_REQUEST on `field` and stores nothing. */
  async function expectCreateRefused(client: TestClient, storeId: string, field: string[], input: Partial<CreateMemoryInput>) {
    const before = await storeState(client, storeId);
    const result = await attemptCreate(client, { memoryStoreId: storeId, path: 'valid.md', content: 'valid', ...input });
    expectInvalid(result, field, JSON.stringify(input));
    expect(await storeState(client, storeId)).toEqual(before);
  }

  /** Asserts createMemory accepts the input and stores it exactly as given. */
  async function expectCreated(client: TestClient, storeId: string, input: Partial<CreateMemoryInput>) {
    const result = await attemptCreate(client, { memoryStoreId: storeId, path: 'valid.md', content: 'valid', ...input });
    expect(result.__typename, JSON.stringify(input).slice(0, 200)).toBe('CreateMemorySuccess');
    if (result.__typename !== 'CreateMemorySuccess') throw new Error('not created');
    const rows = await memoryRows(server.db, client.workspaceId, storeId);
    const row = rows.find((candidate) => candidate.id === result.memory.id);
    expect(row).toMatchObject({ path: result.memory.path, content: result.memory.content, contentSizeBytes: result.memory.contentSizeBytes });
    return result.memory;
  }

  describe('createMemory', () => {
    it('enforces the seed\'s numbers: 1,024-byte paths of 58 segments of 255 bytes, 100 KiB of content, 16 metadata keys', () => {
      // The tests below cite these constants; this pins them to the seed so that changing one is not silent.
      expect([PATH_MAX_BYTES, PATH_MAX_SEGMENTS, PATH_SEGMENT_MAX_BYTES, CONTENT_MAX_BYTES]).toEqual([1024, 58, 255, 102_400]);
      expect([MEMORY_METADATA_MAX_KEYS, METADATA_KEY_MAX_CHARACTERS, METADATA_VALUE_MAX_CHARACTERS]).toEqual([16, 64, 512]);
    });

    it('returns the memory with its UTF-8 size and sha256, writes one CREATED version and raises the counters', async () => {
      const { client, storeId } = await workspaceWithStore();
      await createMemory(client, storeId, { path: 'existing.md', content: 'abc' });
      const result = await attemptCreate(client, { memoryStoreId: storeId, path: 'notes/ünïcode.md', content: 'é😀' });
      expect(result.__typename).toBe('CreateMemorySuccess');
      if (result.__typename !== 'CreateMemorySuccess') return;
      const memory = result.memory;
      expect(memory).toMatchObject({ memoryStoreId: storeId, path: 'notes/ünïcode.md', content: 'é😀', contentSizeBytes: 6, metadata: {} });
      expect(memory.contentSha256).toBe(createHash('sha256').update(Buffer.from('é😀', 'utf8')).digest('hex'));
      expect(memory.contentSha256).toMatch(/^[0-9a-f]{64}$/);
      expect(memory.id).toMatch(/^mem_[0-9a-z]{20}$/);
      expect(memory.updatedAt).toBe(memory.createdAt);

      const versions = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      expect(versions).toHaveLength(1);
      expect(versions[0]).toMatchObject({
        operation: 'created',
        sequence: 1,
        path: 'notes/ünïcode.md',
        content: 'é😀',
        contentSizeBytes: 6,
        contentSha256: memory.contentSha256,
        createdByApiKeyId: await apiKeyIdOf(server.db, client.workspaceId),
        createdBySessionId: null,
        redactedAt: null,
      });
      const { memoryVersion } = await client.data(GetVersion, { id: versions[0]!.id });
      expect(memoryVersion?.createdBy).toEqual({ __typename: 'ApiKeyActor', apiKeyId: await apiKeyIdOf(server.db, client.workspaceId) });
      expect(memoryVersion).toMatchObject({ operation: 'CREATED', memoryId: memory.id, createdAt: memory.createdAt, memory: { id: memory.id } });
      expect(await storeState(client, storeId)).toEqual({ entryCount: 2, totalSize: 3 + 6, memories: 2, versions: 2 });
    });

    it('allows empty content (0 bytes, the sha256 of nothing)', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await expectCreated(client, storeId, { content: '' });
      expect(memory).toMatchObject({ content: '', contentSizeBytes: 0, contentSha256: sha256('') });
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 0, memories: 1, versions: 1 });
    });

    it('is a CONFLICT when a live memory has the path, and writes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      const first = await createMemory(client, storeId, { path: 'taken.md', content: 'first' });
      const before = await storeState(client, storeId);
      expect(await attemptCreate(client, { memoryStoreId: storeId, path: 'taken.md', content: 'second' })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
      expect(await storeState(client, storeId)).toEqual(before);
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]).toMatchObject({ id: first.id, content: 'first' });
    });

    it('is a CONFLICT in an archived store, and writes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      await archiveStore(client, storeId);
      expect(await attemptCreate(client, { memoryStoreId: storeId, path: 'a.md', content: 'x' })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
      expect(await storeState(client, storeId)).toEqual({ entryCount: 0, totalSize: 0, memories: 0, versions: 0 });
    });

    it('is NOT_FOUND for unknown, malformed and other workspaces\' stores, and writes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      const other = await workspaceWithStore();
      for (const id of [newId('memoryStore'), 'memstore_nope', 'not-an-id', other.storeId]) {
        expect(await attemptCreate(client, { memoryStoreId: id, path: 'a.md', content: 'x' }), id).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
      }
      expect(await storeState(client, storeId)).toEqual({ entryCount: 0, totalSize: 0, memories: 0, versions: 0 });
      expect(await storeState(other.client, other.storeId)).toEqual({ entryCount: 0, totalSize: 0, memories: 0, versions: 0 });
    });
  });

  describe('path rules (the seed\'s path constraints)', () => {
    const path = ['input', 'path'];

    it('accepts the seed\'s valid examples and refuses its invalid ones', async () => {
      const { client, storeId } = await workspaceWithStore();
      for (const valid of ['notes/meeting-2026-08-14.md', 'config.yaml']) await expectCreated(client, storeId, { path: valid });
      for (const invalid of ['/notes/meeting.md', 'a/../b', 'notes//x.md']) await expectCreateRefused(client, storeId, path, { path: invalid });
    });

    it('must be relative: a leading "/" is refused', async () => {
      const { client, storeId } = await workspaceWithStore();
      for (const absolute of ['/a.md', '/', '//a']) await expectCreateRefused(client, storeId, path, { path: absolute });
    });

    it(`accepts ${PATH_MAX_BYTES} bytes of UTF-8 and refuses ${PATH_MAX_BYTES + 1}, however few the characters`, async () => {
      const { client, storeId } = await workspaceWithStore();
      // Four 252-byte segments of 4-byte characters, then 12 bytes more: 1,024 bytes in 259 characters.
      const longest = [...Array.from({ length: 4 }, () => '😀'.repeat(63)), '😀'.repeat(3)].join('/');
      expect(utf8Bytes(longest)).toBe(PATH_MAX_BYTES);
      expect([...longest].length).toBeLessThan(PATH_MAX_BYTES / 3);
      await expectCreated(client, storeId, { path: longest });
      await expectCreateRefused(client, storeId, path, { path: `${longest}a` });
    });

    it(`accepts ${PATH_MAX_SEGMENTS} segments and refuses ${PATH_MAX_SEGMENTS + 1}`, async () => {
      const { client, storeId } = await workspaceWithStore();
      const segments = (count: number) => Array.from({ length: count }, (_, index) => `s${index}`).join('/');
      await expectCreated(client, storeId, { path: segments(PATH_MAX_SEGMENTS) });
      await expectCreateRefused(client, storeId, path, { path: segments(PATH_MAX_SEGMENTS + 1) });
    });

    it(`accepts segments of ${PATH_SEGMENT_MAX_BYTES} bytes of UTF-8 and refuses ${PATH_SEGMENT_MAX_BYTES + 1}, at the same character count`, async () => {
      const { client, storeId } = await workspaceWithStore();
      const longest = `${'é'.repeat(127)}a`;
      const tooLong = 'é'.repeat(128);
      expect([utf8Bytes(longest), utf8Bytes(tooLong)]).toEqual([PATH_SEGMENT_MAX_BYTES, PATH_SEGMENT_MAX_BYTES + 1]);
      expect([...longest].length).toBe([...tooLong].length);
      await expectCreated(client, storeId, { path: `dir/${longest}/x.md` });
      await expectCreateRefused(client, storeId, path, { path: `dir/${tooLong}/x.md` });
    });

    it('refuses empty segments, including the empty path and a trailing "/"', async () => {
      const { client, storeId } = await workspaceWithStore();
      for (const empty of ['a//b', 'a/', '', 'a/b//']) await expectCreateRefused(client, storeId, path, { path: empty });
    });

    it('refuses "." and ".." segments but not names that merely contain dots', async () => {
      const { client, storeId } = await workspaceWithStore();
      for (const dotted of ['.', '..', './a', 'a/./b', 'a/..', '../a']) await expectCreateRefused(client, storeId, path, { path: dotted });
      for (const fine of ['.hidden', 'a/...', 'a/..b', 'v1.2/x.md']) await expectCreated(client, storeId, { path: fine });
    });

    it('refuses segments with leading or trailing whitespace', async () => {
      const { client, storeId } = await workspaceWithStore();
      for (const padded of [' a/b', 'a /b', 'a/b\t', 'a/ b', 'a/b\n']) await expectCreateRefused(client, storeId, path, { path: padded });
      await expectCreated(client, storeId, { path: 'inner space/is fine.md' });
    });

    it('refuses "\\" and NUL', async () => {
      const { client, storeId } = await workspaceWithStore();
      for (const forbidden of ['a\\b', 'windows\\path.md', 'a\u0000b', '\u0000']) await expectCreateRefused(client, storeId, path, { path: forbidden });
    });

    it('is case-sensitive: A.md and a.md are two memories', async () => {
      const { client, storeId } = await workspaceWithStore();
      const upper = await expectCreated(client, storeId, { path: 'A.md', content: 'upper' });
      const lower = await expectCreated(client, storeId, { path: 'a.md', content: 'lower' });
      expect(upper.id).not.toBe(lower.id);
      expect((await memoryRows(server.db, client.workspaceId, storeId)).map((row) => [row.path, row.content])).toEqual([['A.md', 'upper'], ['a.md', 'lower']]);
      expect((await client.data(MemoryAtPath, { storeId, path: 'A.md' })).memoryStore?.memory?.id).toBe(upper.id);
    });
  });

  describe('content rules (the seed\'s content constraints)', () => {
    const content = ['input', 'content'];

    it(`accepts ${CONTENT_MAX_BYTES} bytes of UTF-8 and refuses ${CONTENT_MAX_BYTES + 1}, counting bytes, not characters`, async () => {
      const { client, storeId } = await workspaceWithStore();
      const ascii = await expectCreated(client, storeId, { path: 'ascii.md', content: 'a'.repeat(CONTENT_MAX_BYTES) });
      const twoByte = await expectCreated(client, storeId, { path: 'two.md', content: 'é'.repeat(CONTENT_MAX_BYTES / 2) });
      const fourByte = await expectCreated(client, storeId, { path: 'four.md', content: '😀'.repeat(CONTENT_MAX_BYTES / 4) });
      for (const memory of [ascii, twoByte, fourByte]) expect(memory.contentSizeBytes).toBe(CONTENT_MAX_BYTES);
      expect(twoByte.contentSha256).toBe(sha256('é'.repeat(CONTENT_MAX_BYTES / 2)));
      await expectCreateRefused(client, storeId, content, { path: 'big.md', content: 'a'.repeat(CONTENT_MAX_BYTES + 1) });
      await expectCreateRefused(client, storeId, content, { path: 'big.md', content: `${'é'.repeat(CONTENT_MAX_BYTES / 2)}a` });
      await expectCreateRefused(client, storeId, content, { path: 'big.md', content: `${'😀'.repeat(CONTENT_MAX_BYTES / 4)}a` });
      expect(await storeState(client, storeId)).toEqual({ entryCount: 3, totalSize: 3 * CONTENT_MAX_BYTES, memories: 3, versions: 3 });
    });

    it('allows \\n, \\r and \\t and refuses every other control character of U+0000–U+001F and U+007F', async () => {
      const { client, storeId } = await workspaceWithStore();
      await expectCreated(client, storeId, { path: 'text.md', content: 'line one\r\nline two\n\tindented' });
      const allowed = new Set([0x09, 0x0a, 0x0d]);
      const refused = [...Array.from({ length: 0x20 }, (_, code) => code), 0x7f].filter((code) => !allowed.has(code));
      expect(refused).toHaveLength(30);
      for (const code of refused) await expectCreateRefused(client, storeId, content, { path: 'control.md', content: `before${String.fromCharCode(code)}after` });
      // The C1 range and other non-ASCII text are not control characters of the seed's rule.
      await expectCreated(client, storeId, { path: 'c1.md', content: 'euro \u0080 nbsp \u00a0 ok' });
    });

    it('refuses a lone surrogate (not valid Unicode) with INVALID_REQUEST', async () => {
      const { client, storeId } = await workspaceWithStore();
      // The raw JSON escape \ud800 with no partner: what JSON.parse makes of it cannot be UTF-8.
      const body = `{"query":${JSON.stringify(print(CreateMemory))},"variables":{"input":{"memoryStoreId":"${storeId}","path":"lone.md","content":"a\\ud800b"}}}`;
      expect(body).toContain('"a\\ud800b"');
      const response = await client.send(body);
      expect(response.errors).toBeUndefined();
      expectInvalid(response.data.createMemory, content);
      expect(await storeState(client, storeId)).toEqual({ entryCount: 0, totalSize: 0, memories: 0, versions: 0 });
    });
  });

  describe('memory metadata rules (the seed\'s memory metadata constraints)', () => {
    const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, index) => [`key${index}`, 'v']));

    it(`stores omitted metadata as {}, accepts ${MEMORY_METADATA_MAX_KEYS} keys and refuses ${MEMORY_METADATA_MAX_KEYS + 1}`, async () => {
      const { client, storeId } = await workspaceWithStore();
      expect((await expectCreated(client, storeId, { path: 'none.md' })).metadata).toEqual({});
      const full = await expectCreated(client, storeId, { path: 'full.md', metadata: keys(MEMORY_METADATA_MAX_KEYS) });
      expect(full.metadata).toEqual(keys(MEMORY_METADATA_MAX_KEYS));
      expect((await memoryRows(server.db, client.workspaceId, storeId)).find((row) => row.path === 'full.md')?.metadata).toEqual(keys(MEMORY_METADATA_MAX_KEYS));
      await expectCreateRefused(client, storeId, ['input', 'metadata'], { path: 'over.md', metadata: keys(MEMORY_METADATA_MAX_KEYS + 1) });
    });

    it(`accepts keys of 1 to ${METADATA_KEY_MAX_CHARACTERS} characters and refuses 0 and ${METADATA_KEY_MAX_CHARACTERS + 1}`, async () => {
      const { client, storeId } = await workspaceWithStore();
      await expectCreated(client, storeId, { metadata: { k: 'v', ['k'.repeat(METADATA_KEY_MAX_CHARACTERS)]: 'v' } });
      await expectCreateRefused(client, storeId, ['input', 'metadata', ''], { path: 'b.md', metadata: { '': 'v' } });
      const long = 'k'.repeat(METADATA_KEY_MAX_CHARACTERS + 1);
      await expectCreateRefused(client, storeId, ['input', 'metadata', long], { path: 'b.md', metadata: { [long]: 'v' } });
    });

    it('requires string values', async () => {
      const { client, storeId } = await workspaceWithStore();
      for (const value of [1, null, { nested: 'x' }, true, ['x']]) {
        await expectCreateRefused(client, storeId, ['input', 'metadata', 'team'], { metadata: { team: value } });
      }
    });

    it(`accepts values of up to ${METADATA_VALUE_MAX_CHARACTERS} characters and refuses ${METADATA_VALUE_MAX_CHARACTERS + 1}`, async () => {
      const { client, storeId } = await workspaceWithStore();
      await expectCreated(client, storeId, { metadata: { team: 'v'.repeat(METADATA_VALUE_MAX_CHARACTERS), empty: '' } });
      await expectCreateRefused(client, storeId, ['input', 'metadata', 'team'], { path: 'b.md', metadata: { team: 'v'.repeat(METADATA_VALUE_MAX_CHARACTERS + 1) } });
    });

    it('treats created_by as an ordinary key: stored and returned unchanged, nothing injected', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await expectCreated(client, storeId, { metadata: { created_by: 'alice' } });
      expect(memory.metadata).toEqual({ created_by: 'alice' });
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]?.metadata).toEqual({ created_by: 'alice' });
    });

    it('takes metadata written inline in the document as well as in variables (create and update)', async () => {
      // Found by test/fuzz.test.ts: an inline object literal reached the database without a
      // prototype and failed there, a masked internal error.
      const { client, storeId } = await workspaceWithStore();
      const created = await client.send({
        query: `mutation { createMemory(input: { memoryStoreId: "${storeId}", path: "inline.md", content: "x", metadata: { team: "a", __proto__: "b" } }) { __typename ... on CreateMemorySuccess { memory { id metadata } } } }`,
      });
      expect(created.errors).toBeUndefined();
      expect(created.data.createMemory).toMatchObject({ __typename: 'CreateMemorySuccess', memory: { metadata: { team: 'a', ['__proto__']: 'b' } } });
      expect(Object.keys(created.data.createMemory.memory.metadata)).toEqual(['team', '__proto__']);
      const id = created.data.createMemory.memory.id as string;
      const updated = await client.send({ query: `mutation { updateMemory(input: { id: "${id}", metadata: { team: "c" } }) { __typename ... on UpdateMemorySuccess { memory { metadata } } } }` });
      expect(updated.errors).toBeUndefined();
      expect(updated.data.updateMemory).toEqual({ __typename: 'UpdateMemorySuccess', memory: { metadata: { team: 'c' } } });
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]?.metadata).toEqual({ team: 'c' });
    });
  });

  describe('updateMemory', () => {
    it('writes an UPDATED version with the new state and moves totalSize by the size difference', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { path: 'doc.md', content: 'short', metadata: { a: '1' } });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const updated = await updateMemory(client, { id: memory.id, content: 'much longer é' });
      expect(updated).toMatchObject({ id: memory.id, path: 'doc.md', content: 'much longer é', contentSizeBytes: 14, contentSha256: sha256('much longer é'), metadata: { a: '1' } });
      expect(updated.createdAt).toBe(memory.createdAt);
      expect(Date.parse(updated.updatedAt)).toBeGreaterThan(Date.parse(memory.updatedAt));
      const versions = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      expect(versions.map((version) => version.operation)).toEqual(['created', 'updated']);
      expect(versions[1]).toMatchObject({ sequence: 2, path: 'doc.md', content: 'much longer é', contentSizeBytes: 14, contentSha256: updated.contentSha256 });
      expect(versions[1]?.createdAt.toISOString()).toBe(updated.updatedAt);
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 14, memories: 1, versions: 2 });
      await updateMemory(client, { id: memory.id, content: 'x' });
      expect((await storeRow(server.db, client.workspaceId, storeId))?.totalSize).toBe(1);
    });

    it('replaces the whole metadata map and writes a version', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { metadata: { a: '1', b: '2' } });
      expect((await updateMemory(client, { id: memory.id, metadata: { c: '3' } })).metadata).toEqual({ c: '3' });
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]?.metadata).toEqual({ c: '3' });
      expect((await updateMemory(client, { id: memory.id, metadata: {} })).metadata).toEqual({});
      expect((await versionRows(server.db, client.workspaceId, storeId, memory.id)).map((version) => version.operation)).toEqual(['created', 'updated', 'updated']);
    });

    it('renames and keeps the id: the version records the new path and only the new path finds it', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { path: 'old/name.md', content: 'kept' });
      const renamed = await updateMemory(client, { id: memory.id, path: 'new/name.md' });
      expect(renamed).toMatchObject({ id: memory.id, path: 'new/name.md', content: 'kept', contentSha256: memory.contentSha256 });
      expect((await versionRows(server.db, client.workspaceId, storeId, memory.id))[1]).toMatchObject({ operation: 'updated', path: 'new/name.md', content: 'kept' });
      expect((await client.data(MemoryAtPath, { storeId, path: 'new/name.md' })).memoryStore?.memory).toEqual({ id: memory.id, path: 'new/name.md' });
      expect((await client.data(MemoryAtPath, { storeId, path: 'old/name.md' })).memoryStore?.memory).toBeNull();
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 4, memories: 1, versions: 2 });
    });

    it('is a CONFLICT to rename onto another live memory\'s path, and changes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      const moving = await createMemory(client, storeId, { path: 'a.md', content: 'a' });
      await createMemory(client, storeId, { path: 'b.md', content: 'b' });
      const before = await memoryRows(server.db, client.workspaceId, storeId);
      const result = await attemptUpdate(client, { id: moving.id, path: 'b.md', content: 'changed' });
      expect(result).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
      expect(await memoryRows(server.db, client.workspaceId, storeId)).toEqual(before);
      expect(await storeState(client, storeId)).toEqual({ entryCount: 2, totalSize: 2, memories: 2, versions: 2 });
    });

    it('fails with PRECONDITION_FAILED on a stale expectedContentSha256, naming the stored sha, and writes no version', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { content: 'v1' });
      await updateMemory(client, { id: memory.id, content: 'v2', expectedContentSha256: sha256('v1') });
      const result = await attemptUpdate(client, { id: memory.id, content: 'v3', expectedContentSha256: sha256('v1') });
      expect(result).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED', currentContentSha256: sha256('v2') });
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]).toMatchObject({ content: 'v2', contentSha256: sha256('v2') });
      expect((await versionRows(server.db, client.workspaceId, storeId)).map((version) => version.content)).toEqual(['v1', 'v2']);
    });

    it('succeeds without a new version when a stale sha meets a request the memory already satisfies', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { content: 'v1' });
      await updateMemory(client, { id: memory.id, content: 'v2' });
      // A retry of the same write after a lost response: its precondition is stale, its result already stored.
      const retried = await attemptUpdate(client, { id: memory.id, content: 'v2', expectedContentSha256: sha256('v1') });
      expect(retried.__typename).toBe('UpdateMemorySuccess');
      expect(retried.__typename === 'UpdateMemorySuccess' && retried.memory.content).toBe('v2');
      expect(await versionRows(server.db, client.workspaceId, storeId)).toHaveLength(2);
    });

    it('succeeds without a version and keeps updatedAt when nothing changes', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { path: 'same.md', content: 'same', metadata: { a: '1', b: '2' } });
      await new Promise((resolve) => setTimeout(resolve, 5));
      const result = await updateMemory(client, { id: memory.id, path: 'same.md', content: 'same', metadata: { b: '2', a: '1' }, expectedContentSha256: memory.contentSha256 });
      expect(result).toEqual(memory);
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]).toMatchObject({ versionSequence: 1, updatedAt: new Date(memory.updatedAt) });
      expect(await versionRows(server.db, client.workspaceId, storeId)).toHaveLength(1);
    });

    describe('the version a write made, in its answer', () => {
      const versionFields = `id memoryStoreId memoryId path number contentSizeBytes contentSha256 operation redacted redactedAt createdAt
        createdBy { __typename ... on ApiKeyActor { apiKeyId } } redactedBy { __typename } restoredFrom { id }`;
      const latestOf = (id: string) => `query { memory(id: "${id}") { latestVersion { ${versionFields} } } }`;
      const create = (storeId: string, path: string, selection: string) =>
        `mutation { createMemory(input: { memoryStoreId: "${storeId}", path: "${path}", content: "first" }) { ... on CreateMemorySuccess { memory { id ${selection} } } } }`;
      const update = (name: string, id: string, changes: string, selection: string) =>
        `${name}: updateMemory(input: { id: "${id}", ${changes} }) { ... on UpdateMemorySuccess { memory { id ${selection} } } }`;

      it('names as latestVersion the version the write made, field by field what a later read returns, without a statement to read it', async () => {
        const { client, storeId } = await workspaceWithStore();
        const plain = await countStatements(() => client.send({ query: create(storeId, 'plain.md', '') }));
        const withVersion = await countStatements(() => client.send({ query: create(storeId, 'answer.md', `latestVersion { ${versionFields} }`) }));
        expect(withVersion.statements).toBe(plain.statements);
        const created = withVersion.result.data.createMemory.memory;
        expect(created.latestVersion).toMatchObject({ number: 1, operation: 'CREATED', path: 'answer.md', memoryId: created.id });
        expect(created.latestVersion).toEqual((await client.send({ query: latestOf(created.id) })).data.memory.latestVersion);

        // New content (the one-statement write), then a rename with new metadata (the transaction):
        // each written once without latestVersion and undone, then again with it, so that both send the same statements.
        const steps = [
          { changes: 'content: "second"', undo: 'content: "first"', path: 'answer.md' },
          { changes: 'path: "renamed.md", metadata: { k: "v" }', undo: 'path: "answer.md", metadata: {}', path: 'renamed.md' },
        ];
        let number = 1;
        for (const { changes, undo, path } of steps) {
          const plainUpdate = await recordStatements(() => client.send({ query: `mutation { ${update('u', created.id, changes, '')} }` }));
          expect((await client.send({ query: `mutation { ${update('u', created.id, undo, '')} }` })).errors).toBeUndefined();
          const answered = await recordStatements(() => client.send({ query: `mutation { ${update('u', created.id, changes, `latestVersion { ${versionFields} }`)} }` }));
          number += 3;
          expect(answered.statements.map((statement) => statement.sql)).toEqual(plainUpdate.statements.map((statement) => statement.sql));
          const version = answered.result.data.u.memory.latestVersion;
          expect(version).toMatchObject({ number, operation: 'UPDATED', path, memoryId: created.id });
          expect(version).toEqual((await client.send({ query: latestOf(created.id) })).data.memory.latestVersion);
        }
      });

      it('names each write\'s own version when one request writes the same memory twice, and the newest when a write changes nothing', async () => {
        const { client, storeId } = await workspaceWithStore();
        const memory = await createMemory(client, storeId, { path: 'twice.md', content: 'zero' });
        const selection = 'content latestVersion { number operation contentSha256 }';
        const twice = await client.send({
          query: `mutation { ${update('first', memory.id, 'content: "one"', selection)} ${update('second', memory.id, 'content: "two"', selection)} ${update('same', memory.id, 'content: "two"', selection)} }`,
        });
        expect(twice.errors).toBeUndefined();
        expect(twice.data.first.memory).toEqual({ id: memory.id, content: 'one', latestVersion: { number: 2, operation: 'UPDATED', contentSha256: sha256('one') } });
        expect(twice.data.second.memory).toEqual({ id: memory.id, content: 'two', latestVersion: { number: 3, operation: 'UPDATED', contentSha256: sha256('two') } });
        expect(twice.data.same.memory).toEqual({ id: memory.id, content: 'two', latestVersion: { number: 3, operation: 'UPDATED', contentSha256: sha256('two') } });
        expect(await versionRows(server.db, client.workspaceId, storeId)).toHaveLength(3);
      });
    });

    it('answers each of several writes in one request with what the writes before it left: versions, store totals, other memories', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { path: 'serial.md', content: 'zero' });
      const selection = 'versions(first: 10) { edges { node { number } } } memoryStore { totalSize entryCount }';
      const write = (name: string, changes: string) =>
        `${name}: updateMemory(input: { id: "${memory.id}", ${changes} }) { ... on UpdateMemorySuccess { memory { ${selection} } } }`;
      const create = `third: createMemory(input: { memoryStoreId: "${storeId}", path: "other.md", content: "abc" }) { ... on CreateMemorySuccess { memory { memoryStore { totalSize entryCount } } } }`;
      const answer = await client.send({ query: `mutation { ${write('first', 'content: "one"')} ${write('second', 'content: "two!"')} ${create} }` });
      expect(answer.errors).toBeUndefined();
      const numbers = (name: string) => answer.data[name].memory.versions.edges.map((edge: { node: { number: number } }) => edge.node.number);
      expect(numbers('first')).toEqual([2, 1]);
      expect(numbers('second')).toEqual([3, 2, 1]);
      expect(answer.data.first.memory.memoryStore).toEqual({ totalSize: 3, entryCount: 1 });
      expect(answer.data.second.memory.memoryStore).toEqual({ totalSize: 4, entryCount: 1 });
      expect(answer.data.third.memory.memoryStore).toEqual({ totalSize: 7, entryCount: 2 });
    });

    it.skipIf(postgresUrl === undefined)("answers a write with what it left while an earlier field's answer, cut short by an error, still reads", async () => {
      const { client, storeId } = await workspaceWithStore();
      const first = await createMemory(client, storeId, { path: 'first.md', content: 'one' });
      const held = await createMemory(client, storeId, { path: 'held.md', content: 'before' });
      // a's answer: the version's memory (nullable) ends at an invalid page size, while the
      // store's memory at held.md, beside it, is still being read.
      const a = `a: updateMemory(input: { id: "${first.id}", content: "two" }) { ... on UpdateMemorySuccess { memory { latestVersion { memory {
        memoryStore { memory(path: "held.md") { content } } versions(first: -1) { totalCount } } } } } }`;
      const b = `b: updateMemory(input: { id: "${held.id}", content: "after" }) { ... on UpdateMemorySuccess { memory { memoryStore { memory(path: "held.md") { content } } } } }`;
      // A session of the test holds held.md's row: b's write waits for it while a's answer reads on.
      const session = postgres(server.database.url!, { max: 1, onnotice: () => {} });
      const lock = await session.reserve();
      try {
        await lock`begin`;
        await lock`select 1 from memories where id = ${held.id} for update`;
        const answering = client.send({ query: `mutation { ${a} ${b} }` });
        const waiting = async () => Number((await lock`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)[0]!.n);
        expect(await askAgain(waiting, (count) => count === 0)).toBe(1);
        // What a's answer still had to read, it has read by now.
        await new Promise((resolve) => setTimeout(resolve, 300));
        await lock`commit`;
        const answer = await answering;
        expect(answer.errors?.map((error: { extensions?: { code?: string } }) => error.extensions?.code)).toEqual(['INVALID_REQUEST']);
        expect(answer.data.a.memory.latestVersion.memory).toBeNull();
        expect(answer.data.b.memory.memoryStore.memory.content).toBe('after');
      } finally {
        lock.release();
        await session.end();
      }
    });

    it('needs at least one of content, metadata and path', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId);
      expectInvalid(await attemptUpdate(client, { id: memory.id }), ['input']);
      expectInvalid(await attemptUpdate(client, { id: memory.id, expectedContentSha256: memory.contentSha256 }), ['input']);
      expect(await versionRows(server.db, client.workspaceId, storeId)).toHaveLength(1);
    });

    it('refuses an explicit null for each field and changes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { metadata: { a: '1' } });
      for (const field of ['content', 'metadata', 'path'] as const) {
        expectInvalid(await attemptUpdate(client, { id: memory.id, [field]: null }), ['input', field], field);
      }
      expectInvalid(await attemptUpdate(client, { id: memory.id, content: 'x', expectedContentSha256: null }), ['input', 'expectedContentSha256']);
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]).toMatchObject({ content: memory.content, path: memory.path, metadata: { a: '1' } });
      expect(await versionRows(server.db, client.workspaceId, storeId)).toHaveLength(1);
    });

    it('refuses a malformed expectedContentSha256', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId);
      for (const sha of ['', 'abc', 'z'.repeat(64), `${memory.contentSha256}0`]) {
        expectInvalid(await attemptUpdate(client, { id: memory.id, content: 'new', expectedContentSha256: sha }), ['input', 'expectedContentSha256'], sha);
      }
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]?.content).toBe(memory.content);
    });

    it('applies the create rules to new values', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId);
      expectInvalid(await attemptUpdate(client, { id: memory.id, path: 'a//b' }), ['input', 'path']);
      expectInvalid(await attemptUpdate(client, { id: memory.id, content: 'bell\u0007' }), ['input', 'content']);
      expectInvalid(await attemptUpdate(client, { id: memory.id, content: 'a'.repeat(CONTENT_MAX_BYTES + 1) }), ['input', 'content']);
      expectInvalid(await attemptUpdate(client, { id: memory.id, metadata: { n: 1 } }), ['input', 'metadata', 'n']);
      expect(await versionRows(server.db, client.workspaceId, storeId)).toHaveLength(1);
    });

    it('is a CONFLICT in an archived store, and changes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { content: 'frozen' });
      await archiveStore(client, storeId);
      expect(await attemptUpdate(client, { id: memory.id, content: 'thawed' })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]?.content).toBe('frozen');
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 6, memories: 1, versions: 1 });
    });

    it('is NOT_FOUND for unknown, malformed and other workspaces\' memories', async () => {
      const { client } = await workspaceWithStore();
      const other = await workspaceWithStore();
      const foreign = await createMemory(other.client, other.storeId, { content: 'theirs' });
      for (const id of [newId('memory'), 'mem_nope', foreign.id]) {
        expect(await attemptUpdate(client, { id, content: 'mine' }), id).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
      }
      expect((await memoryRows(server.db, other.client.workspaceId, other.storeId))[0]?.content).toBe('theirs');
      expect(await versionRows(server.db, other.client.workspaceId, other.storeId)).toHaveLength(1);
    });
  });

  describe('deleteMemory', () => {
    async function attemptDelete(client: TestClient, input: { id: string; expectedContentSha256?: string }) {
      return (await client.data(DeleteMemory, { input })).deleteMemory;
    }

    it('returns a DELETED version holding the last state, removes the memory and lowers the counters', async () => {
      const { client, storeId } = await workspaceWithStore();
      await createMemory(client, storeId, { content: 'stays' });
      const memory = await createMemory(client, storeId, { path: 'before.md', content: 'first' });
      await updateMemory(client, { id: memory.id, path: 'last/path.md', content: 'last é' });
      const result = await attemptDelete(client, { id: memory.id, expectedContentSha256: sha256('last é') });
      expect(result.__typename).toBe('DeleteMemorySuccess');
      if (result.__typename !== 'DeleteMemorySuccess') return;
      expect(result.deletedMemoryId).toBe(memory.id);
      expect(result.version).toMatchObject({
        memoryId: memory.id,
        memoryStoreId: storeId,
        operation: 'DELETED',
        path: 'last/path.md',
        content: 'last é',
        contentSizeBytes: 7,
        contentSha256: sha256('last é'),
        redacted: false,
        createdBy: { __typename: 'ApiKeyActor', apiKeyId: await apiKeyIdOf(server.db, client.workspaceId) },
      });
      expect((await client.data(GetMemory, { id: memory.id })).memory).toBeNull();
      expect((await memoryRows(server.db, client.workspaceId, storeId)).map((row) => row.content)).toEqual(['stays']);
      const versions = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      expect(versions.map((version) => [version.operation, version.sequence])).toEqual([['created', 1], ['updated', 2], ['deleted', 3]]);
      expect(versions[2]).toMatchObject({ id: result.version.id, path: 'last/path.md', content: 'last é' });
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 5, memories: 1, versions: 4 });
    });

    it('frees the path: a memory created there again gets a new id', async () => {
      const { client, storeId } = await workspaceWithStore();
      const first = await createMemory(client, storeId, { path: 'reused.md' });
      await deleteMemory(client, first.id);
      const second = await createMemory(client, storeId, { path: 'reused.md', content: 'again' });
      expect(second.id).not.toBe(first.id);
      expect((await client.data(MemoryAtPath, { storeId, path: 'reused.md' })).memoryStore?.memory?.id).toBe(second.id);
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 5, memories: 1, versions: 3 });
    });

    it('fails with PRECONDITION_FAILED on a stale expectedContentSha256 and deletes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { content: 'current' });
      const result = await attemptDelete(client, { id: memory.id, expectedContentSha256: sha256('something else') });
      expect(result).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED', currentContentSha256: sha256('current') });
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 7, memories: 1, versions: 1 });
    });

    it('is a CONFLICT in an archived store, and deletes nothing', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { content: 'kept' });
      await archiveStore(client, storeId);
      expect(await attemptDelete(client, { id: memory.id })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
      expect(await storeState(client, storeId)).toEqual({ entryCount: 1, totalSize: 4, memories: 1, versions: 1 });
    });

    it('is NOT_FOUND the second time and for other workspaces\' memories', async () => {
      const { client, storeId } = await workspaceWithStore();
      const other = await workspaceWithStore();
      const memory = await createMemory(client, storeId);
      const foreign = await createMemory(other.client, other.storeId);
      await deleteMemory(client, memory.id);
      expect(await attemptDelete(client, { id: memory.id })).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
      expect(await attemptDelete(client, { id: foreign.id })).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
      expect(await storeState(other.client, other.storeId)).toMatchObject({ entryCount: 1, memories: 1, versions: 1 });
      expect(await versionRows(server.db, client.workspaceId, storeId)).toHaveLength(2);
    });

    it('keeps the versions: memoryVersion still answers with memory null, and MemoryStore.versions lists them', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { content: 'history' });
      const { version } = await deleteMemory(client, memory.id);
      const [created] = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      for (const id of [created!.id, version.id]) {
        const { memoryVersion } = await client.data(GetVersion, { id });
        expect(memoryVersion).toMatchObject({ id, memoryId: memory.id, content: 'history', memory: null });
      }
      const listed = (await client.data(StoreVersions, { storeId, memoryId: memory.id })).memoryStore?.versions;
      expect(listed?.totalCount).toBe(2);
      expect(listed?.edges.map((edge) => [edge.node.id, edge.node.operation])).toEqual([[version.id, 'DELETED'], [created!.id, 'CREATED']]);
    });
  });

  describe('redactMemoryVersion', () => {
    async function redact(client: TestClient, id: string) {
      return (await client.data(RedactVersion, { id })).redactMemoryVersion;
    }

    it('removes the content for good and keeps path, size, sha and operation; the live memory is untouched', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { path: 'secret.md', content: 'password=hunter2' });
      const [version] = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      const { memory: _liveMemory, ...before } = (await client.data(GetVersion, { id: version!.id })).memoryVersion!;
      const result = await redact(client, version!.id);
      expect(result.__typename).toBe('RedactMemoryVersionSuccess');
      if (result.__typename !== 'RedactMemoryVersionSuccess') return;
      const apiKeyId = await apiKeyIdOf(server.db, client.workspaceId);
      expect(result.memoryVersion).toEqual({
        ...before,
        content: null,
        redacted: true,
        redactedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        redactedBy: { __typename: 'ApiKeyActor', apiKeyId },
      });
      expect(result.memoryVersion).toMatchObject({ path: 'secret.md', contentSizeBytes: 16, contentSha256: sha256('password=hunter2'), operation: 'CREATED' });
      expect((await client.data(GetVersion, { id: version!.id })).memoryVersion).toMatchObject({ content: null, redacted: true });
      const [row] = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      expect(row).toMatchObject({ content: null, redactedByApiKeyId: apiKeyId, contentSizeBytes: 16, path: 'secret.md' });
      expect(row?.redactedAt?.toISOString()).toBe(result.memoryVersion.redactedAt);
      expect((await client.data(GetMemory, { id: memory.id })).memory).toEqual(memory);
      expect((await memoryRows(server.db, client.workspaceId, storeId))[0]?.content).toBe('password=hunter2');
    });

    it('is a CONFLICT the second time, which keeps the first redaction', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId);
      const [version] = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      const first = await redact(client, version!.id);
      expect(await redact(client, version!.id)).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
      const [row] = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      expect(first.__typename === 'RedactMemoryVersionSuccess' && row?.redactedAt?.toISOString()).toBe(
        first.__typename === 'RedactMemoryVersionSuccess' && first.memoryVersion.redactedAt,
      );
    });

    it('is allowed on an archived store', async () => {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId);
      await archiveStore(client, storeId);
      const [version] = await versionRows(server.db, client.workspaceId, storeId, memory.id);
      expect(await redact(client, version!.id)).toMatchObject({ __typename: 'RedactMemoryVersionSuccess', memoryVersion: { content: null, redacted: true } });
      expect((await versionRows(server.db, client.workspaceId, storeId, memory.id))[0]?.content).toBeNull();
    });

    it('is NOT_FOUND for unknown, malformed and other workspaces\' versions', async () => {
      const { client } = await workspaceWithStore();
      const other = await workspaceWithStore();
      const foreign = await createMemory(other.client, other.storeId, { content: 'theirs' });
      const [foreignVersion] = await versionRows(server.db, other.client.workspaceId, other.storeId, foreign.id);
      for (const id of [newId('memoryVersion'), 'memver_nope', foreign.id, foreignVersion!.id]) {
        expect(await redact(client, id), id).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
      }
      expect((await versionRows(server.db, other.client.workspaceId, other.storeId))[0]).toMatchObject({ content: 'theirs', redactedAt: null });
    });
  });

  describe('the common writes in one statement', () => {
    it('a new memory and a content update each cost one statement after authentication (a transaction without that path), and leave the same rows', async () => {
      // Authentication, then the write: one statement, or a transaction of several.
      const expectStatements = (count: number) => (singleStatementWrites ? expect(count).toBe(2) : expect(count).toBeGreaterThan(2));
      const client = await server.newWorkspace();
      const store = await createStore(client);
      const created = await countStatements(() => client.execute(CreateMemory, { input: { memoryStoreId: store.id, path: 'one/statement.md', content: 'first' } }));
      expectStatements(created.statements);
      const memory = (created.result.data!.createMemory as { memory: { id: string; contentSha256: string } }).memory;
      const updated = await countStatements(() =>
        client.execute(UpdateMemory, { input: { id: memory.id, content: 'second ✓', expectedContentSha256: memory.contentSha256 } }),
      );
      expectStatements(updated.statements);
      expect(updated.result.data!.updateMemory).toMatchObject({ __typename: 'UpdateMemorySuccess', memory: { content: 'second ✓', contentSizeBytes: 10 } });
      expect((await versionRows(server.db, client.workspaceId, store.id, memory.id)).map((version) => [version.operation, version.sequence, version.contentSizeBytes])).toEqual([
        ['created', 1, 5],
        ['updated', 2, 10],
      ]);
      expect(await storeRow(server.db, client.workspaceId, store.id)).toMatchObject({ entryCount: 1, totalSize: 10 });
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    });

    it('falls back to the transaction, with its exact answers, when the one statement writes nothing', async () => {
      const client = await server.newWorkspace();
      const store = await createStore(client);
      const memory = await createMemory(client, store.id, { path: 'a.md', content: 'same' });
      // A taken path, a stale sha, unchanged content and an archived store.
      const conflict = await client.execute(CreateMemory, { input: { memoryStoreId: store.id, path: 'a.md', content: 'x' } });
      expect(conflict.data!.createMemory).toMatchObject({ __typename: 'ConflictError' });
      const stale = await client.execute(UpdateMemory, { input: { id: memory.id, content: 'new', expectedContentSha256: '0'.repeat(64) } });
      expect(stale.data!.updateMemory).toMatchObject({ __typename: 'PreconditionFailedError', currentContentSha256: memory.contentSha256 });
      const unchanged = await countStatements(() => client.execute(UpdateMemory, { input: { id: memory.id, content: 'same' } }));
      expect(unchanged.result.data!.updateMemory).toMatchObject({ __typename: 'UpdateMemorySuccess', memory: { contentSha256: memory.contentSha256 } });
      expect(unchanged.statements).toBeGreaterThan(2);
      await archiveStore(client, store.id);
      const archived = await client.execute(UpdateMemory, { input: { id: memory.id, content: 'late' } });
      expect(archived.data!.updateMemory).toMatchObject({ __typename: 'ConflictError' });
      expect((await versionRows(server.db, client.workspaceId, store.id, memory.id)).length).toBe(1);
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    });
  });
});
