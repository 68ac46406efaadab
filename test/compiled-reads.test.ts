import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, type OperationDefinitionNode } from 'graphql';
import { createApp } from '../src/app.js';
import { authenticate, hashToken } from '../src/domain/api-keys.js';
import { schema } from '../src/graphql/schema.js';
import { compileRead } from '../src/read-compiler/compile.js';
import { countStatements, recordStatements } from '../src/db/statement-count.js';
import { archiveStore, createMemory, createStore, deleteMemory, newPair, startSession, updateMemory } from './support/builders.js';
import { TestClient, useTestServer } from './support/server.js';
import {
  CONTENT_MAX_BYTES,
  MEMORY_METADATA_MAX_KEYS,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  PATH_MAX_BYTES,
  PATH_SEGMENT_MAX_BYTES,
  STORE_DESCRIPTION_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from '../src/domain/limits.js';

const server = useTestServer();

/** The same workspace through compiled reads and through the resolvers alone. */
interface Both {
  compiled: TestClient;
  resolvers: TestClient;
  storeIds: string[];
  memoryIds: string[];
}

let both: Both;

beforeAll(async () => {
  const admin = await server.newWorkspace();
  const resolvers = new TestClient(
    createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, compiledReads: false }),
    admin.token,
    admin.workspaceId,
  );
  const odd = await createStore(admin, { name: 'Odd "quotes" \\ and ünïcödé 🚀', description: 'line one\nline two\ttab', metadata: { 'key "q"': 'välue\\', emoji: '😀' } });
  const plain = await createStore(admin, { name: 'plain' });
  const archived = await createStore(admin, { name: 'archived later' });
  const memoryIds: string[] = [];
  const paths = ['a.md', 'a/b.md', 'a_b.md', 'B.md', 'notes/ü.md', 'notes/"quoted".md', 'notes/😀.md', 'z/deep/path/file.md'];
  for (const [index, path] of paths.entries()) {
    const memory = await createMemory(admin, odd.id, { path, content: `content ${index}\n"quoted" \\ 😀 ${'x'.repeat(index * 100)}`, metadata: { index: String(index) } });
    memoryIds.push(memory.id);
    if (index % 2 === 0) await updateMemory(admin, { id: memory.id, content: `updated ${index} ✓`, expectedContentSha256: memory.contentSha256 });
  }
  for (let index = 0; index < 25; index += 1) await createMemory(admin, plain.id, { path: `bulk/${String(index).padStart(3, '0')}.md` });
  const doomed = await createMemory(admin, archived.id, { path: 'doomed.md' });
  await deleteMemory(admin, doomed.id);
  await createMemory(admin, archived.id, { path: 'kept.md' });
  await archiveStore(admin, archived.id);
  // A redacted version.
  const versions = await admin.send({ query: 'query ($id: ID!) { memory(id: $id) { versions(first: 1) { edges { node { id } } } } }', variables: { id: memoryIds[0] } });
  const redacted = await admin.send({
    query: 'mutation ($id: ID!) { redactMemoryVersion(input: { id: $id }) { __typename } }',
    variables: { id: versions.data.memory.versions.edges[0].node.id },
  });
  expect(redacted.data.redactMemoryVersion.__typename).toBe('RedactMemoryVersionSuccess');
  // A system-managed default store.
  await startSession(admin, newPair());
  // Another workspace's data must never show.
  const other = await server.newWorkspace();
  const foreign = await createStore(other, { name: 'foreign' });
  await createMemory(other, foreign.id, { path: 'a.md' });
  both = { compiled: admin, resolvers, storeIds: [odd.id, plain.id, archived.id, foreign.id], memoryIds: [...memoryIds, doomed.id] };
});

const STORE_FIELDS = 'id name description status entryCount totalSize metadata systemManaged identityId createdAt updatedAt archivedAt __typename';
const MEMORY_FIELDS = 'id memoryStoreId path content contentSizeBytes contentSha256 metadata createdAt updatedAt __typename';
const VERSION_FIELDS = 'id memoryStoreId memoryId path content contentSizeBytes contentSha256 operation number redacted redactedAt createdAt __typename';

/** What marks a compiled statement: it selects the answer `as data` with the key, or a search's hits `as hit_json`. */
const isCompiled = (text: string) => / as data,$/m.test(text) || / as hit_json$/m.test(text);

async function expectSameAnswer(query: string, variables?: Record<string, unknown>, compiledStatements?: number) {
  const { result: compiled, statements } = await countStatements(() => both.compiled.send({ query, variables }));
  const resolvers = await both.resolvers.send({ query, variables });
  expect(compiled.status).toBe(resolvers.status);
  expect({ data: compiled.data, errors: compiled.errors, extensions: compiled.extensions }).toEqual({ data: resolvers.data, errors: resolvers.errors, extensions: resolvers.extensions });
  if (compiledStatements !== undefined) expect(statements, query).toBe(compiledStatements);
  return compiled;
}

describe('reads compiled to one SQL statement', () => {
  it('answer the dashboard with every plain field exactly as the resolvers do, in one statement that also authenticates', async () => {
    const query = `query ($stores: Int, $memories: Int, $versions: Int) {
      memoryStores(first: $stores) { __typename totalCount pageInfo { hasNextPage hasPreviousPage __typename }
        edges { __typename node { ${STORE_FIELDS}
          memories(first: $memories) { totalCount pageInfo { hasNextPage } edges { node { ${MEMORY_FIELDS}
            versions(first: $versions) { totalCount pageInfo { hasPreviousPage hasNextPage } edges { node { ${VERSION_FIELDS} } } } } } } } } } }`;
    const answer = await expectSameAnswer(query, { stores: 5, memories: 3, versions: 2 }, 1);
    expect(answer.data.memoryStores.totalCount).toBe(4);
    await expectSameAnswer(query, { stores: 2, memories: 5, versions: 1 }, 1);
    await expectSameAnswer(query, { stores: 0, memories: 0, versions: 0 }, 1);
    // Pages whose content and metadata could, at their largest, pass the answer's budget
    // (MAX_RESPONSE_BYTES) are answered by the resolvers, which spend it as they go.
    const large = await countStatements(() => both.compiled.send({ query, variables: { stores: 5, memories: 10, versions: 3 } }));
    expect(large.statements).toBeGreaterThan(1);
    await expectSameAnswer(query, { stores: 5, memories: 10, versions: 3 });
    await expectSameAnswer('{ memoryStores { totalCount edges { node { id memories { totalCount edges { node { path } } } } } } }', undefined, 1);
    // Connections that read no rows: only counts, names and constants.
    await expectSameAnswer('{ memoryStores(first: 3) { pageInfo { __typename hasPreviousPage } } }', undefined, 1);
    await expectSameAnswer('{ memoryStores(first: 0) { totalCount pageInfo { hasPreviousPage } edges { node { id } } } }', undefined, 1);
  });

  it('write the answer\'s JSON byte for byte as the resolvers\' answer is written: compact, escaped alike, keys in order', async () => {
    const query = `query ($stores: Int, $memories: Int, $versions: Int) {
      memoryStores(first: $stores) { __typename totalCount pageInfo { hasNextPage hasPreviousPage __typename }
        edges { __typename node { ${STORE_FIELDS} stored: name
          memories(first: $memories) { totalCount pageInfo { hasNextPage } edges { node { ${MEMORY_FIELDS}
            versions(first: $versions) { totalCount edges { node { ${VERSION_FIELDS} } } } } } } } } }
      folders: memoryStore(id: "${both.storeIds[0]}") { entries(first: 4) { __typename totalCount pageInfo { hasNextPage } edges { __typename node {
        __typename ... on MemoryFolder { path name memoryCount } ... on Memory { id path metadata } } } } }
      missing: memory(id: "mem_missing") { id }
      one: memory(id: "${both.memoryIds[1]}") { path content metadata } }`;
    const body = async (client: TestClient) => {
      const response = await client.app.fetch('http://memstore.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` },
        body: JSON.stringify({ query, variables: { stores: 5, memories: 3, versions: 2 } }),
      });
      return response.text();
    };
    const { result: compiled, statements } = await recordStatements(() => body(both.compiled));
    expect(statements).toHaveLength(1);
    // What marks a compiled statement where the resolvers' answers are told apart from it.
    expect(statements[0]!.sql).toMatch(/ as data,$/m);
    const resolved = await body(both.resolvers);
    // The odd store's quotes, backslashes, control characters and four-byte characters are in it.
    expect(compiled).toContain('Odd \\"quotes\\" \\\\ and ünïcödé 🚀');
    expect(compiled).toBe(resolved);
  });

  it('answer padded, empty, mixed-case and maximal values exactly as the resolvers do', async () => {
    // Values a rendering change would alter: whitespace at both ends, empty text, mixed case,
    // every limit at its largest (four-byte characters where characters count).
    const admin = await server.newWorkspace();
    const resolvers = new TestClient(createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, compiledReads: false }), admin.token, admin.workspaceId);
    const wide = (characters: number) => '\u{1F600}'.repeat(characters);
    const maxMetadata = (keys: number) =>
      Object.fromEntries(Array.from({ length: keys }, (_, index) => [`${String(index).padStart(2, '0')}${wide(METADATA_KEY_MAX_CHARACTERS - 2)}`, ` ${wide(METADATA_VALUE_MAX_CHARACTERS - 2)} `]));
    const padded = await createStore(admin, { name: '  Padded MiXeD Name  ', description: '  padded\tdescription  \n', metadata: { ' Spaced Key ': '  Value  ', UPPER: 'MiXeD' } });
    await createStore(admin, { name: `${'Ä'.repeat(STORE_NAME_MAX_CHARACTERS - 1)}\u{1F600}`, description: wide(STORE_DESCRIPTION_MAX_CHARACTERS), metadata: maxMetadata(STORE_METADATA_MAX_KEYS) });
    await createStore(admin, { name: 'e', description: '' });
    const segment = (length: number, fill: string) => fill.repeat(length);
    const longPath = Array.from({ length: 4 }, (_, index) => segment(PATH_SEGMENT_MAX_BYTES, String.fromCharCode(65 + index))).join('/');
    for (const [path, content] of [
      ['MiXeD/CaSe.MD', '  padded content  \n\n'],
      ['empty.md', ''],
      [longPath.slice(0, PATH_MAX_BYTES), wide(CONTENT_MAX_BYTES / 4)],
      ['meta.md', 'x'],
    ] as const) {
      const memory = await createMemory(admin, padded.id, { path, content, metadata: path === 'meta.md' ? maxMetadata(MEMORY_METADATA_MAX_KEYS) : { ' a ': ' B ' } });
      // Trailing spaces on the newest version; the largest content stays at the limit.
      const next = Buffer.byteLength(content) === CONTENT_MAX_BYTES ? `${wide(CONTENT_MAX_BYTES / 4 - 1)}    ` : `${content}   `;
      await updateMemory(admin, { id: memory.id, content: next });
    }
    const both = async (query: string, variables?: Record<string, unknown>) => {
      const { result: compiled, statements } = await countStatements(() => admin.send({ query, variables }));
      const expected = await resolvers.send({ query, variables });
      expect(statements, query).toBe(1);
      expect({ data: compiled.data, errors: compiled.errors, extensions: compiled.extensions }).toEqual({ data: expected.data, errors: expected.errors, extensions: expected.extensions });
      return compiled;
    };
    const answer = await both(`{ memoryStores(first: 3) { edges { node { ${STORE_FIELDS}
      memories(first: 4) { edges { node { ${MEMORY_FIELDS} versions(first: 2) { edges { node { ${VERSION_FIELDS} } } } } } } } } } }`);
    const [, , first] = answer.data.memoryStores.edges;
    expect(first.node.name).toBe('  Padded MiXeD Name  ');
    expect(first.node.memories.edges.map((edge: { node: { content: string } }) => edge.node.content.length)).toContain(3);
    await both('query ($id: ID!) { memoryStore(id: $id) { description metadata memories(pathPrefix: "MiXeD/") { edges { node { path content } } } } }', { id: padded.id });
  });

  it('answer memory(id:) and memoryStore(id:) as the resolvers do: found, missing, another workspace\'s, another kind\'s, not an id at all', async () => {
    const query = `query ($memory: ID!, $store: ID!) { memory(id: $memory) { ${MEMORY_FIELDS} versions { edges { node { ${VERSION_FIELDS} } } } }
      store: memoryStore(id: $store) { ${STORE_FIELDS} memories(first: 3) { edges { node { path } } } } }`;
    for (const memory of [...both.memoryIds, 'mem_missing', both.storeIds[0]!, 'mem_nul\u0000inside', '\uD800']) {
      for (const store of [...both.storeIds, 'memstore_missing', both.memoryIds[0]!, 'memstore_\u0000']) {
        await expectSameAnswer(query, { memory, store }, 1);
      }
    }
  });

  it('filter by path prefix and order memories every way, with the same pages', async () => {
    const query = `query ($store: ID!, $prefix: String, $order: MemoryOrder!, $first: Int) {
      memoryStore(id: $store) { memories(first: $first, pathPrefix: $prefix, orderBy: $order) { totalCount pageInfo { hasNextPage } edges { node { path } } } } }`;
    for (const prefix of [null, '', 'a', 'a/', 'notes/', 'notes/\u{1F600}', 'B', 'b', 'zz', '\u0000', '\uD800', '\u{10FFFF}']) {
      for (const order of ['PATH_ASC', 'PATH_DESC', 'UPDATED_AT_DESC', 'CREATED_AT_DESC']) {
        await expectSameAnswer(query, { store: both.storeIds[0], prefix, order, first: 4 }, 1);
      }
    }
  });

  it('answer folder levels (MemoryStore.entries) as the resolvers do: folders, then memories, by name in byte order, in one statement', async () => {
    const query = `query ($store: ID!, $folder: String!, $first: Int) {
      memoryStore(id: $store) { entries(folder: $folder, first: $first) { __typename totalCount pageInfo { hasNextPage hasPreviousPage __typename }
        edges { __typename node { __typename ... on MemoryFolder { path name memoryCount totalSize updatedAt __typename }
          ... on Memory { ${MEMORY_FIELDS} versions(first: 1) { totalCount edges { node { number content } } } } } } } } }`;
    for (const store of both.storeIds) {
      for (const folder of ['', 'a/', 'notes/', 'z/', 'z/deep/', 'z/deep/path/', 'bulk/', 'missing/']) {
        for (const first of [0, 1, 2, 3, 30, null]) await expectSameAnswer(query, { store, folder, first }, 1);
      }
    }
    // Through a page of stores, with fragments on the union and on its members, aliases, and a
    // member that selects nothing; the root's default folder.
    await expectSameAnswer(
      `{ memoryStores(first: 4) { edges { node { name top: entries(first: 2) { edges { node { ...Entry } } pageInfo { hasNextPage } }
          entries { count: totalCount edges { node { ... on MemoryFolder { n: name } } } } } } } }
       fragment Entry on MemoryEntry { kind: __typename ...Folder ... on Memory { path ... on Memory { id } } }
       fragment Folder on MemoryFolder { memoryCount path }`,
      undefined,
      1,
    );
    // Only counts and names: no rows read.
    await expectSameAnswer(`query ($store: ID!) { memoryStore(id: $store) { entries(folder: "notes/") { totalCount __typename pageInfo { hasPreviousPage } } } }`, { store: both.storeIds[0] }, 1);
  });

  it('answer variables JSON cannot write back as the resolvers do, whatever came before: 1e400 after null, a variable named __proto__', async () => {
    // Both apps share the process's kept compiled reads: each request goes to the compiled app first.
    const same = async (body: string) => {
      const compiled = await both.compiled.send(body);
      const resolvers = await both.resolvers.send(body);
      expect({ status: compiled.status, data: compiled.data, errors: compiled.errors }, body).toEqual({ status: resolvers.status, data: resolvers.data, errors: resolvers.errors });
      return compiled;
    };
    const paged = JSON.stringify('query ($n: Int) { memoryStores(first: $n) { totalCount edges { node { id } } } }');
    expect((await same(`{"query":${paged},"variables":{"n":null}}`)).status).toBe(200);
    for (const n of ['1e400', '-1e400']) expect((await same(`{"query":${paged},"variables":{"n":${n}}}`)).status).toBe(400);
    const listing = (folder: string) =>
      JSON.stringify({
        query: 'query ($__proto__: String!, $store: ID!) { memoryStore(id: $store) { entries(folder: $__proto__) { totalCount edges { node { ... on MemoryFolder { path } ... on Memory { path } } } } } }',
        variables: { store: both.storeIds[0] },
      }).replace('"variables":{', `"variables":{"__proto__":${JSON.stringify(folder)},`);
    const [notes, top] = [await same(listing('notes/')), await same(listing('z/'))];
    expect(notes.errors).toBeUndefined();
    expect(top.errors).toBeUndefined();
  });

  it('keep aliases, fragments of the same type and field order', async () => {
    await expectSameAnswer(
      `query { b: memoryStores(first: 2) { ...Page } a: memoryStores(first: 1) { count: totalCount } }
       fragment Page on MemoryStoreConnection { edges { node { ... on MemoryStore { n: name id } ...Store } } }
       fragment Store on MemoryStore { entryCount first: memories(first: 1) { edges { node { path } } } }`,
      undefined,
      1,
    );
    // The same plain field twice is one value, at its first place; the same key for two different selections is the resolvers' to merge.
    await expectSameAnswer('{ memoryStores(first: 2) { totalCount edges { node { id name ... on MemoryStore { id } } } totalCount } }', undefined, 1);
    const merged = await countStatements(() => both.compiled.send({ query: '{ memoryStores(first: 2) { edges { node { memories(first: 1) { totalCount } memories(first: 1) { edges { node { id } } } } } } }' }));
    expect(merged.statements).toBeGreaterThan(1);
    await expectSameAnswer('{ memoryStores(first: 2) { edges { node { memories(first: 1) { totalCount } memories(first: 1) { edges { node { id } } } } } } }');
  });

  it('authenticate in the same statement: unknown and revoked keys are 401, IDENTITY keys get the resolvers\' answer', async () => {
    const query = '{ memoryStores(first: 1) { totalCount } }';
    const unknown = await server.anonymous(`msk_${'Z'.repeat(40)}`).send({ query });
    expect(unknown.status).toBe(401);
    expect(unknown.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const created = await both.compiled.send({ query: 'mutation { createApiKey(input: { name: "soon revoked", kind: ADMIN }) { ... on CreateApiKeySuccess { token apiKey { id } } } }' });
    const { token, apiKey } = created.data.createApiKey;
    expect((await server.anonymous(token).send({ query })).status).toBe(200);
    await both.compiled.send({ query: 'mutation ($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }', variables: { id: apiKey.id } });
    expect((await server.anonymous(token).send({ query })).status).toBe(401);
    const identity = await both.compiled.send({
      query: 'mutation { createApiKey(input: { name: "agent", kind: IDENTITY, identityId: "idn_compiled" }) { ... on CreateApiKeySuccess { token } } }',
    });
    const refused = await server.anonymous(identity.data.createApiKey.token).send({ query });
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('leave everything else to the resolvers, with the same answers: cursors, other fields, arguments, directives', async () => {
    for (const query of [
      '{ memoryStores(first: 2) { edges { cursor node { id } } pageInfo { endCursor } } }',
      '{ memoryStores(first: 2, status: ACTIVE) { edges { node { id } } } }',
      '{ memoryStores(last: 2) { edges { node { id } } } }',
      '{ memoryStores(first: 2) { edges { node { id bindingInfo { identityTemplateCount } } } } }',
      '{ memoryStores(first: 2) { edges { node { memories { edges { node { latestVersion { id } } } } } } } }',
      '{ memoryStores(first: 2) { edges { node { id @include(if: true) } } } }',
      '{ memoryStores(first: 101) { totalCount } }',
      '{ memoryStores(first: 2) { edges { node { ... on Node { id } } } } }',
      // History and browsing fields beyond the plain ones (`number` is plain and compiled).
      '{ memoryStores(first: 2) { edges { node { memories(first: 3) { edges { node { versions(first: 2) { edges { node { number diff { additions deletions unified } } } } } } } } } } }',
      '{ memoryStores(first: 2) { edges { node { entries(first: 3) { edges { cursor node { __typename ... on MemoryFolder { path memoryCount } } } } } } } }',
      '{ memoryStores(first: 2) { edges { node { entries(first: 3, after: "ZW50cmllczpbMCwiYSJd") { edges { node { __typename } } } } } } }',
      '{ memoryStores(first: 2) { edges { node { entries(last: 3) { edges { node { __typename } } } } } } }',
      '{ memoryStores(first: 2) { edges { node { entries(folder: "a") { edges { node { __typename } } } } } } }',
      '{ memoryStores(first: 2) { edges { node { memories(first: 3) { edges { node { versions(first: 2) { edges { node { restoredFrom { id } } } } } } } } } } }',
      // A later page of a search, a search beside another root field, two searches.
      '{ searchMemories(query: "content", after: "c2VhcmNo") { totalCount edges { node { id } } } }',
      '{ searchMemories(query: "content") { totalCount } memoryStores(first: 1) { totalCount } }',
      '{ a: searchMemories(query: "content") { totalCount } b: searchMemories(query: "updated") { totalCount } }',
      '{ searchMemories(query: "content") { edges { node { id latestVersion { id } } } } }',
      '{ searchMemories(query: "content") { edges { snippet { text @skip(if: false) } } } }',
      // The hit's memory selected twice, under two aliases of node or of edges.
      '{ searchMemories(query: "content") { edges { a: node { id } b: node { path } } } }',
      '{ searchMemories(query: "content") { x: edges { node { id } } y: edges { node { path } } } }',
      // An alias longer than the worst bytes count.
      `{ memoryStores(first: 2) { edges { node { ${'a'.repeat(33)}: id } } } }`,
      `{ searchMemories(query: "content") { edges { node { id } snippet { matches { ${'s'.repeat(33)}: start } } } } }`,
    ]) {
      // No compiled statement ran: the resolvers answered.
      const { statements } = await recordStatements(() => both.compiled.send({ query }));
      expect(statements.filter((statement) => isCompiled(statement.sql)), query).toEqual([]);
      await expectSameAnswer(query);
    }
  });

  it('answer a search\'s pages as the resolvers do, byte for byte, in one statement each: hits, scores, snippets, cursors, counts, nodes', async () => {
    const query = `query ($query: String!, $store: ID, $prefix: String, $first: Int) { __typename
      found: searchMemories(query: $query, memoryStoreId: $store, pathPrefix: $prefix, first: $first) { __typename totalCount
        pageInfo { __typename hasNextPage hasPreviousPage startCursor endCursor }
        edges { __typename cursor score ...Hit snippet { __typename text ranges: matches { __typename start end } } } } }
      fragment Hit on MemorySearchEdge { node { ${MEMORY_FIELDS} versions(first: 2) { totalCount edges { node { ${VERSION_FIELDS} } } } } }`;
    const [odd, plain, , foreign] = both.storeIds;
    const body = async (client: TestClient, variables: Record<string, unknown>) => {
      const response = await client.app.fetch('http://memstore.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` },
        body: JSON.stringify({ query, variables }),
      });
      return response.text();
    };
    for (const variables of [
      { query: 'content' },
      { query: 'quoted', first: 3 },
      { query: 'updated', first: 1 },
      { query: 'content -updated', first: 20 },
      { query: '"content 7"' },
      { query: 'x' },
      { query: 'bulk', store: plain, first: 4 },
      { query: 'bulk', prefix: 'bulk/01' },
      { query: 'content', store: odd, prefix: 'notes/' },
      { query: 'content', prefix: '\u0000' },
      { query: 'content', store: foreign },
      { query: 'content', first: 0 },
      { query: 'quoted or updated', first: 8 },
    ]) {
      const { result: compiled, statements } = await recordStatements(() => body(both.compiled, variables));
      expect(statements.map((statement) => isCompiled(statement.sql)), JSON.stringify(variables)).toEqual([true]);
      expect(compiled, JSON.stringify(variables)).toBe(await body(both.resolvers, variables));
    }
    expect(JSON.parse(await body(both.compiled, { query: 'content' })).data.found.totalCount).toBeGreaterThan(5);
    // Page by page, each after the last one's cursor, to the end: one statement each, the resolvers' pages.
    const paged = query.replace('$first: Int)', '$first: Int, $after: String)').replace('first: $first)', 'first: $first, after: $after)');
    let after: string | null = null;
    let pages = 0;
    do {
      const answer = await expectSameAnswer(paged, { query: 'content or bulk', first: 4, after }, 1);
      expect(answer.data.found.pageInfo.hasPreviousPage).toBe(after !== null);
      after = answer.data.found.pageInfo.hasNextPage ? answer.data.found.pageInfo.endCursor : null;
      pages += 1;
    } while (after !== null && pages < 20);
    expect(pages).toBeGreaterThan(5);
    expect(after).toBeNull();
    // A query without words: the compiled statement leaves the refusal to the resolvers.
    await expectSameAnswer(query, { query: '-content' });
    // An IDENTITY key may not search: the resolvers' FORBIDDEN.
    const identity = await both.compiled.send({
      query: 'mutation { createApiKey(input: { name: "searching agent", kind: IDENTITY, identityId: "idn_search" }) { ... on CreateApiKeySuccess { token } } }',
    });
    const refused = await server.anonymous(identity.data.createApiKey.token).send({ query, variables: { query: 'content' } });
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('identify the key of a search by its own columns: the viewer is the key, with or without hits', async () => {
    const key = await authenticate(server.database.handle.db, both.compiled.token!);
    const query = 'query ($q: String!) { searchMemories(query: $q, first: 3) { edges { node { id } } } }';
    const document = parse(query);
    const operation = document.definitions[0] as OperationDefinitionNode;
    for (const q of ['content', 'nothingmatchesthis']) {
      const read = compileRead(schema, document, operation, { q }, server.database.handle.run!)!;
      expect(read, q).not.toBeNull();
      const answer = await read.read(hashToken(both.compiled.token!));
      expect(answer!.viewer, q).toEqual(key);
      expect(answer!.data, q).not.toBeNull();
    }
  });

  it('check a search as they read it: a change mark (so a tag) only for a query with words, which they answer', async () => {
    const key = await authenticate(server.database.handle.db, both.compiled.token!);
    const query = 'query ($q: String!) { searchMemories(query: $q, first: 3) { edges { node { id } } } }';
    const document = parse(query);
    const operation = document.definitions[0] as OperationDefinitionNode;
    for (const q of ['content', 'nothingmatchesthis', '-content', '...', '""']) {
      const read = compileRead(schema, document, operation, { q }, server.database.handle.run!)!;
      const answer = (await read.read(hashToken(both.compiled.token!)))!;
      const checked = (await read.check(hashToken(both.compiled.token!)))!;
      expect(checked.viewer, q).toEqual(key);
      expect(checked.data, q).toBeNull();
      // Read answers exactly the queries with words; check gives exactly those a mark.
      expect(checked.mark !== null, q).toBe(answer.data !== null);
      expect(answer.data !== null, q).toBe(!['-content', '...', '""'].includes(q));
    }
  });

  it('agree with the resolvers on random searches, filters and page sizes (property)', async () => {
    const query = `query ($query: String!, $store: ID, $prefix: String, $first: Int) {
      searchMemories(query: $query, memoryStoreId: $store, pathPrefix: $prefix, first: $first) { totalCount pageInfo { hasNextPage endCursor }
        edges { score snippet { text matches { start end } } node { id path contentSha256 } } } }`;
    const words = ['content', 'quoted', 'updated', 'bulk', 'notes', 'md', 'a', 'b', '✓', '😀', '"content 1"', '-updated', 'or', 'x', '"a b"'];
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 0, max: 12 }),
        fc.constantFrom(null, 'a', 'notes/', 'bulk/00', 'z/'),
        fc.constantFrom(null, ...both.storeIds),
        async (chosen, first, prefix, store) => {
          await expectSameAnswer(query, { query: chosen.join(' '), first, prefix, store });
        },
      ),
      { numRuns: 40, seed: 20261206 },
    );
  });

  it('agree with the resolvers on random page sizes and prefixes (property)', async () => {
    const query = `query ($stores: Int, $memories: Int, $versions: Int, $prefix: String) {
      memoryStores(first: $stores) { totalCount pageInfo { hasNextPage } edges { node { id entryCount
        memories(first: $memories, pathPrefix: $prefix) { totalCount pageInfo { hasNextPage } edges { node { path contentSha256
          versions(first: $versions) { pageInfo { hasNextPage } edges { node { operation contentSizeBytes } } } } } } } } } }`;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 4 }),
        fc.constantFrom(null, 'a', 'notes/', 'bulk/00', 'bulk/01', 'x'),
        async (stores, memories, versions, prefix) => {
          await expectSameAnswer(query, { stores, memories, versions, prefix }, 1);
        },
      ),
      { numRuns: 40, seed: 20261201 },
    );
  });
});
