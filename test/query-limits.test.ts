import { getIntrospectionQuery } from 'graphql';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { countStatements } from '../src/db/statement-count.js';
import {
  CONTENT_FIELD_COST,
  COUNT_SCAN_COST,
  MAX_QUERY_ALIASES,
  MAX_QUERY_COST,
  MAX_QUERY_DEPTH,
  MAX_QUERY_DIRECTIVES,
  MAX_QUERY_TOKENS,
} from '../src/domain/limits.js';
import { createMemory, createStore } from './support/builders.js';
import { TestClient, useTestServer, type GraphQLResponse } from './support/server.js';

const server = useTestServer();

const repeat = (count: number, text: string) => Array.from({ length: count }, (_, index) => text.replaceAll('#', String(index))).join(' ');

function expectAnswered(response: GraphQLResponse<unknown>) {
  expect(response.errors, JSON.stringify(response.errors)).toBeUndefined();
  expect(response.status).toBe(200);
}

function expectTooComplex(response: GraphQLResponse<unknown>, limit: string, max: number) {
  expect(response.status).toBe(400);
  expect(response.data ?? null).toBeNull();
  expect(response.errors).toHaveLength(1);
  expect(response.errors![0]!.extensions).toMatchObject({ code: 'QUERY_TOO_COMPLEX', limit, max });
  expect(response.errors![0]!.message).toContain(String(max));
}

/** The fields of a chain `levels` deep (levels ≥ 2) that the schema accepts: stores, memories, versions, and back. */
function nestedFields(levels: number): string[] {
  const chain = ['memoryStores(first: 1)', 'edges', 'node', 'memories(first: 1)', 'edges', 'node', 'versions(first: 1)', 'edges', 'node'];
  const hops: string[] = [];
  for (let level = 0; level < levels - 1; level += 1) {
    hops.push(level < chain.length ? chain[level]! : (level - chain.length) % 2 === 0 ? 'memory' : 'latestVersion');
  }
  return [...hops, '__typename'];
}

const nest = (fields: string[]): string => (fields.length === 1 ? fields[0]! : `${fields[0]} { ${nest(fields.slice(1))} }`);

function nestedQuery(levels: number): string {
  return `{ ${nest(nestedFields(levels))} }`;
}

/** The same chain with everything under `memoryStores` in a fragment. */
function nestedQueryWithFragment(levels: number): string {
  const [stores, ...rest] = nestedFields(levels);
  return `{ ${stores} { ...Deep } } fragment Deep on MemoryStoreConnection { ${nest(rest)} }`;
}

describe('query depth', () => {
  it(`answers a query nested ${MAX_QUERY_DEPTH} levels deep and refuses one ${MAX_QUERY_DEPTH + 1} deep with QUERY_TOO_COMPLEX`, async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await createMemory(client, store.id);
    expectAnswered(await client.send({ query: nestedQuery(MAX_QUERY_DEPTH) }));
    expectTooComplex(await client.send({ query: nestedQuery(MAX_QUERY_DEPTH + 1) }), 'depth', MAX_QUERY_DEPTH);
  });

  it('counts fields inside fragments where they are spread', async () => {
    const client = await server.newWorkspace();
    expectAnswered(await client.send({ query: nestedQueryWithFragment(MAX_QUERY_DEPTH) }));
    expectTooComplex(await client.send({ query: nestedQueryWithFragment(MAX_QUERY_DEPTH + 1) }), 'depth', MAX_QUERY_DEPTH);
  });

  it('admits the introspection query GraphiQL and code generators send', async () => {
    const client = await server.newWorkspace();
    const response = await client.send({ query: getIntrospectionQuery({ descriptions: true, directiveIsRepeatable: true, specifiedByUrl: true, schemaDescription: true, inputValueDeprecation: true }) });
    expectAnswered(response);
  });
});

describe('aliases, tokens and directives', () => {
  it(`answers ${MAX_QUERY_ALIASES} aliases and refuses ${MAX_QUERY_ALIASES + 1}`, async () => {
    const client = await server.newWorkspace();
    expectAnswered(await client.send({ query: `{ ${repeat(MAX_QUERY_ALIASES, 'a#: __typename')} }` }));
    expectTooComplex(await client.send({ query: `{ ${repeat(MAX_QUERY_ALIASES + 1, 'a#: __typename')} }` }), 'aliases', MAX_QUERY_ALIASES);
  });

  /**
   * A document of exactly `total` tokens: `{`, aliased `nodes(ids: […])` lookups (12 tokens
   * plus one per id), `}`. Distinct aliases keep validation linear.
   */
  function documentOfTokens(total: number): string {
    const lookups: string[] = [];
    for (let remaining = total - 2; remaining > 0; ) {
      const ids = Math.min(100, remaining - 12);
      lookups.push(`t${lookups.length}: nodes(ids: [${Array.from({ length: ids }, () => '"x"').join(' ')}]) { id }`);
      remaining -= 12 + ids;
    }
    return `{ ${lookups.join(' ')} }`;
  }

  it(`answers a document of ${MAX_QUERY_TOKENS} tokens and refuses one of ${MAX_QUERY_TOKENS + 1}`, async () => {
    const client = await server.newWorkspace();
    expectAnswered(await client.send({ query: documentOfTokens(MAX_QUERY_TOKENS) }));
    expectTooComplex(await client.send({ query: documentOfTokens(MAX_QUERY_TOKENS + 1) }), 'tokens', MAX_QUERY_TOKENS);
  });

  it('counts a long string literal as one token', async () => {
    const client = await server.newWorkspace();
    const response = await client.send({ query: `{ memory(id: "${'x'.repeat(50_000)}") { id } }` });
    expectAnswered(response);
  });

  it(`answers ${MAX_QUERY_DIRECTIVES} directives and refuses ${MAX_QUERY_DIRECTIVES + 1}`, async () => {
    const client = await server.newWorkspace();
    expectAnswered(await client.send({ query: `{ ${repeat(MAX_QUERY_DIRECTIVES, '__typename @include(if: true)')} }` }));
    expectTooComplex(
      await client.send({ query: `{ ${repeat(MAX_QUERY_DIRECTIVES + 1, '__typename @include(if: true)')} }` }),
      'directives',
      MAX_QUERY_DIRECTIVES,
    );
  });
});

describe('query cost', () => {
  /** Stores × memories with content: 1 + stores × (edges 1 + node 1 + memories (1 + 100 × (edges 1 + node 1 + content))). */
  const storesWithContent = (stores: number) => `memoryStores(first: ${stores}) { edges { node { memories(first: 100) { edges { node { content } } } } } }`;
  const costOfStoresWithContent = (stores: number) => 1 + stores * (1 + 1 + (1 + 100 * (1 + 1 + CONTENT_FIELD_COST)));

  /** Aliased one-store lookups (4 + 12 × m each) and `__typename`s (1 each) that cost exactly `cost`. */
  function padding(cost: number): string {
    const parts: string[] = [];
    let remaining = cost;
    while (remaining >= 16) {
      const memories = Math.min(100, Math.floor((remaining - 4) / 12));
      parts.push(`p${parts.length}: memoryStores(first: 1) { edges { node { memories(first: ${memories}) { edges { node { content } } } } } }`);
      remaining -= 4 + 12 * memories;
    }
    return [...parts, ...Array.from({ length: remaining }, () => '__typename')].join(' ');
  }

  it(`answers an operation costing exactly ${MAX_QUERY_COST} and refuses one costing ${MAX_QUERY_COST + 1}, stating both`, async () => {
    const client = await server.newWorkspace();
    const stores = Math.floor(MAX_QUERY_COST / costOfStoresWithContent(1)) - 1;
    const rest = MAX_QUERY_COST - costOfStoresWithContent(stores);
    expectAnswered(await client.send({ query: `{ ${storesWithContent(stores)} ${padding(rest)} }` }));
    const refused = await client.send({ query: `{ ${storesWithContent(stores)} ${padding(rest + 1)} }` });
    expectTooComplex(refused, 'cost', MAX_QUERY_COST);
    expect(refused.errors![0]!.extensions!.value).toBe(MAX_QUERY_COST + 1);
    expect(refused.errors![0]!.message).toContain(String(MAX_QUERY_COST + 1));
  });

  it('refuses 100 stores × 100 memories × 100 versions with content before executing anything', async () => {
    const client = await server.newWorkspace();
    await createStore(client);
    const query = `{ memoryStores(first: 100) { edges { node { memories(first: 100) { edges { node {
      versions(first: 100) { edges { node { content } } } } } } } } } }`;
    const { result, statements } = await countStatements(() => client.send({ query }));
    expectTooComplex(result, 'cost', MAX_QUERY_COST);
    // 1 + 100 × (1 + 1 + (1 + 100 × (1 + 1 + (1 + 100 × (1 + 1 + 10)))))
    expect(result.errors![0]!.extensions!.value).toBe(12_030_301);
    // Refused before any statement: not even the key is looked up (the token was spent first).
    expect(statements).toBe(0);
  });

  it('answers the 20 × 20 × 5 dashboard with content and totals', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await createMemory(client, store.id, { path: 'notes/a.md', content: 'alpha' });
    const query = `query Dashboard($stores: Int!, $memories: Int!, $versions: Int!) {
      memoryStores(first: $stores) { totalCount edges { node { id name entryCount totalSize
        memories(first: $memories) { totalCount edges { node { id path contentSizeBytes contentSha256 updatedAt content
          versions(first: $versions) { totalCount edges { node { id operation contentSizeBytes createdAt content } } } } } } } } } }`;
    const response = await client.send({ query, variables: { stores: 20, memories: 20, versions: 5 } });
    expectAnswered(response);
    expect(response.data.memoryStores.edges[0].node.memories.edges[0].node.content).toBe('alpha');
  });

  it('reads page sizes from variables as well as literals', async () => {
    const client = await server.newWorkspace();
    const query = `query ($n: Int) { memoryStores(first: $n) { edges { node { memories(first: 100) { edges { node { content } } } } } } }`;
    expectAnswered(await client.send({ query, variables: { n: 20 } }));
    expectTooComplex(await client.send({ query, variables: { n: 100 } }), 'cost', MAX_QUERY_COST);
  });

  it(`prices a count that reads what it counts at ${COUNT_SCAN_COST}, whatever the page: 30 aliases of filtered version counts are refused, 19 answered`, async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const counts = (aliases: number) =>
      Array.from({ length: aliases }, (_, index) => `c${index}: versions(first: 0, createdAfter: "2026-01-${String(index + 1).padStart(2, '0')}T00:00:00Z") { totalCount }`).join(' ');
    const query = (aliases: number) => `query ($id: ID!) { memoryStore(id: $id) { ${counts(aliases)} } }`;
    const { result, statements } = await countStatements(() => client.send({ query: query(30), variables: { id: store.id } }));
    expectTooComplex(result, 'cost', MAX_QUERY_COST);
    // 1 (memoryStore) + 30 × (the connection 1 + its count)
    expect(result.errors![0]!.extensions!.value).toBe(1 + 30 * (1 + COUNT_SCAN_COST));
    expect(statements).toBe(0);
    expectAnswered(await client.send({ query: query(19), variables: { id: store.id } }));
  });

  it('prices counts that a counter answers at 1: a store\'s memories without a prefix, a memory\'s versions without filters', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    await createMemory(client, store.id, { path: 'notes/a.md', content: 'alpha' });
    const kept = `{ memoryStores(first: 100) { edges { node { memories(first: 100) { totalCount edges { node { versions(first: 0) { totalCount } } } } } } } }`;
    const answered = await client.send({ query: kept });
    expectAnswered(answered);
    expect(answered.data.memoryStores.edges[0].node.memories).toEqual({ totalCount: 1, edges: [{ node: { versions: { totalCount: 1 } } }] });
    // With a prefix, each of the 100 stores' counts reads memories: 100 × COUNT_SCAN_COST.
    const scanned = kept.replace('memories(first: 100)', 'memories(first: 100, pathPrefix: "notes/")');
    expectTooComplex(await client.send({ query: scanned }), 'cost', MAX_QUERY_COST);
  });

  it('measures only the operation a request names', async () => {
    const client = await server.newWorkspace();
    const query = `query Cheap { memoryStores(first: 1) { totalCount } } query Costly { ${storesWithContent(100)} }`;
    expectAnswered(await client.send({ query, operationName: 'Cheap' }));
    expectTooComplex(await client.send({ query, operationName: 'Costly' }), 'cost', MAX_QUERY_COST);
  });
});

describe('introspection and suggestions', () => {
  const appWith = (config: Parameters<typeof createApp>[0]['config']) => createApp({ config, database: server.database.handle });

  it('are off by default in production: __schema is refused with INTROSPECTION_DISABLED and errors suggest no names', async () => {
    const admin = await server.newWorkspace();
    const client = new TestClient(appWith({ nodeEnv: 'production', graphiql: false }), admin.token, admin.workspaceId);
    const introspection = await client.send({ query: '{ __schema { queryType { name } } }' });
    expect(introspection.status).toBe(400);
    expect(introspection.errors?.[0]?.extensions?.code).toBe('INTROSPECTION_DISABLED');
    expectAnswered(await client.send({ query: '{ __typename }' }));
    const typo = await client.send({ query: '{ memoryStorez { totalCount } }' });
    expect(typo.errors?.[0]?.message).toBe('Cannot query field "memoryStorez" on type "Query".');
  });

  it('are on outside production, and in production when MEMSTORE_INTROSPECTION says so', async () => {
    const admin = await server.newWorkspace();
    for (const config of [{ nodeEnv: 'development' as const, graphiql: true }, { nodeEnv: 'production' as const, graphiql: false, introspection: true }]) {
      const client = new TestClient(appWith(config), admin.token, admin.workspaceId);
      expectAnswered(await client.send({ query: '{ __schema { queryType { name } } }' }));
      const typo = await client.send({ query: '{ memoryStorez { totalCount } }' });
      expect(typo.errors?.[0]?.message).toMatch(/Did you mean .*"memoryStores"/);
    }
  });
});

describe('extensions.cost', () => {
  // `memoryStores(first: 10) { totalCount edges { node { id name } } }`: the list, a count that
  // must count, and 10 × (edge, node, id, name).
  const READ = '{ memoryStores(first: 10) { totalCount edges { node { id name } } } }';
  const READ_COST = 1 + COUNT_SCAN_COST + 10 * 4;

  it.each([
    ['the lean path', {}],
    ['Yoga', { leanPath: false }],
  ] as const)('is on every answer to an operation that was estimated, on %s: compiled reads, resolver reads, mutations, refusals', async (_path, options) => {
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, ...options });
    const admin = await server.newWorkspace();
    const client = new TestClient(app, admin.token, admin.workspaceId);
    const compiled = await client.send({ query: READ });
    expectAnswered(compiled);
    expect(compiled.extensions).toEqual({ cost: { estimated: READ_COST, limit: MAX_QUERY_COST } });
    // A cursor sends it to the resolvers: one more field per edge.
    const resolved = await client.send({ query: '{ memoryStores(first: 10) { totalCount edges { cursor node { id name } } } }' });
    expectAnswered(resolved);
    expect(resolved.extensions).toEqual({ cost: { estimated: READ_COST + 10, limit: MAX_QUERY_COST } });
    const mutation = await client.send({ query: 'mutation { createMemoryStore(input: { name: "costed" }) { __typename } }' });
    expectAnswered(mutation);
    expect(mutation.extensions).toEqual({ cost: { estimated: 2, limit: MAX_QUERY_COST } });
    const refused = await client.send({ query: `{ ${'memoryStores(first: 100) { edges { node { memories(first: 100) { edges { node { content } } } } } }'} }` });
    expect(refused.status).toBe(400);
    expect(refused.extensions).toEqual({ cost: { estimated: 1 + 100 * (1 + 1 + (1 + 100 * (1 + 1 + CONTENT_FIELD_COST))), limit: MAX_QUERY_COST } });
    // An error in execution keeps it.
    const failed = await client.send({ query: '{ memoryStores(first: 1000) { totalCount } }' });
    expect(failed.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
    expect(failed.extensions).toEqual({ cost: { estimated: 1 + COUNT_SCAN_COST, limit: MAX_QUERY_COST } });
    const get = await app.fetch(`http://memstore.test/graphql?query=${encodeURIComponent(READ)}`, { headers: { authorization: `Bearer ${admin.token}`, accept: 'application/json' } });
    expect(((await get.json()) as { extensions: unknown }).extensions).toEqual({ cost: { estimated: READ_COST, limit: MAX_QUERY_COST } });
  });

  it('is absent where no operation was estimated: a document that does not parse or validate, a missing key', async () => {
    const admin = await server.newWorkspace();
    expect((await admin.send({ query: '{ memoryStores(' })).extensions).toBeUndefined();
    expect((await admin.send({ query: '{ memoryStorez }' })).extensions).toBeUndefined();
    expect((await new TestClient(admin.app, null, '').send({ query: READ })).extensions).toBeUndefined();
  });
});
