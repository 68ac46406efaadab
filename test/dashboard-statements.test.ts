import { describe, expect, it } from 'vitest';
import { countStatements } from '../src/db/statement-count.js';
import { graphql } from './generated/gql.js';
import { seedStores } from './support/bulk.js';
import { invariantViolations } from './support/invariants.js';
import { createApp } from '../src/app.js';
import { TestClient, useTestServer } from './support/server.js';

const server = useTestServer();

/** The dashboard: stores × memories × versions, with totalCount at each level. */
const Dashboard = graphql(`
  query Dashboard($stores: Int!, $memories: Int!, $versions: Int!) {
    memoryStores(first: $stores) {
      totalCount
      edges {
        node {
          id
          name
          entryCount
          totalSize
          memories(first: $memories) {
            totalCount
            edges {
              node {
                id
                path
                contentSizeBytes
                contentSha256
                updatedAt
                versions(first: $versions) {
                  totalCount
                  edges {
                    node {
                      id
                      operation
                      contentSizeBytes
                      createdAt
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
`);

describe('the dashboard query', () => {
  it('costs a fixed number of SQL statements, however many stores and memories it shows', async () => {
    const client = await server.newWorkspace();
    await seedStores(server.db, client.workspaceId, { stores: 40, memoriesPerStore: 40, versionsPerMemory: 6 });
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);

    const run = async (stores: number, memories: number, through = client) => {
      const { result, statements } = await countStatements(() => through.execute(Dashboard, { stores, memories, versions: 5 }));
      expect(result.errors).toBeUndefined();
      const page = result.data!.memoryStores;
      expect(page.totalCount).toBe(40);
      expect(page.edges).toHaveLength(stores);
      for (const { node: store } of page.edges) {
        expect(store.memories.totalCount).toBe(40);
        expect(store.memories.edges).toHaveLength(memories);
        for (const { node: memory } of store.memories.edges) {
          expect(memory.versions.totalCount).toBe(6);
          expect(memory.versions.edges.map((edge) => edge.node.operation)).toEqual(['UPDATED', 'UPDATED', 'UPDATED', 'UPDATED', 'UPDATED']);
        }
      }
      return statements;
    };

    // One compiled statement that authenticates and builds the whole answer, once the key's
    // token has been seen (a token new to the instance asking a shape no key has answered
    // looks its key up first, once: prepared-statement-texts.test.ts).
    await run(20, 20);
    expect(await run(20, 20)).toBe(1);
    // Twice the stores, or twice the memories per store (both at once costs more than MAX_QUERY_COST).
    expect(await run(40, 20)).toBe(1);
    expect(await run(20, 40)).toBe(1);

    // The resolvers, for what the compiler does not cover: authentication, then a page at each
    // level and the count of stores; the stores' entryCount and the memories' version
    // sequences answer the other two counts.
    const resolvers = new TestClient(createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, compiledReads: false }), client.token, client.workspaceId);
    expect(await run(20, 20, resolvers)).toBe(5);
    expect(await run(40, 20, resolvers)).toBe(5);
    expect(await run(20, 40, resolvers)).toBe(5);
  });
});
