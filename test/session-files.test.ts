import { describe, expect, it } from 'vitest';
import { countStatements } from '../src/db/statement-count.js';
import { MAX_EXPLICIT_MOUNTS_PER_PAIR } from '../src/domain/limits.js';
import { graphql } from './generated/gql.js';
import { createStore, mountStore, newPair, setMountTime, startSession, type Pair } from './support/builders.js';
import { seedMemoriesAtPaths } from './support/bulk.js';
import { invariantViolations } from './support/invariants.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const FilesPage = graphql(`
  query FilesPage($id: ID!, $first: Int, $after: String) {
    session(id: $id) {
      files(first: $first, after: $after) {
        totalCount
        edges {
          cursor
          node {
            path
            sandboxPath
            access
            memory {
              id
              memoryStoreId
            }
            shadowed {
              id
              memoryStoreId
            }
          }
        }
        pageInfo {
          hasNextPage
          hasPreviousPage
          endCursor
        }
      }
    }
  }
`);

const MEMORIES_PER_STORE = 1000;
/** Store k holds notes/(k × SHIFT) … notes/(k × SHIFT + 999): up to 10 stores share a path. */
const SHIFT = 100;
const STORES = 1 + MAX_EXPLICIT_MOUNTS_PER_PAIR;
const PAGE = 100;

const pathOf = (number: number) => `notes/${String(number).padStart(4, '0')}.md`;
const pathsOfStore = (k: number) => Array.from({ length: MEMORIES_PER_STORE }, (_, index) => pathOf(k * SHIFT + index));
/** Mount order unlike store order: store k is mounted rank(k)-th (the default slot, store 0, third). */
const rank = (k: number) => (k * 7 + 3) % STORES;

/**
 * A pair whose default store (store 0) and 10 explicitly mounted stores (1 … 10) hold
 * 1,000 memories each, seeded directly, with mount times in the order `rank`; then the
 * MANAGED session that injects all 11.
 */
async function sessionWithElevenStores(client: TestClient) {
  const pair = newPair();
  const defaultStoreId = (await startSession(client, pair, 'SELF_HOSTED')).defaultMemoryStore.id;
  const storeIds = [defaultStoreId];
  for (let k = 1; k < STORES; k += 1) {
    const store = await createStore(client, { name: `store ${k}` });
    await mountStore(client, store.id, pair);
    storeIds.push(store.id);
  }
  const memoryIds = new Map<string, Map<string, string>>();
  for (const [k, storeId] of storeIds.entries()) {
    memoryIds.set(storeId, await seedMemoriesAtPaths(server.db, client.workspaceId, storeId, pathsOfStore(k)));
    await setMountTime(server.db, client.workspaceId, pair, storeId, new Date(Date.UTC(2026, 0, 1, 0, rank(k))));
  }
  const session = await startSession(client, pair);
  return { pair, session, storeIds, memoryIds };
}

/** A pair with only its default store, holding the same 1,000 paths as store 0 above. */
async function sessionWithOneStore(client: TestClient) {
  const pair: Pair = newPair();
  const defaultStoreId = (await startSession(client, pair, 'SELF_HOSTED')).defaultMemoryStore.id;
  await seedMemoriesAtPaths(server.db, client.workspaceId, defaultStoreId, pathsOfStore(0));
  return startSession(client, pair);
}

async function page(client: TestClient, sessionId: string, after?: string) {
  const response = await client.execute(FilesPage, { id: sessionId, first: PAGE, after });
  expect(response.errors).toBeUndefined();
  return response.data!.session!.files;
}

// Seeding 11,000 memories takes seconds on the embedded database, more with a busy machine.
describe('Session.files over 11 injected stores of 1,000 memories each', { timeout: 120_000 }, () => {
  it('pages through every path once, in order, each from its highest-precedence store with the others shadowed in order', async () => {
    const client = await server.newWorkspace();
    const { session, storeIds, memoryIds } = await sessionWithElevenStores(client);
    expect(await invariantViolations(server.db, client.workspaceId)).toEqual([]);
    expect(session.mounts).toHaveLength(STORES);
    expect(session.mounts[0]?.memoryStoreId).toBe(storeIds[0]);

    // What the agent should see: every path of the union, from the stores holding it in mount order.
    const precedence = [...storeIds.keys()].sort((left, right) => rank(left) - rank(right));
    const distinct = (STORES - 1) * SHIFT + MEMORIES_PER_STORE;
    const expected = Array.from({ length: distinct }, (_, number) => {
      const holders = precedence.filter((k) => k * SHIFT <= number && number < k * SHIFT + MEMORIES_PER_STORE);
      const path = pathOf(number);
      const entry = (k: number) => ({ id: memoryIds.get(storeIds[k]!)!.get(path)!, memoryStoreId: storeIds[k]! });
      return {
        path,
        sandboxPath: `/data/.qoder/awareness/${path}`,
        access: holders[0] === 0 ? 'READ_WRITE' : 'READ_ONLY',
        memory: entry(holders[0]!),
        shadowed: holders.slice(1).map(entry),
      };
    });
    // The pattern really overlaps: up to 10 stores at one path, and the default store is not always the winner.
    expect(Math.max(...expected.map((file) => file.shadowed.length))).toBe(9);
    expect(expected.some((file) => file.memory.memoryStoreId === storeIds[0]) && expected.some((file) => file.shadowed.some((memory) => memory.memoryStoreId === storeIds[0]))).toBe(true);

    const seen: typeof expected = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const files = await page(client, session.id, after);
      pages += 1;
      expect(files.totalCount).toBe(distinct);
      expect(files.pageInfo.hasPreviousPage).toBe(after !== undefined);
      expect(files.edges.length).toBe(files.pageInfo.hasNextPage ? PAGE : distinct % PAGE || PAGE);
      seen.push(...files.edges.map((edge) => edge.node));
      if (!files.pageInfo.hasNextPage) break;
      after = files.pageInfo.endCursor!;
    }
    expect(pages).toBe(Math.ceil(distinct / PAGE));
    expect(new Set(seen.map((file) => file.path)).size).toBe(seen.length);
    expect(seen.map((file) => file.path)).toEqual(expected.map((file) => file.path));
    for (const [index, file] of seen.entries()) {
      if (JSON.stringify(file) !== JSON.stringify(expected[index])) expect(file).toEqual(expected[index]);
    }
  });

  it('costs the same number of SQL statements per page with 11 stores as with 1', async () => {
    const client = await server.newWorkspace();
    const eleven = (await sessionWithElevenStores(client)).session;
    const one = await sessionWithOneStore(client);

    const cost = async (sessionId: string, after?: string) => {
      const { result, statements } = await countStatements(() => page(client, sessionId, after));
      expect(result.edges).toHaveLength(PAGE);
      return statements;
    };
    const elevenFirst = await cost(eleven.id);
    const oneFirst = await cost(one.id);
    const elevenLater = await cost(eleven.id, (await page(client, eleven.id)).pageInfo.endCursor!);
    const oneLater = await cost(one.id, (await page(client, one.id)).pageInfo.endCursor!);
    // Authentication, the session, the page's paths, the entries at those paths, and totalCount.
    expect(elevenFirst).toBe(5);
    expect([oneFirst, elevenLater, oneLater]).toEqual([elevenFirst, elevenFirst, elevenFirst]);
  });
});
