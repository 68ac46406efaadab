import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memoryStoreMounts, sessions } from '../src/db/schema.js';
import { MAX_EXPLICIT_MOUNTS_PER_PAIR } from '../src/domain/limits.js';
import { graphql } from './generated/gql.js';
import { createStore, defaultStoreRows, mountRows, newPair, startSession, storeRow } from './support/builders.js';
import { ArchiveStore, MountStore, StartSession } from './support/documents.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const DeleteRacingStore = graphql(`
  mutation DeleteRacingStore($id: ID!) {
    deleteMemoryStore(input: { id: $id }) {
      __typename
      ... on Error {
        code
      }
    }
  }
`);

/** The mount rows of one store, on every pair, read straight from the database. */
async function mountsOfStore(client: TestClient, memoryStoreId: string) {
  return server.db
    .select()
    .from(memoryStoreMounts)
    .where(and(eq(memoryStoreMounts.workspaceId, client.workspaceId), eq(memoryStoreMounts.memoryStoreId, memoryStoreId)));
}

/** The __typename of a mutation result, or the top-level error code when there is no result. */
function outcomeOf(response: { data?: Record<string, { __typename: string } | undefined> | null; errors?: { extensions?: Record<string, unknown> }[] }, field: string) {
  return response.data?.[field]?.__typename ?? `top-level ${String(response.errors?.[0]?.extensions?.code)}`;
}

describe('concurrent mounts and sessions', () => {
  it(`20 concurrent mounts of 20 stores on one pair: exactly ${MAX_EXPLICIT_MOUNTS_PER_PAIR} succeed, the others are CONFLICTs, and ${MAX_EXPLICIT_MOUNTS_PER_PAIR} explicit mounts remain`, async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(client, pair);
    const stores = [];
    for (let index = 0; index < 20; index += 1) stores.push(await createStore(client));

    const responses = await Promise.all(stores.map((store) => client.execute(MountStore, { input: { memoryStoreId: store.id, ...pair } })));
    const outcomes = responses.map((response) => outcomeOf(response, 'mountMemoryStore'));
    expect(outcomes.filter((outcome) => outcome === 'MountMemoryStoreSuccess')).toHaveLength(MAX_EXPLICIT_MOUNTS_PER_PAIR);
    expect(outcomes.filter((outcome) => outcome === 'ConflictError')).toHaveLength(20 - MAX_EXPLICIT_MOUNTS_PER_PAIR);

    const mounted = stores.filter((_, index) => outcomes[index] === 'MountMemoryStoreSuccess').map((store) => store.id);
    const rows = await mountRows(server.db, client.workspaceId, pair);
    expect(rows.filter((row) => row.systemManaged).map((row) => row.memoryStoreId)).toEqual([session.defaultMemoryStore!.id]);
    expect(rows.filter((row) => !row.systemManaged).map((row) => row.memoryStoreId).sort()).toEqual(mounted.sort());
  });

  it('20 concurrent first sessions of a pair create exactly one default store, and every session points at it', async () => {
    const client = await server.newWorkspace();
    const pair = newPair();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, index) => client.execute(StartSession, { input: { ...pair, environment: index % 2 === 0 ? 'MANAGED' : 'SELF_HOSTED' } })),
    );
    const created = responses.map((response) => response.data?.createSession);
    expect(created.map((result) => result?.__typename ?? JSON.stringify(responses[0]?.errors))).toEqual(Array(20).fill('CreateSessionSuccess'));

    const defaults = await defaultStoreRows(server.db, client.workspaceId, pair);
    expect(defaults).toHaveLength(1);
    const defaultStoreId = defaults[0]!.id;
    for (const result of created) {
      if (result?.__typename !== 'CreateSessionSuccess') continue;
      expect(result.session.defaultMemoryStore!.id).toBe(defaultStoreId);
      if (result.session.environment === 'MANAGED') expect(result.session.mounts.map((mount) => mount.memoryStoreId)).toEqual([defaultStoreId]);
    }
    expect(await mountRows(server.db, client.workspaceId, pair)).toMatchObject([{ memoryStoreId: defaultStoreId, systemManaged: true }]);
    const rows = await server.db.select().from(sessions).where(eq(sessions.workspaceId, client.workspaceId));
    expect(rows).toHaveLength(20);
    expect(new Set(rows.map((row) => row.defaultMemoryStoreId))).toEqual(new Set([defaultStoreId]));
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
  });

  it('concurrent archive and mount of one store never leave an archived store mounted (10 rounds)', async () => {
    const client = await server.newWorkspace();
    for (let round = 0; round < 10; round += 1) {
      const store = await createStore(client);
      // Odd rounds send the archive first, even rounds the mount.
      const send = {
        mount: () => client.execute(MountStore, { input: { memoryStoreId: store.id, ...newPair() } }),
        archive: () => client.execute(ArchiveStore, { id: store.id }),
      };
      let mount, archive;
      if (round % 2 === 0) {
        mount = send.mount();
        archive = send.archive();
      } else {
        archive = send.archive();
        mount = send.mount();
      }
      const [mounted, archived] = [outcomeOf(await mount, 'mountMemoryStore'), outcomeOf(await archive, 'archiveMemoryStore')];

      const row = await storeRow(server.db, client.workspaceId, store.id);
      const mounts = await mountsOfStore(client, store.id);
      if (row?.status === 'archived') {
        expect({ round, archived, mounted, mounts: mounts.length }).toEqual({ round, archived: 'ArchiveMemoryStoreSuccess', mounted: 'ConflictError', mounts: 0 });
      } else {
        expect({ round, status: row?.status, archived, mounted, mounts: mounts.length }).toEqual({
          round,
          status: 'active',
          archived: 'ConflictError',
          mounted: 'MountMemoryStoreSuccess',
          mounts: 1,
        });
      }
    }
  });

  it('concurrent archive of a pair\'s default store and createSession: the new MANAGED session always has its default store injected first (30 rounds)', async () => {
    const client = await server.newWorkspace();
    const anomalies: unknown[] = [];
    for (let round = 0; round < 30; round += 1) {
      const pair = newPair();
      const oldDefault = (await startSession(client, pair)).defaultMemoryStore.id;
      const [archived, created] = await Promise.all([
        client.execute(ArchiveStore, { id: oldDefault }),
        client.execute(StartSession, { input: { ...pair, environment: 'MANAGED' } }),
      ]);
      expect(outcomeOf(archived, 'archiveMemoryStore')).toBe('ArchiveMemoryStoreSuccess');
      const result = created.data?.createSession;
      if (result?.__typename !== 'CreateSessionSuccess') throw new Error(JSON.stringify(created));
      const { session } = result;
      const slots = (await mountRows(server.db, client.workspaceId, pair)).map((row) => row.memoryStoreId);
      // Either the session came first (it got the old store, whose slot the archive then released)
      // or the archive came first (the session got a new default store, which holds the slot).
      const came = session.defaultMemoryStore!.id === oldDefault ? 'before the archive' : 'after the archive';
      const expected = {
        mounts: [[session.defaultMemoryStore!.id, 'READ_WRITE', true]],
        slots: came === 'before the archive' ? [] : [session.defaultMemoryStore!.id],
      };
      const actual = {
        mounts: session.mounts.map((mount) => [mount.memoryStoreId, mount.access, mount.systemManaged]),
        slots,
      };
      if (JSON.stringify(actual) !== JSON.stringify(expected)) anomalies.push({ round, came, actual, expected });
    }
    expect(anomalies).toEqual([]);
  });

  it('concurrent delete and mount of one store: either deleted and unmounted, or mounted and kept; never a server error (10 rounds)', async () => {
    const client = await server.newWorkspace();
    for (let round = 0; round < 10; round += 1) {
      const store = await createStore(client);
      const send = {
        mount: () => client.execute(MountStore, { input: { memoryStoreId: store.id, ...newPair() } }),
        remove: () => client.execute(DeleteRacingStore, { id: store.id }),
      };
      let mount, remove;
      if (round % 2 === 0) {
        mount = send.mount();
        remove = send.remove();
      } else {
        remove = send.remove();
        mount = send.mount();
      }
      const [mounted, deleted] = [outcomeOf(await mount, 'mountMemoryStore'), outcomeOf(await remove, 'deleteMemoryStore')];

      const row = await storeRow(server.db, client.workspaceId, store.id);
      const mounts = await mountsOfStore(client, store.id);
      if (row === undefined) {
        expect({ round, deleted, mounted, mounts: mounts.length }).toEqual({ round, deleted: 'DeleteMemoryStoreSuccess', mounted: 'NotFoundError', mounts: 0 });
      } else {
        expect({ round, deleted, mounted, mounts: mounts.length }).toEqual({ round, deleted: 'ConflictError', mounted: 'MountMemoryStoreSuccess', mounts: 1 });
      }
    }
  });
});
