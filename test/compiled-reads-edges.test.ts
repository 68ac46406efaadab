import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { recordStatements } from '../src/db/statement-count.js';
import { archiveStore, createMemory, createStore, deleteMemory, newPair, startSession, updateMemory } from './support/builders.js';
import { TestClient, useTestServer, type TestServer } from './support/server.js';

/**
 * Compiled reads against the resolvers (compiledReads: false) on the same workspace, for
 * queries at the edges: empty pages, aliases and repeated fields, fragments on unions,
 * astral, unassigned and invalid text in prefixes and folders, redacted, restored, deleted
 * and another workspace's ids, ids of another kind or not ids at all, explicit nulls, ties
 * in orderings and variables' defaults. Whether or not the compiler covers a query, the
 * answer (status, data and errors) is the resolvers' (from a red-team read, 2026-12-07).
 */
interface Both {
  compiled: TestClient;
  resolvers: TestClient;
}

function bothOf(server: TestServer, admin: TestClient): Both {
  const resolvers = new TestClient(createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, compiledReads: false }), admin.token, admin.workspaceId);
  return { compiled: admin, resolvers };
}

/** A compiled statement selects the answer `as data` with the key, or a search's hits `as hit_json`. */
const isCompiled = (text: string) => / as data,$/m.test(text) || / as hit_json$/m.test(text);

async function askBoth(both: Both, query: string, variables?: Record<string, unknown>) {
  const { result: compiled, statements } = await recordStatements(() => both.compiled.send({ query, variables }));
  const resolvers = await both.resolvers.send({ query, variables });
  return { compiled, resolvers, ranCompiled: statements.some((statement) => isCompiled(statement.sql)) };
}

const server = useTestServer();
let both: Both;
let ids: { store: string; archived: string; empty: string; memory: string; deep: string; restored: string; deleted: string; foreignStore: string; foreignMemory: string };

beforeAll(async () => {
  const admin = await server.newWorkspace();
  both = bothOf(server, admin);
  const store = await createStore(admin, { name: 'main', metadata: { '1': 'one', b: 'x', a: 'y', '0': 'z', '10': 't', '4294967295': 'big', '-1': 'neg', '01': 'lead' } });
  const paths = ['a.md', 'a/b.md', 'a/b/c.md', 'a_b.md', 'B.md', 'ü/é.md', 'ü/z.md', '😀/x.md', 'z/😀.md', '\uFFFD.md', 'a/\u00e9.md', 'a/e\u0301.md', 'x y/z.md', '"q"/r.md'];
  let memory = '';
  let deep = '';
  for (const [index, path] of paths.entries()) {
    const written = await createMemory(admin, store.id, { path, content: `c ${index} ${path}`, metadata: { k: String(index) } });
    if (index === 0) memory = written.id;
    if (index === 2) deep = written.id;
  }
  for (let index = 0; index < 4; index += 1) await updateMemory(admin, { id: memory, content: `v${index}` });
  // A deleted and a restored memory.
  const gone = await createMemory(admin, store.id, { path: 'gone.md', content: 'gone' });
  await deleteMemory(admin, gone.id);
  const back = await createMemory(admin, store.id, { path: 'back.md', content: 'back' });
  const backVersions = await admin.send({ query: 'query ($id: ID!) { memory(id: $id) { versions(first: 1) { edges { node { id } } } } }', variables: { id: back.id } });
  await deleteMemory(admin, back.id);
  await admin.send({ query: 'mutation ($id: ID!) { restoreMemoryVersion(input: { id: $id }) { __typename } }', variables: { id: backVersions.data.memory.versions.edges[0].node.id } });
  // A redacted version.
  const versions = await admin.send({ query: 'query ($id: ID!) { memory(id: $id) { versions(first: 2) { edges { node { id } } } } }', variables: { id: memory } });
  await admin.send({ query: 'mutation ($id: ID!) { redactMemoryVersion(input: { id: $id }) { __typename } }', variables: { id: versions.data.memory.versions.edges[1].node.id } });
  const archived = await createStore(admin, { name: 'archived' });
  await createMemory(admin, archived.id, { path: 'kept.md', content: 'kept' });
  await archiveStore(admin, archived.id);
  const empty = await createStore(admin, { name: 'empty' });
  await startSession(admin, newPair());
  // Ties: several memories written at the same instant.
  await server.db.execute(sql`update memories set updated_at = '2026-01-01T00:00:00.000Z', created_at = '2026-01-01T00:00:00.000Z' where workspace_id = ${admin.workspaceId} and path like 'a%'`);
  const other = await server.newWorkspace();
  const foreignStore = await createStore(other, { name: 'foreign' });
  const foreignMemory = await createMemory(other, foreignStore.id, { path: 'a.md' });
  ids = { store: store.id, archived: archived.id, empty: empty.id, memory, deep, restored: back.id, deleted: gone.id, foreignStore: foreignStore.id, foreignMemory: foreignMemory.id };
});

const cases: [string, (ids: Record<string, string>) => Record<string, unknown> | undefined][] = [
  ['{ memoryStores(first: 0) { totalCount pageInfo { hasNextPage hasPreviousPage } edges { node { id } } } }', () => undefined],
  ['{ memoryStores(first: 100) { totalCount pageInfo { hasNextPage } edges { node { id name status archivedAt entryCount totalSize metadata } } } }', () => undefined],
  ['{ a: memoryStores(first: 1) { edges { node { id } } } b: memoryStores(first: 2) { totalCount edges { node { name } } } }', () => undefined],
  ['{ memoryStores(first: 3) { e1: edges { node { id } } totalCount pageInfo { hasNextPage } e2: edges { __typename node { __typename name } } __typename } }', () => undefined],
  ['{ memoryStores(first: 3) { pageInfo { hasNextPage } } }', () => undefined],
  ['{ memoryStores(first: 3) { totalCount } }', () => undefined],
  ['{ memoryStores(first: 3) { edges { node { id } } } memoryStores(first: 3) { edges { node { id } } } }', () => undefined],
  ['{ __typename a: __typename }', () => undefined],
  ['query ($id: ID!) { memoryStore(id: $id) { metadata } }', (i) => ({ id: i.store })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount pageInfo { hasNextPage } edges { node { path } } } } }', (i) => ({ id: i.store, p: 'a' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store, p: 'ü' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store, p: '😀' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store, p: '\uFFFF' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store, p: '\uD83D' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store, p: '\u0000' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store, p: '\uDBFF\uDFFF' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 100, pathPrefix: $p) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store, p: 'a/e' })],
  ['query ($id: ID!, $p: String) { memoryStore(id: $id) { memories(first: 2, pathPrefix: $p) { totalCount pageInfo { hasNextPage } edges { node { path } } } } }', (i) => ({ id: i.store, p: '' })],
  ...['PATH_ASC', 'PATH_DESC', 'UPDATED_AT_DESC', 'CREATED_AT_DESC'].map(
    (order): [string, (ids: Record<string, string>) => Record<string, unknown>] => [
      'query ($id: ID!, $o: MemoryOrder!) { memoryStore(id: $id) { memories(first: 5, orderBy: $o) { pageInfo { hasNextPage } edges { node { path updatedAt } } } } }',
      (i) => ({ id: i.store, o: order }),
    ],
  ),
  ['query ($id: ID!) { memoryStore(id: $id) { memories(first: 0) { totalCount pageInfo { hasNextPage } edges { node { path } } } } }', (i) => ({ id: i.store })],
  ['query ($id: ID!) { memoryStore(id: $id) { memories(first: 0) { pageInfo { hasNextPage } } } }', (i) => ({ id: i.empty })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries(first: 0) { totalCount pageInfo { hasNextPage } edges { node { __typename } } } } }', (i) => ({ id: i.store })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries(first: 100) { totalCount pageInfo { hasNextPage } edges { __typename node { __typename ... on MemoryFolder { path name memoryCount totalSize updatedAt } ... on Memory { id path versions(first: 2) { totalCount edges { node { number operation } } } } } } } } }', (i) => ({ id: i.store })],
  ['query ($id: ID!, $f: String!) { memoryStore(id: $id) { entries(first: 100, folder: $f) { totalCount pageInfo { hasNextPage } edges { node { __typename ... on MemoryFolder { path name } ... on Memory { path } } } } } }', (i) => ({ id: i.store, f: 'a/' })],
  ['query ($id: ID!, $f: String!) { memoryStore(id: $id) { entries(first: 100, folder: $f) { totalCount edges { node { __typename ... on MemoryFolder { path name } ... on Memory { path } } } } } }', (i) => ({ id: i.store, f: 'ü/' })],
  ['query ($id: ID!, $f: String!) { memoryStore(id: $id) { entries(first: 100, folder: $f) { totalCount edges { node { __typename ... on MemoryFolder { path name } ... on Memory { path } } } } } }', (i) => ({ id: i.store, f: '😀/' })],
  ['query ($id: ID!, $f: String!) { memoryStore(id: $id) { entries(first: 100, folder: $f) { totalCount edges { node { __typename ... on MemoryFolder { path name } ... on Memory { path } } } } } }', (i) => ({ id: i.store, f: 'a//' })],
  ['query ($id: ID!, $f: String!) { memoryStore(id: $id) { entries(first: 100, folder: $f) { totalCount edges { node { __typename ... on MemoryFolder { path name } ... on Memory { path } } } } } }', (i) => ({ id: i.store, f: '/' })],
  ['query ($id: ID!, $f: String!) { memoryStore(id: $id) { entries(first: 100, folder: $f) { totalCount edges { node { __typename ... on MemoryFolder { path name } ... on Memory { path } } } } } }', (i) => ({ id: i.store, f: 'nope/' })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries(first: 2) { pageInfo { hasNextPage } } } }', (i) => ({ id: i.store })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries(first: 3) { edges { node { ... on MemoryEntry { __typename } ... on Memory { x: path } ... on MemoryFolder { x: name } } } } } }', (i) => ({ id: i.store })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries(first: 3) { edges { node { ...E } } } } } fragment E on MemoryEntry { ... on Memory { path } ...F __typename } fragment F on MemoryFolder { name __typename }', (i) => ({ id: i.store })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries(first: 3) { edges { node { ... on Memory { id } } } } } }', (i) => ({ id: i.store })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries(first: 3) { edges { node { ... { __typename } } } } } }', (i) => ({ id: i.store })],
  ['query ($id: ID!) { memoryStore(id: $id) { entries { totalCount } } }', (i) => ({ id: i.archived })],
  ['query ($id: ID!) { memoryStore(id: $id) { status archivedAt entryCount memories { totalCount edges { node { path content } } } } }', (i) => ({ id: i.archived })],
  ['query ($id: ID!) { memory(id: $id) { path versions(first: 100) { totalCount pageInfo { hasNextPage hasPreviousPage __typename } edges { node { number operation content redacted redactedAt path } } } } }', (i) => ({ id: i.memory })],
  ['query ($id: ID!) { memory(id: $id) { versions(first: 100) { totalCount edges { node { number operation content } } } } }', (i) => ({ id: i.restored })],
  ['query ($id: ID!) { memory(id: $id) { id } }', (i) => ({ id: i.deleted })],
  ['query ($id: ID!) { memory(id: $id) { id } }', (i) => ({ id: i.foreignMemory })],
  ['query ($id: ID!) { memoryStore(id: $id) { id } }', (i) => ({ id: i.foreignStore })],
  ['query ($id: ID!) { memoryStore(id: $id) { id } }', (i) => ({ id: i.memory })],
  ['query ($id: ID!) { memory(id: $id) { id } }', (i) => ({ id: i.memory!.toUpperCase() })],
  ['query ($id: ID!) { memory(id: $id) { id } }', () => ({ id: 'mem_' })],
  ['query ($id: ID!) { memory(id: $id) { id } }', () => ({ id: 12 })],
  ['query ($id: ID!) { memory(id: $id) { id } }', (i) => ({ id: ` ${i.memory}` })],
  ['query ($id: ID!) { memory(id: $id) { path: id id: path } }', (i) => ({ id: i.memory })],
  ['query ($id: ID!) { memory(id: $id) { ...M ...M } } fragment M on Memory { path metadata }', (i) => ({ id: i.memory })],
  ['query ($id: ID!, $n: Int) { memory(id: $id) { versions(first: $n) { totalCount edges { node { number } } } } }', (i) => ({ id: i.memory, n: null })],
  ['query ($id: ID!, $n: Int) { memory(id: $id) { versions(first: $n) { totalCount edges { node { number } } } } }', (i) => ({ id: i.memory, n: -1 })],
  ['query ($id: ID!, $n: Int) { memory(id: $id) { versions(first: $n) { totalCount edges { node { number } } } } }', (i) => ({ id: i.memory, n: 101 })],
  ['query ($id: ID!, $a: String) { memory(id: $id) { versions(first: 1, after: $a) { edges { node { number } } } } }', (i) => ({ id: i.memory, a: null })],
  ['query ($id: ID!, $l: Int) { memory(id: $id) { versions(first: 1, last: $l) { edges { node { number } } } } }', (i) => ({ id: i.memory, l: null })],
  ['query ($id: ID!, $s: ID) { memory(id: $id) { versions(first: 3, sessionId: $s, apiKeyId: null) { totalCount edges { node { number } } } } }', (i) => ({ id: i.memory, s: null })],
  ['query ($id: ID!) { memory(id: $id) { versions(first: 3, operation: null) { totalCount edges { node { number } } } } }', (i) => ({ id: i.memory })],
  ['query ($id: ID!) { memoryStore(id: $id) { memories(first: 3, pathPrefix: null, after: null, before: null, last: null) { totalCount edges { node { path } } } } }', (i) => ({ id: i.store })],
  ['query ($a: ID!, $b: ID!) { a: memory(id: $a) { id } b: memory(id: $b) { id } c: memory(id: $a) { path } }', (i) => ({ a: i.memory, b: i.deep })],
  ['query ($a: ID!) { a: memory(id: $a) { id } b: memoryStore(id: $a) { id } }', (i) => ({ a: i.memory })],
  ['query ($a: ID = "mem_00000000000000000000") { memory(id: $a) { id } }', () => ({})],
  ['query ($a: ID = "mem_00000000000000000000") { memory(id: $a) { id } }', (i) => ({ a: i.memory })],
];

describe('compiled reads on queries at the edges', () => {
  it.each(cases.map(([query, variables], index) => [index + 1, query.length > 110 ? `${query.slice(0, 110)}…` : query, query, variables] as const))('answer as the resolvers do (%i: %s)', async (_number, _name, query, variables) => {
    const given = variables(ids);
    const { compiled, resolvers, ranCompiled } = await askBoth(both, query, given);
    expect({ status: compiled.status, data: compiled.data, errors: compiled.errors }, `${query} ${JSON.stringify(given)} compiled ran: ${ranCompiled}`).toEqual({
      status: resolvers.status,
      data: resolvers.data,
      errors: resolvers.errors,
    });
  });
});
