import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_PAGE_SIZE, SEARCH_QUERY_MAX_CHARACTERS, SEARCH_SNIPPET_MAX_LENGTH } from '../src/domain/limits.js';
import { countStatements } from '../src/db/statement-count.js';
import { createMemory, createStore, deleteMemory, updateMemory } from './support/builders.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const SEARCH = `query ($query: String!, $store: ID, $prefix: String, $first: Int, $after: String) {
  searchMemories(query: $query, memoryStoreId: $store, pathPrefix: $prefix, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage endCursor }
    edges { cursor score snippet { text matches { start end } } node { id path content } }
  }
}`;

const CORPUS: Record<string, string> = {
  alpha: '# Project Alpha\n\nThe quick brown fox jumps over the lazy dog.\nSee `parseConfig()` and **bold** text in [the docs](https://example.com/docs).',
  beta: 'The lazy dog sleeps. A quick nap for the dog.',
  russian: 'Привет, МИР! Это тестовая заметка о кошках.',
  cjk: '记忆存储 是 一个 测试。 日本語のテキスト',
  cafe: 'Le café est prêt. CAFÉ noir.',
  plain: 'cafe without accent',
  code: 'const user_name = getUser(id); // TODO fix_this\nfunction handleError(err) { throw err; }',
};

const PATHS: Record<string, string> = {
  alpha: 'notes/project-alpha.md',
  beta: 'notes/beta.md',
  russian: 'ru/заметка.md',
  cjk: 'cjk/memory.md',
  cafe: 'fr/one.md',
  plain: 'fr/two.md',
  code: 'code/snippet.ts',
};

let client: TestClient;
let storeId: string;
let otherStoreId: string;
/** Path of each memory in the corpus, by id; also the second store's and another workspace's. */
const pathById = new Map<string, string>();

beforeAll(async () => {
  client = await server.newWorkspace();
  storeId = (await createStore(client)).id;
  otherStoreId = (await createStore(client)).id;
  for (const [name, content] of Object.entries(CORPUS)) {
    const memory = await createMemory(client, storeId, { path: PATHS[name]!, content });
    pathById.set(memory.id, memory.path);
  }
  const other = await createMemory(client, otherStoreId, { path: 'other/x.md', content: 'a quick fox' });
  pathById.set(other.id, other.path);
  // Another workspace's memories never show.
  const foreign = await server.newWorkspace();
  const foreignStore = await createStore(foreign);
  await createMemory(foreign, foreignStore.id, { path: 'notes/fox.md', content: 'quick brown fox, lazy dog, café, привет, 记忆存储' });
});

async function search(query: string, options: { store?: string; prefix?: string; first?: number; after?: string } = {}) {
  const response = await client.send({ query: SEARCH, variables: { query, ...options } });
  expect(response.errors, `${query}: ${JSON.stringify(response.errors)}`).toBeUndefined();
  return response.data.searchMemories;
}

/** The paths found, best first. */
async function found(query: string, options: { store?: string; prefix?: string } = {}) {
  const result = await search(query, { ...options, first: MAX_PAGE_SIZE });
  expect(result.totalCount).toBe(result.edges.length);
  return result.edges.map((edge: any) => edge.node.path);
}

/** Every snippet is a piece of its content of at most the limit, and every range covers one of the words. */
function expectSnippetsMatch(result: any, words: string[]) {
  for (const edge of result.edges) {
    const { text, matches } = edge.snippet;
    expect(text.length).toBeLessThanOrEqual(SEARCH_SNIPPET_MAX_LENGTH);
    expect(edge.node.content.includes(text)).toBe(true);
    for (const { start, end } of matches) expect(words, text.slice(start, end)).toContain(text.slice(start, end).toLowerCase());
  }
}

describe('searchMemories', () => {
  it('finds memories holding every word, in any order, across the workspace or in one store', async () => {
    expect((await found('fox quick')).sort()).toEqual([PATHS.alpha, 'other/x.md']);
    expect(await found('quick fox', { store: storeId })).toEqual([PATHS.alpha]);
    expect(await found('quick fox', { store: otherStoreId })).toEqual(['other/x.md']);
    expect(await found('fox sleeps')).toEqual([]);
  });

  it('matches "quoted phrases" as adjacent words in order', async () => {
    expect(await found('"quick brown"')).toEqual([PATHS.alpha]);
    expect(await found('"brown quick"')).toEqual([]);
    expect(await found('"lazy dog" sleeps')).toEqual([PATHS.beta]);
  });

  it('leaves out -excluded words and takes either side of `or`', async () => {
    expect(await found('dog -fox')).toEqual([PATHS.beta]);
    expect((await found('fox or nap')).sort()).toEqual([PATHS.alpha, PATHS.beta, 'other/x.md'].sort());
    expect((await found('nap or привет')).sort()).toEqual([PATHS.beta, PATHS.russian]);
    expect(await found('dog -sleeps')).toEqual([PATHS.alpha]);
    expect(await found('-sleeps dog')).toEqual([PATHS.alpha]);
  });

  it('ignores case, in every script, and keeps accents: café is not cafe', async () => {
    expect((await found('LAZY')).sort()).toEqual([PATHS.alpha, PATHS.beta].sort());
    expect(await found('café')).toEqual([PATHS.cafe]);
    expect(await found('CAFÉ')).toEqual([PATHS.cafe]);
    expect(await found('cafe')).toEqual([PATHS.plain]);
    expect(await found('мир')).toEqual([PATHS.russian]);
    expect(await found('ПРИВЕТ')).toEqual([PATHS.russian]);
  });

  it('matches non-Latin text as exact tokens: no stemming, no partial words', async () => {
    expect(await found('кошках')).toEqual([PATHS.russian]);
    expect(await found('кошка')).toEqual([]);
    expect(await found('记忆存储')).toEqual([PATHS.cjk]);
    expect(await found('记忆')).toEqual([]);
    expect(await found('日本語のテキスト')).toEqual([PATHS.cjk]);
    expect(await found('jump')).toEqual([]);
    expect(await found('jumps')).toEqual([PATHS.alpha]);
  });

  it('splits Markdown and code at their punctuation', async () => {
    expect(await found('parseConfig')).toEqual([PATHS.alpha]);
    expect(await found('bold docs')).toEqual([PATHS.alpha]);
    expect(await found('user name')).toEqual([PATHS.code]);
    expect(await found('handleError TODO')).toEqual([PATHS.code]);
    expect(await found('fix this')).toEqual([PATHS.code]);
    const result = await search('parseConfig bold');
    expect(result.edges[0].snippet.matches.map(({ start, end }: any) => result.edges[0].snippet.text.slice(start, end))).toEqual(['parseConfig', 'bold']);
  });

  it('searches paths too, split at "/", ".", "_" and "-", and ranks path words above content words', async () => {
    expect(await found('snippet')).toEqual([PATHS.code]);
    expect(await found('заметка')).toEqual([PATHS.russian]);
    expect(await found('project alpha')).toEqual([PATHS.alpha]);
    expect(await found('project-alpha')).toEqual([PATHS.alpha]);
    expect(await found('notes/beta.md')).toEqual([PATHS.beta]);
    expect(await found('"project-alpha.md"')).toEqual([PATHS.alpha]);
    expect(await found('example.com')).toEqual([PATHS.alpha]);
    expect(await found('example')).toEqual([PATHS.alpha]);
    expect(await found('-notes/beta.md lazy')).toEqual([PATHS.alpha]);
    expect(await found('beta', { prefix: 'notes/' })).toEqual([PATHS.beta]);
    expect(await found('dog', { prefix: 'notes/b' })).toEqual([PATHS.beta]);
    // Only the path matched: the snippet is the content's beginning, with no ranges.
    const pathOnly = await search('snippet');
    expect(pathOnly.edges[0].snippet).toEqual({ text: CORPUS.code!.slice(0, SEARCH_SNIPPET_MAX_LENGTH), matches: [] });
    // More occurrences rank higher; equal scores go by path.
    const dog = await search('dog');
    expect(dog.edges.map((edge: any) => edge.node.path)).toEqual([PATHS.beta, PATHS.alpha]);
    expect(dog.edges[0].score).toBeGreaterThan(dog.edges[1].score);
    const fox = await search('fox');
    expect(fox.edges.map((edge: any) => edge.node.path)).toEqual([PATHS.alpha, 'other/x.md']);
    expect(fox.edges[0].score).toBe(fox.edges[1].score);
    expectSnippetsMatch(dog, ['dog']);
  });

  it('cuts snippets of at most 200 UTF-16 units around the best match, with ranges in UTF-16 units', async () => {
    const own = await createStore(client);
    const filler = 'lorem ipsum dolor sit amet '.repeat(40);
    const long = await createMemory(client, own.id, { path: 'long.md', content: `${filler}😀😀 needle in the haystack 😀 needle again ${filler}` });
    const emoji = await createMemory(client, own.id, { path: 'emoji.md', content: '😀😀 needle' });
    const result = await search('needle', { store: own.id });
    const byId = new Map(result.edges.map((edge: any) => [edge.node.id, edge.snippet]));
    const snippet = byId.get(long.id) as { text: string; matches: { start: number; end: number }[] };
    expect(snippet.text.length).toBeLessThanOrEqual(SEARCH_SNIPPET_MAX_LENGTH);
    expect(snippet.matches).toHaveLength(2);
    for (const { start, end } of snippet.matches) expect(snippet.text.slice(start, end)).toBe('needle');
    expect(long.content.includes(snippet.text)).toBe(true);
    expect(snippet.text.isWellFormed()).toBe(true);
    expect(byId.get(emoji.id)).toEqual({ text: '😀😀 needle', matches: [{ start: 5, end: 11 }] });
    expectSnippetsMatch(result, ['needle']);
  });

  it('follows writes: new content is found, old content and deleted memories are not', async () => {
    const own = await createStore(client);
    const memory = await createMemory(client, own.id, { path: 'moving.md', content: 'zebra crossing' });
    expect(await found('zebra', { store: own.id })).toEqual(['moving.md']);
    await updateMemory(client, { id: memory.id, content: 'giraffe crossing', path: 'moved/here.md' });
    expect(await found('zebra', { store: own.id })).toEqual([]);
    expect(await found('giraffe', { store: own.id })).toEqual(['moved/here.md']);
    expect(await found('moving', { store: own.id })).toEqual([]);
    await deleteMemory(client, memory.id);
    expect(await found('giraffe crossing', { store: own.id })).toEqual([]);
  });

  it('pages by cursor over a stable order: score, then path, then id', async () => {
    const own = await createStore(client);
    for (let index = 0; index < 25; index += 1) {
      await createMemory(client, own.id, { path: `page/${String(index % 7).padStart(2, '0')}-${index}.md`, content: `common ${'common '.repeat(index % 4)}word` });
    }
    const whole = await search('common', { store: own.id, first: MAX_PAGE_SIZE });
    expect(whole.totalCount).toBe(25);
    const order = whole.edges.map((edge: any) => [edge.score, edge.node.path]);
    for (let index = 1; index < order.length; index += 1) {
      const [previousScore, previousPath] = order[index - 1];
      const [score, path] = order[index];
      expect(score < previousScore || (score === previousScore && path > previousPath)).toBe(true);
    }
    const paged: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages += 1) {
      const page = await search('common', { store: own.id, first: 6, after });
      expect(page.pageInfo.hasPreviousPage).toBe(after !== undefined);
      expect(page.totalCount).toBe(25);
      paged.push(...page.edges.map((edge: any) => edge.node.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(paged).toEqual(whole.edges.map((edge: any) => edge.node.id));
    // A cursor belongs to its search.
    const cursor = whole.edges[3].cursor;
    const elsewhere = await client.send({ query: SEARCH, variables: { query: 'word', store: own.id, after: cursor } });
    expect(elsewhere.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
  });

  it('refuses what cannot be searched with INVALID_REQUEST; a store of another workspace has no hits', async () => {
    for (const query of ['', '   ', '!!! ???', '-fox', '-fox -dog', 'x'.repeat(SEARCH_QUERY_MAX_CHARACTERS + 1)]) {
      const response = await client.send({ query: SEARCH, variables: { query } });
      expect(response.errors?.map((error: any) => error.extensions?.code), JSON.stringify(query.slice(0, 20))).toEqual(['INVALID_REQUEST']);
      expect(response.data?.searchMemories ?? null).toBeNull();
    }
    for (const variables of [{ first: MAX_PAGE_SIZE + 1 }, { first: -1 }, { store: 'bogus' }, { after: 'bogus' }]) {
      const response = await client.send({ query: SEARCH, variables: { query: 'fox', ...variables } });
      expect(response.errors?.[0]?.extensions?.code, JSON.stringify(variables)).toBe('INVALID_REQUEST');
    }
    const foreign = await server.newWorkspace();
    const foreignStore = await createStore(foreign);
    await createMemory(foreign, foreignStore.id, { path: 'a.md', content: 'fox' });
    expect(await found('fox', { store: foreignStore.id })).toEqual([]);
    // The longest query is fine.
    expect((await search(`fox ${'x'.repeat(SEARCH_QUERY_MAX_CHARACTERS - 4)}`)).totalCount).toBe(0);
    // A query without words is refused even where no path could match.
    const refused = await client.send({ query: SEARCH, variables: { query: '-fox', prefix: '\u0000' } });
    expect(refused.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
  });

  it('answers every page in one statement that also authenticates; a cursor of another search is refused', async () => {
    const { statements, result } = await countStatements(() => client.send({ query: SEARCH, variables: { query: 'fox dog', first: 2 } }));
    expect(result.errors).toBeUndefined();
    expect(result.data.searchMemories.edges.length).toBeGreaterThan(0);
    // A compiled read (read-compiler/search.ts): BEGIN and COMMIT, of the snapshot it has the first time, are not counted.
    expect(statements).toBe(1);
    const next = await countStatements(() => client.send({ query: SEARCH, variables: { query: 'fox dog', first: 2, after: result.data.searchMemories.pageInfo.endCursor } }));
    expect(next.result.errors).toBeUndefined();
    expect(next.result.data.searchMemories.pageInfo.hasPreviousPage).toBe(true);
    expect(next.statements).toBe(1);
    // Another search's cursor: the resolvers refuse it before they search (after the key's lookup).
    const foreign = await countStatements(() => client.send({ query: SEARCH, variables: { query: 'fox', first: 2, after: result.data.searchMemories.pageInfo.endCursor } }));
    expect(foreign.result.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
    expect(foreign.statements).toBe(1);
    // A query without words ranks nothing: the compiled statement identifies the key and leaves the refusal to the resolvers, after their one statement.
    const refused = await countStatements(() => client.send({ query: SEARCH, variables: { query: '-fox -dog' } }));
    expect(refused.result.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
    expect(refused.statements).toBe(2);
  });
});
