import { describe, expect, it } from 'vitest';
import { IdGenerator } from '../src/domain/ids.js';
import { graphql } from './generated/gql.js';
import { createKey } from './support/workspace-fixture.js';
import { createStore, mountRows, mountStore, newPair, startSession } from './support/builders.js';
import { useTestServer } from './support/server.js';

/**
 * A system-managed default store is its identity's private memory: no key — another
 * identity's, or even an ADMIN key — can mount it on a pair of another identity, and the
 * refusal is the very answer an unknown store gets. Ids carry 10 unguessable characters:
 * an id does not give away its neighbours.
 */

const server = useTestServer();

const Mount = graphql(`
  mutation PrivacyMount($input: MountMemoryStoreInput!) {
    mountMemoryStore(input: $input) {
      __typename
      ... on Error {
        code
        message
      }
      ... on MountMemoryStoreSuccess {
        mount {
          memoryStoreId
          systemManaged
          access
        }
      }
    }
  }
`);

const WriteFile = graphql(`
  mutation PrivacyWrite($input: WriteSessionMemoryInput!) {
    writeSessionMemory(input: $input) {
      __typename
    }
  }
`);

const SessionFiles = graphql(`
  query PrivacySessionFiles($id: ID!) {
    session(id: $id) {
      files {
        edges {
          node {
            path
          }
        }
      }
    }
  }
`);

const ARCHIVE = 'mutation ($id: ID!) { archiveMemoryStore(input: { id: $id }) { __typename } }';

describe("another identity's default store", () => {
  it("cannot be mounted by an IDENTITY key on its own pair: NOT_FOUND as for an unknown store, and the next session sees none of its files", async () => {
    const admin = await server.newWorkspace();
    const alice = newPair();
    const bob = newPair();
    const bobSession = await startSession(admin, bob);
    const written = await admin.data(WriteFile, { input: { sessionId: bobSession.id, path: 'private/diary.md', content: 'dear diary' } });
    expect(written.writeSessionMemory.__typename).toBe('WriteSessionMemorySuccess');
    const aliceKey = await createKey(admin, 'IDENTITY', alice.identityId, 'alice');

    const refused = await aliceKey.client.data(Mount, { input: { memoryStoreId: bobSession.defaultMemoryStore.id, ...alice } });
    const unknownId = `memstore_${new IdGenerator().nextBody()}`;
    const unknown = await aliceKey.client.data(Mount, { input: { memoryStoreId: unknownId, ...alice } });
    expect(refused.mountMemoryStore).toEqual({
      __typename: 'NotFoundError',
      code: 'NOT_FOUND',
      message: (unknown.mountMemoryStore as { message: string }).message.replace(unknownId, bobSession.defaultMemoryStore.id),
    });
    expect(await mountRows(server.db, admin.workspaceId, alice)).toEqual([]);

    const aliceSession = await startSession(admin, alice);
    const files = await admin.data(SessionFiles, { id: aliceSession.id });
    expect(files.session!.files.edges).toEqual([]);
  });

  it('cannot be mounted on a pair of another identity by an ADMIN key either, archived or not', async () => {
    const admin = await server.newWorkspace();
    const alice = newPair();
    const bobSession = await startSession(admin, newPair());
    for (const step of ['active', 'archived'] as const) {
      if (step === 'archived') expect((await admin.send({ query: ARCHIVE, variables: { id: bobSession.defaultMemoryStore.id } })).data.archiveMemoryStore.__typename).toBe('ArchiveMemoryStoreSuccess');
      const refused = await admin.data(Mount, { input: { memoryStoreId: bobSession.defaultMemoryStore.id, ...alice } });
      expect(refused.mountMemoryStore, step).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
    }
    expect(await mountRows(server.db, admin.workspaceId, alice)).toEqual([]);
  });

  it("mounted on its own pair, it is that pair's default slot; on another template of the same identity it mounts READ_ONLY", async () => {
    const admin = await server.newWorkspace();
    const pair = newPair();
    const session = await startSession(admin, pair);
    const own = await admin.data(Mount, { input: { memoryStoreId: session.defaultMemoryStore.id, ...pair } });
    expect(own.mountMemoryStore).toMatchObject({ __typename: 'MountMemoryStoreSuccess', mount: { systemManaged: true, access: 'READ_WRITE' } });
    const sameIdentity = { identityId: pair.identityId, templateId: newPair().templateId };
    const other = await admin.data(Mount, { input: { memoryStoreId: session.defaultMemoryStore.id, ...sameIdentity } });
    expect(other.mountMemoryStore).toMatchObject({ __typename: 'MountMemoryStoreSuccess', mount: { systemManaged: false, access: 'READ_ONLY' } });
  });

  it('a store created through the API can still be mounted on any pair', async () => {
    const admin = await server.newWorkspace();
    const store = await createStore(admin);
    expect((await mountStore(admin, store.id, newPair())).memoryStoreId).toBe(store.id);
  });
});

describe('ids', () => {
  it('made in one millisecond are not consecutive: each adds a random step, so no id gives away the next', () => {
    const ids = new IdGenerator();
    const now = Date.UTC(2026, 11, 1);
    const bodies = Array.from({ length: 1_000 }, () => ids.nextBody(now));
    // Still in creation order (when the random part runs out, the time part moves on).
    expect(bodies.every((body, index) => index === 0 || body > bodies[index - 1]!)).toBe(true);
    // Steps between neighbours of the same millisecond.
    const steps: number[] = [];
    for (let index = 1; index < bodies.length; index += 1) {
      const [previous, body] = [bodies[index - 1]!, bodies[index]!];
      if (body.slice(0, 10) === previous.slice(0, 10)) steps.push(Number.parseInt(body.slice(10), 36) - Number.parseInt(previous.slice(10), 36));
    }
    expect(steps.length).toBeGreaterThan(500);
    expect(steps.every((step) => step > 0)).toBe(true);
    expect(new Set(steps).size).toBe(steps.length);
    expect(steps.filter((step) => step < 2 ** 20).length).toBeLessThan(5);
  });

  it("a session's default store id does not give away the session id", async () => {
    const admin = await server.newWorkspace();
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const session = await startSession(admin, newPair());
      const sessionBody = session.id.slice('sesn_'.length);
      const storeBody = session.defaultMemoryStore.id.slice('memstore_'.length);
      const distance = Math.abs(Number.parseInt(sessionBody.slice(10), 36) - Number.parseInt(storeBody.slice(10), 36));
      if (sessionBody.slice(0, 10) === storeBody.slice(0, 10)) expect(distance).toBeGreaterThan(2 ** 20);
    }
  });
});
