import { createHash } from 'node:crypto';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { archiveStore, createMemory, createStore, deleteMemory, memoryRows, storeRow, updateMemory, versionRows } from './support/builders.js';
import { postgresUrl } from './support/database.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer, WRITE_PATHS, type TestClient } from './support/server.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

const RESTORE = `mutation ($input: RestoreMemoryVersionInput!) {
  restoreMemoryVersion(input: $input) {
    __typename
    ... on RestoreMemoryVersionSuccess {
      memory { id path content metadata contentSha256 createdAt updatedAt }
      version { id number operation content restoredFrom { id number } }
    }
    ... on PreconditionFailedError { currentContentSha256 }
    ... on Error { code message }
  }
}`;

const HISTORY = `query ($id: ID!, $store: ID!) {
  memoryStore(id: $store) { entryCount totalSize versions(memoryId: $id, first: 100) { edges { node { id number operation content restoredFrom { id } } } } }
}`;

describe.each(WRITE_PATHS)('restoreMemoryVersion, $writes', ({ singleStatementWrites }) => {
  const server = useTestServer({ singleStatementWrites });

  async function restore(client: TestClient, input: { id: string; expectedContentSha256?: string }) {
    const response = await client.send({ query: RESTORE, variables: { input } });
    expect(response.errors).toBeUndefined();
    return response.data.restoreMemoryVersion;
  }

  /** The memory's history oldest first, and the store's counters. */
  async function history(client: TestClient, storeId: string, memoryId: string) {
    const response = await client.send({ query: HISTORY, variables: { id: memoryId, store: storeId } });
    expect(response.errors).toBeUndefined();
    const store = response.data.memoryStore;
    return { entryCount: store.entryCount, totalSize: store.totalSize, versions: store.versions.edges.map((edge: any) => edge.node).reverse() };
  }

  /** Everything the database holds for a workspace, to show that a refused restore changed nothing. */
  async function snapshot(client: TestClient, storeId: string) {
    return {
      store: await storeRow(server.db, client.workspaceId, storeId),
      memories: await memoryRows(server.db, client.workspaceId, storeId),
      versions: await versionRows(server.db, client.workspaceId, storeId),
    };
  }

  async function workspaceWithStore() {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    return { client, storeId: store.id };
  }

  it('brings an old content back into a live memory as an UPDATED version naming its source; path and metadata stay; counters exact', async () => {
    const { client, storeId } = await workspaceWithStore();
    const memory = await createMemory(client, storeId, { path: 'plan.md', content: 'first draft', metadata: { team: 'a' } });
    await updateMemory(client, { id: memory.id, content: 'second, longer draft', path: 'docs/plan.md', metadata: { team: 'b' } });
    const before = await history(client, storeId, memory.id);
    const result = await restore(client, { id: before.versions[0].id });
    expect(result.__typename).toBe('RestoreMemoryVersionSuccess');
    expect(result.memory).toMatchObject({ id: memory.id, path: 'docs/plan.md', content: 'first draft', metadata: { team: 'b' }, contentSha256: sha256('first draft') });
    expect(result.version).toMatchObject({ number: 3, operation: 'UPDATED', content: 'first draft', restoredFrom: { id: before.versions[0].id, number: 1 } });
    const after = await history(client, storeId, memory.id);
    expect(after.versions.map((version: any) => [version.number, version.operation, version.restoredFrom?.id ?? null])).toEqual([
      [1, 'CREATED', null],
      [2, 'UPDATED', null],
      [3, 'UPDATED', before.versions[0].id],
    ]);
    expect([after.entryCount, after.totalSize]).toEqual([1, Buffer.byteLength('first draft')]);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('writes nothing when the content already is the version\'s, and answers the newest version', async () => {
    const { client, storeId } = await workspaceWithStore();
    const memory = await createMemory(client, storeId, { path: 'same.md', content: 'same' });
    await updateMemory(client, { id: memory.id, metadata: { changed: 'yes' } });
    const { versions } = await history(client, storeId, memory.id);
    const before = await snapshot(client, storeId);
    // Even with a stale sha: the memory already is as requested.
    const result = await restore(client, { id: versions[0].id, expectedContentSha256: sha256('stale') });
    expect(result.__typename).toBe('RestoreMemoryVersionSuccess');
    expect(result.version).toMatchObject({ id: versions[1].id, number: 2, restoredFrom: null });
    expect(await snapshot(client, storeId)).toEqual(before);
  });

  it('checks expectedContentSha256 as updateMemory does: stale fails with PRECONDITION_FAILED and writes nothing, current succeeds', async () => {
    const { client, storeId } = await workspaceWithStore();
    const memory = await createMemory(client, storeId, { path: 'p.md', content: 'one' });
    const updated = await updateMemory(client, { id: memory.id, content: 'two' });
    const { versions } = await history(client, storeId, memory.id);
    const before = await snapshot(client, storeId);
    const stale = await restore(client, { id: versions[0].id, expectedContentSha256: sha256('one') });
    expect(stale).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED', currentContentSha256: updated.contentSha256 });
    expect(await snapshot(client, storeId)).toEqual(before);
    const current = await restore(client, { id: versions[0].id, expectedContentSha256: updated.contentSha256.toUpperCase() });
    expect(current.__typename).toBe('RestoreMemoryVersionSuccess');
    expect(current.memory.content).toBe('one');
  });

  it('brings a deleted memory back under its original id with its whole history, numbers contiguous, empty metadata, a CREATED version', async () => {
    const { client, storeId } = await workspaceWithStore();
    const memory = await createMemory(client, storeId, { path: 'notes/lost.md', content: 'v1', metadata: { k: 'v' } });
    await updateMemory(client, { id: memory.id, content: 'version two' });
    await deleteMemory(client, memory.id);
    const { versions } = await history(client, storeId, memory.id);
    expect(versions.map((version: any) => version.operation)).toEqual(['CREATED', 'UPDATED', 'DELETED']);
    const result = await restore(client, { id: versions[0].id });
    expect(result.__typename).toBe('RestoreMemoryVersionSuccess');
    expect(result.memory).toMatchObject({ id: memory.id, path: 'notes/lost.md', content: 'v1', metadata: {}, createdAt: memory.createdAt });
    expect(result.version).toMatchObject({ number: 4, operation: 'CREATED', restoredFrom: { id: versions[0].id } });
    const after = await history(client, storeId, memory.id);
    expect(after.versions.map((version: any) => [version.number, version.operation])).toEqual([
      [1, 'CREATED'],
      [2, 'UPDATED'],
      [3, 'DELETED'],
      [4, 'CREATED'],
    ]);
    expect([after.entryCount, after.totalSize]).toEqual([1, 2]);
    const live = await client.send({ query: 'query ($id: ID!) { memory(id: $id) { id versions { totalCount } latestVersion { id } } }', variables: { id: memory.id } });
    expect(live.data.memory).toEqual({ id: memory.id, versions: { totalCount: 4 }, latestVersion: { id: result.version.id } });
    // Deleted again and restored again from the DELETED version (which holds the last content).
    await deleteMemory(client, memory.id);
    const again = await restore(client, { id: versions[2].id });
    expect(again.memory).toMatchObject({ id: memory.id, content: 'version two' });
    expect(again.version.number).toBe(6);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('refuses with CONFLICT, changing nothing: a path another live memory holds, a redacted version, an archived store', async () => {
    const { client, storeId } = await workspaceWithStore();
    const memory = await createMemory(client, storeId, { path: 'taken.md', content: 'old' });
    await deleteMemory(client, memory.id);
    await createMemory(client, storeId, { path: 'taken.md', content: 'newcomer' });
    const kept = await createMemory(client, storeId, { path: 'kept.md', content: 'a' });
    await updateMemory(client, { id: kept.id, content: 'b' });
    const { versions: takenVersions } = await history(client, storeId, memory.id);
    const { versions: keptVersions } = await history(client, storeId, kept.id);
    const redacted = await client.send({ query: 'mutation ($id: ID!) { redactMemoryVersion(input: { id: $id }) { __typename } }', variables: { id: keptVersions[0].id } });
    expect(redacted.data.redactMemoryVersion.__typename).toBe('RedactMemoryVersionSuccess');

    const before = await snapshot(client, storeId);
    expect(await restore(client, { id: takenVersions[0].id })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await restore(client, { id: keptVersions[0].id })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(await snapshot(client, storeId)).toEqual(before);

    await archiveStore(client, storeId);
    const archived = await snapshot(client, storeId);
    expect(await restore(client, { id: keptVersions[0].id })).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    const deletedThenArchived = await restore(client, { id: takenVersions[0].id });
    expect(deletedThenArchived).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(deletedThenArchived.message).toContain('archived');
    expect(await snapshot(client, storeId)).toEqual(archived);
  });

  it('answers NOT_FOUND for unknown, malformed and other workspaces\' versions, INVALID_REQUEST for a bad sha, and a deleted memory\'s precondition fails with ""', async () => {
    const { client, storeId } = await workspaceWithStore();
    const other = await workspaceWithStore();
    const foreign = await createMemory(other.client, other.storeId, { path: 'x.md', content: 'secret' });
    const { versions: foreignVersions } = await history(other.client, other.storeId, foreign.id);
    for (const id of [foreignVersions[0].id, 'memver_00000000000000000000', 'mem_00000000000000000000', 'nonsense']) {
      expect(await restore(client, { id }), id).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    const invalid = await restore(client, { id: foreignVersions[0].id, expectedContentSha256: 'abc' });
    expect(invalid).toMatchObject({ __typename: 'InvalidRequestError' });
    const memory = await createMemory(client, storeId, { path: 'd.md', content: 'gone' });
    await deleteMemory(client, memory.id);
    const { versions } = await history(client, storeId, memory.id);
    expect(await restore(client, { id: versions[0].id, expectedContentSha256: sha256('gone') })).toMatchObject({
      __typename: 'PreconditionFailedError',
      currentContentSha256: '',
    });
    expect(await snapshot(other.client, other.storeId)).toMatchObject({ memories: [{ content: 'secret' }] });
  });

  /**
   * Holds the store's row lock (PostgreSQL) until `waiters` other statements wait for it,
   * so that both writers are certain to be queued on the lock together; PGlite runs one
   * transaction at a time, which queues them anyway.
   */
  async function whileStoreLocked(workspaceId: string, storeId: string, waiters: number, start: () => Promise<unknown>[]): Promise<unknown[]> {
    if (postgresUrl === undefined) return Promise.all(start());
    // A connection of its own, outside the server's pool and outside any async context the
    // requests could inherit.
    const client = postgres(server.database.url!, { max: 1, onnotice: () => {} });
    const connection = await client.reserve();
    try {
      await connection`begin`;
      await connection`select 1 from memory_stores where workspace_id = ${workspaceId} and id = ${storeId} for update`;
      const started = start();
      let queued = false;
      for (let attempt = 0; attempt < 500 && !queued; attempt += 1) {
        // Activity is read once per transaction unless the snapshot is cleared.
        await connection`select pg_stat_clear_snapshot()`;
        const [row] = await connection`select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
        queued = row!.waiting >= waiters;
        if (!queued) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const activity = queued ? [] : await connection`select state, wait_event_type, wait_event, left(query, 100) as query from pg_stat_activity where datname = current_database()`;
      await connection`commit`;
      if (!queued) throw new Error(`the writers never queued on the store lock: ${JSON.stringify(activity)}`);
      return await Promise.all(started);
    } finally {
      connection.release();
      await client.end();
    }
  }

  it('a restore and an update of one memory holding the same expectedContentSha256: exactly one wins, counters exact', async () => {
    for (let round = 0; round < 4; round += 1) {
      const { client, storeId } = await workspaceWithStore();
      const memory = await createMemory(client, storeId, { path: 'race.md', content: 'original text' });
      const updated = await updateMemory(client, { id: memory.id, content: 'current' });
      const { versions } = await history(client, storeId, memory.id);
      const results = (await whileStoreLocked(client.workspaceId, storeId, 2, () => {
        const restoring = restore(client, { id: versions[0].id, expectedContentSha256: updated.contentSha256 });
        const updating = client
          .send({
            query: 'mutation ($input: UpdateMemoryInput!) { updateMemory(input: $input) { __typename ... on Error { code } } }',
            variables: { input: { id: memory.id, content: `concurrent update ${round}`, expectedContentSha256: updated.contentSha256 } },
          })
          .then((response) => response.data.updateMemory);
        return round % 2 === 0 ? [restoring, updating] : [updating, restoring];
      })) as { __typename: string }[];
      const outcomes = results.map((result) => result.__typename).sort();
      expect(outcomes).toHaveLength(2);
      expect(outcomes.filter((name) => name.endsWith('Success'))).toHaveLength(1);
      expect(outcomes.filter((name) => name === 'PreconditionFailedError')).toHaveLength(1);
      const after = await history(client, storeId, memory.id);
      expect(after.versions.map((version: any) => version.number)).toEqual([1, 2, 3]);
      const [row] = await memoryRows(server.db, client.workspaceId, storeId);
      expect([after.entryCount, after.totalSize]).toEqual([1, Buffer.byteLength(row!.content)]);
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    }
  });

  it('two restores of one deleted memory at once: one brings it back, the other finds it live and writes nothing or an update', async () => {
    const { client, storeId } = await workspaceWithStore();
    const memory = await createMemory(client, storeId, { path: 'twice.md', content: 'first' });
    await updateMemory(client, { id: memory.id, content: 'second' });
    await deleteMemory(client, memory.id);
    const { versions } = await history(client, storeId, memory.id);
    const results = (await whileStoreLocked(client.workspaceId, storeId, 2, () => [restore(client, { id: versions[0].id }), restore(client, { id: versions[0].id })])) as any[];
    expect(results.map((result) => result.__typename)).toEqual(['RestoreMemoryVersionSuccess', 'RestoreMemoryVersionSuccess']);
    expect(results.map((result) => result.memory.id)).toEqual([memory.id, memory.id]);
    const after = await history(client, storeId, memory.id);
    expect(after.versions.map((version: any) => version.operation)).toEqual(['CREATED', 'UPDATED', 'DELETED', 'CREATED']);
    expect([after.entryCount, after.totalSize]).toEqual([1, 5]);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });
});
