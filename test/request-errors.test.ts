import { describe, expect, it } from 'vitest';
import { createApp, type App } from '../src/app.js';
import { MAX_QUERY_ALIASES, MAX_QUERY_DEPTH, MAX_QUERY_DIRECTIVES, MAX_QUERY_TOKENS } from '../src/domain/limits.js';
import { useTestServer } from './support/server.js';

/**
 * A request the server cannot run — a query that does not parse or validate, variables that
 * do not fit their types, no query at all, a query over a limit — is answered HTTP 400 with
 * a top-level error that carries its code, whichever response type the client accepts; and
 * with introspection off, no error suggests names.
 */

const server = useTestServer();

const deep = (levels: number) => {
  let selection = 'id';
  for (let level = 1; level < levels; level += 1) selection = level % 2 ? `memoryStore { ${selection} }` : `memories { edges { node { ${selection} } } }`;
  return `{ memory(id: "mem_00000000000000000000") { ${selection} } }`;
};

const CASES: [string, Record<string, unknown>, string][] = [
  ['variables that are not a JSON object', { query: 'mutation ($m: JSONObject) { createMemoryStore(input: { name: "x", metadata: $m }) { __typename } }', variables: { m: ['a'] } }, 'INVALID_REQUEST'],
  ['an Int variable given "abc"', { query: 'query ($n: Int) { memoryStores(first: $n) { totalCount } }', variables: { n: 'abc' } }, 'INVALID_REQUEST'],
  ['a required variable left out', { query: 'query ($id: ID!) { memoryStore(id: $id) { id } }' }, 'INVALID_REQUEST'],
  ['no query at all', { variables: {} }, 'INVALID_REQUEST'],
  ['a query that does not parse', { query: '{ memoryStores(' }, 'GRAPHQL_PARSE_FAILED'],
  ['a field that does not exist', { query: '{ nope }' }, 'GRAPHQL_VALIDATION_FAILED'],
  ['a query too deep', { query: deep(MAX_QUERY_DEPTH + 1) }, 'QUERY_TOO_COMPLEX'],
  ['too many aliases', { query: `{ ${Array.from({ length: MAX_QUERY_ALIASES + 1 }, (_, index) => `a${index}: __typename`).join(' ')} }` }, 'QUERY_TOO_COMPLEX'],
  ['too many tokens', { query: `{ ${'__typename '.repeat(MAX_QUERY_TOKENS)} }` }, 'QUERY_TOO_COMPLEX'],
  ['too many directives', { query: `{ ${'__typename @include(if: true) '.repeat(MAX_QUERY_DIRECTIVES + 1)} }` }, 'QUERY_TOO_COMPLEX'],
  ['a query that costs too much', { query: '{ memoryStores(first: 100) { edges { node { memories(first: 100) { edges { node { content } } } } } } }' }, 'QUERY_TOO_COMPLEX'],
];

async function post(app: App, token: string, accept: string, body: Record<string, unknown>) {
  const response = await app.fetch('http://memstore.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

describe('requests that cannot run', () => {
  for (const accept of ['application/json', 'application/graphql-response+json']) {
    for (const [name, body, code] of CASES) {
      it(`${name}: 400 with extensions.code ${code}, accepting ${accept}`, async () => {
        const client = await server.newWorkspace();
        const answer = await post(server.app, client.token!, accept, body);
        expect(answer.status).toBe(400);
        const json = JSON.parse(answer.text) as { data?: unknown; errors: { extensions?: { code?: string } }[] };
        expect(json.data ?? null).toBeNull();
        expect(json.errors.length).toBeGreaterThan(0);
        for (const error of json.errors) expect(error.extensions?.code).toBe(code);
      });
    }
  }

  it('suggest no names with introspection off (production), and do outside it', async () => {
    const client = await server.newWorkspace();
    const production = createApp({ config: { nodeEnv: 'production', graphiql: false }, database: server.database.handle });
    const wrongEnum = { query: 'query ($o: MemoryOrder!) { memoryStores { edges { node { memories(orderBy: $o) { totalCount } } } } }', variables: { o: 'PATH_AS' } };
    const wrongField = { query: '{ memoryStore(id: "x") { nam } }' };
    const wrongInput = { query: 'mutation { createMemoryStore(input: { nme: "x" }) { __typename } }' };
    for (const body of [wrongEnum, wrongField, wrongInput]) {
      const hidden = await post(production, client.token!, 'application/json', body);
      expect(hidden.status).toBe(400);
      expect(hidden.text).not.toMatch(/Did you mean|PATH_ASC|"name"/);
      expect((await post(server.app, client.token!, 'application/json', body)).text).toMatch(/Did you mean/);
    }
  });
});
