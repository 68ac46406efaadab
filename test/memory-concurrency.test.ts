import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memories, memoryVersions } from '../src/db/schema.js';
import { graphql } from './generated/gql.js';
import { createStore } from './support/builders.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer, WRITE_PATHS, type TestClient } from './support/server.js';

const Create = graphql(`
  mutation ConcurrentCreate($input: CreateMemoryInput!) {
    createMemory(input: $input) {
      __typename
      ... on CreateMemorySuccess {
        memory {
          id
          contentSha256
        }
      }
      ... on Error {
        code
      }
    }
  }
`);

const Update = graphql(`
  mutation ConcurrentUpdate($input: UpdateMemoryInput!) {
    updateMemory(input: $input) {
      __typename
      ... on UpdateMemorySuccess {
        memory {
          id
          contentSha256
        }
      }
      ... on PreconditionFailedError {
        currentContentSha256
      }
      ... on Error {
        code
      }
    }
  }
`);

const Delete = graphql(`
  mutation ConcurrentDelete($input: DeleteMemoryInput!) {
    deleteMemory(input: $input) {
      __typename
      ... on Error {
        code
      }
    }
  }
`);

describe.each(WRITE_PATHS)('memory writes under concurrency, $writes', ({ singleStatementWrites }) => {
  const server = useTestServer({ singleStatementWrites });

  async function create(client: TestClient, memoryStoreId: string, path: string, content: string) {
    const response = await client.execute(Create, { input: { memoryStoreId, path, content } });
    expect(response.errors).toBeUndefined();
    return response.data!.createMemory;
  }

  /** A small deterministic generator, so that a failing mix can be replayed. */
  function random(seed: number) {
    let state = seed >>> 0;
    return (below: number) => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return state % below;
    };
  }

  describe('concurrent memory writes', () => {
    it('20 updates holding the same expectedContentSha256: exactly one succeeds, 19 fail with PRECONDITION_FAILED, one new version', async () => {
      const client = await server.newWorkspace();
      const store = await createStore(client);
      const created = await create(client, store.id, 'contended.md', 'v0');
      if (created.__typename !== 'CreateMemorySuccess') throw new Error(created.__typename);
      const { id, contentSha256 } = created.memory;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, index) => client.execute(Update, { input: { id, content: `writer ${index}`, expectedContentSha256: contentSha256 } })),
      );
      const outcomes = results.map((result) => result.data?.updateMemory.__typename ?? 'top-level error');
      expect(outcomes.filter((outcome) => outcome === 'UpdateMemorySuccess')).toHaveLength(1);
      expect(outcomes.filter((outcome) => outcome === 'PreconditionFailedError')).toHaveLength(19);
      const winner = results.find((result) => result.data?.updateMemory.__typename === 'UpdateMemorySuccess')!.data!.updateMemory;
      for (const result of results) {
        const outcome = result.data!.updateMemory;
        if (outcome.__typename === 'PreconditionFailedError' && winner.__typename === 'UpdateMemorySuccess') {
          expect(outcome.currentContentSha256).toBe(winner.memory.contentSha256);
        }
      }
      const versions = await server.db.select().from(memoryVersions).where(and(eq(memoryVersions.workspaceId, client.workspaceId), eq(memoryVersions.memoryId, id)));
      expect(versions.map((version) => version.operation).sort()).toEqual(['created', 'updated']);
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    });

    it('10 concurrent creates of one path give exactly one memory; the others are CONFLICTs', async () => {
      const client = await server.newWorkspace();
      const store = await createStore(client);
      const results = await Promise.all(Array.from({ length: 10 }, (_, index) => create(client, store.id, 'same/path.md', `attempt ${index}`)));
      expect(results.filter((result) => result.__typename === 'CreateMemorySuccess')).toHaveLength(1);
      expect(results.filter((result) => result.__typename === 'ConflictError')).toHaveLength(9);
      const rows = await server.db.select().from(memories).where(eq(memories.workspaceId, client.workspaceId));
      expect(rows).toHaveLength(1);
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    });

    it('a few hundred mixed concurrent creates, updates, renames and deletes keep counters and histories exact', async () => {
      const client = await server.newWorkspace();
      const stores = [await createStore(client), await createStore(client), await createStore(client)];
      const next = random(20261201);
      const paths = Array.from({ length: 12 }, (_, index) => `notes/${index}.md`);
      const content = () => 'x'.repeat(next(400)) + 'é'.repeat(next(50));
      const known: string[] = [];
      for (const store of stores) {
        for (const path of paths.slice(0, 4)) {
          const created = await create(client, store.id, path, content());
          if (created.__typename === 'CreateMemorySuccess') known.push(created.memory.id);
        }
      }

      const operations = Array.from({ length: 300 }, () => {
        const kind = next(4);
        const store = stores[next(stores.length)]!;
        const id = known[next(known.length)]!;
        if (kind === 0) {
          return create(client, store.id, paths[next(paths.length)]!, content()).then((result) => {
            if (result.__typename === 'CreateMemorySuccess') known.push(result.memory.id);
            return result.__typename;
          });
        }
        if (kind === 1) return client.execute(Update, { input: { id, content: content() } }).then((result) => result.data?.updateMemory.__typename);
        if (kind === 2) return client.execute(Update, { input: { id, path: paths[next(paths.length)]! } }).then((result) => result.data?.updateMemory.__typename);
        return client.execute(Delete, { input: { id } }).then((result) => result.data?.deleteMemory.__typename);
      });
      const outcomes = await Promise.all(operations);
      // Every request got an answer from the contract: a success or a typed error, never a crash.
      for (const outcome of outcomes) {
        expect(['CreateMemorySuccess', 'UpdateMemorySuccess', 'DeleteMemorySuccess', 'ConflictError', 'NotFoundError']).toContain(outcome);
      }
      expect(outcomes.filter((outcome) => outcome?.endsWith('Success')).length).toBeGreaterThan(100);
      expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    });
  });
});
