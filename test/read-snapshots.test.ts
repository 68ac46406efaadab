import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { recordStatements } from '../src/db/statement-count.js';
import { createMemory, createStore } from './support/builders.js';
import { postgresUrl } from './support/database.js';
import { TestClient, useTestServer } from './support/server.js';

/**
 * A read that takes several statements answers from one snapshot, however writers race it:
 * a memory's content agrees with its newest version, a list's count with its page, a
 * store's counters with its memories — inside every single answer.
 */

const server = useTestServer();

const READ = `query ($id: ID!) {
  memoryStore(id: $id) {
    entryCount
    totalSize
    memories(first: 100, pathPrefix: "n") {
      totalCount
      edges { node { id contentSha256 contentSizeBytes latestVersion { contentSha256 contentSizeBytes operation } versions(first: 1) { edges { node { contentSha256 } } } } }
    }
  }
}`;

describe('reads under concurrent writes', () => {
  it('answer from one snapshot: every answer of 20 rounds of readers racing writers is consistent in itself', { timeout: 120_000 }, async () => {
    const admin = await server.newWorkspace();
    // The resolvers answer (several statements per read); compiled reads are one statement anyway.
    const reader = new TestClient(createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, compiledReads: false }), admin.token, admin.workspaceId);
    const store = await createStore(admin);
    const ids: string[] = [];
    for (let index = 0; index < 20; index += 1) ids.push((await createMemory(admin, store.id, { path: `notes/${index}.md`, content: 'x'.repeat(index + 1) })).id);
    const problems: string[] = [];
    let reads = 0;
    for (let round = 0; round < 20; round += 1) {
      const writes = Array.from({ length: 30 }, (_, index) => {
        const id = ids[(round * 7 + index) % ids.length]!;
        if (index % 10 === 9) return admin.send({ query: `mutation { createMemory(input: { memoryStoreId: "${store.id}", path: "notes/r${round}-${index}.md", content: "new" }) { __typename } }` });
        return admin.send({ query: 'mutation ($id: ID!, $content: String!) { updateMemory(input: { id: $id, content: $content }) { __typename } }', variables: { id, content: 'y'.repeat(((round * 31 + index * 17) % 200) + 1) } });
      });
      const readsOfRound = Array.from({ length: 10 }, async () => {
        const answer = await reader.send({ query: READ, variables: { id: store.id } });
        reads += 1;
        if (answer.errors) return problems.push(`round ${round}: errors ${JSON.stringify(answer.errors)}`);
        const { entryCount, totalSize, memories } = answer.data.memoryStore;
        const nodes = memories.edges.map((edge: { node: any }) => edge.node);
        if (memories.totalCount !== nodes.length) problems.push(`round ${round}: totalCount ${memories.totalCount}, page of ${nodes.length}`);
        if (entryCount !== nodes.length) problems.push(`round ${round}: entryCount ${entryCount}, page of ${nodes.length}`);
        const bytes = nodes.reduce((sum: number, node: any) => sum + node.contentSizeBytes, 0);
        if (totalSize !== bytes) problems.push(`round ${round}: totalSize ${totalSize}, sizes add up to ${bytes}`);
        for (const node of nodes) {
          if (node.latestVersion.contentSha256 !== node.contentSha256) problems.push(`round ${round}: ${node.id} sha differs from its latestVersion`);
          if (node.latestVersion.contentSizeBytes !== node.contentSizeBytes) problems.push(`round ${round}: ${node.id} size differs from its latestVersion`);
          if (node.versions.edges[0].node.contentSha256 !== node.contentSha256) problems.push(`round ${round}: ${node.id} sha differs from its newest version`);
        }
        return undefined;
      });
      await Promise.all([...writes, ...readsOfRound]);
    }
    expect(reads).toBe(200);
    expect(problems).toEqual([]);
  });
});

describe.skipIf(postgresUrl === undefined)('a read snapshot on PostgreSQL', () => {
  it('is a read-only REPEATABLE READ transaction, begun in one statement', async () => {
    const { result, statements } = await recordStatements(() =>
      server.database.handle.readSnapshot(async (tx) => tx.execute(sql`select current_setting('transaction_isolation') as level, current_setting('transaction_read_only') as read_only`)),
    );
    expect([...(result as unknown as Record<string, string>[])]).toEqual([{ level: 'repeatable read', read_only: 'on' }]);
    // No SET TRANSACTION statement of its own: the isolation level comes with BEGIN.
    expect(statements.map((statement) => statement.sql)).toEqual([expect.stringContaining('current_setting')]);
  });
});
