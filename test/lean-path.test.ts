import { describe, expect, it } from 'vitest';
import { createApp, type AppOptions } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { createStore } from './support/builders.js';
import { askAgain } from './support/ask-again.js';
import { useTestServer } from './support/server.js';

const server = useTestServer();

interface Exchange {
  body: string;
  headers?: Record<string, string>;
}

async function answer(options: Omit<AppOptions, 'database'>, token: string | null, exchange: Exchange) {
  const app = createApp({ ...options, database: server.database.handle });
  const response = await app.fetch('http://memstore.test/graphql', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      'x-request-id': 'same-id',
      ...exchange.headers,
    },
    body: exchange.body,
  });
  const headers = Object.fromEntries([...response.headers].filter(([name]) => !['date', 'content-length'].includes(name)));
  const text = await response.text();
  // Compiled reads write JSON with PostgreSQL's spacing: compare the values.
  return { status: response.status, headers, body: text === '' ? text : JSON.parse(text) };
}

describe('the lean path for plain JSON operations', () => {
  it('answers every kind of request exactly as the full Yoga pipeline does: status, headers and body; only its compiled answers add an ETag (and the Vary that goes with it)', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const plain = (query: string, variables?: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ query, variables, ...extra });
    const cases: (Exchange & { token?: string | null; name: string })[] = [
      { name: 'a query', body: plain('{ memoryStores(first: 5) { totalCount edges { node { id name } } } }') },
      { name: 'a query with variables', body: plain('query ($id: ID!) { memoryStore(id: $id) { id name } }', { id: store.id }) },
      { name: 'a mutation', body: plain('mutation { updateMemoryStore(input: { id: "memstore_missing", name: "x" }) { __typename ... on Error { code message } } }') },
      { name: 'a named operation of several', body: plain('query A { __typename } query B { memoryStores { totalCount } }', null, { operationName: 'B' }) },
      { name: 'an unknown operation name', body: plain('query A { __typename }', null, { operationName: 'C' }) },
      { name: 'variables of the wrong type', body: plain('query ($first: Int) { memoryStores(first: $first) { totalCount } }', { first: 'many' }) },
      { name: 'a top-level argument error', body: plain('{ memoryStores(first: 1000) { totalCount } }') },
      { name: 'a validation error', body: plain('{ memoryStorez }') },
      { name: 'a syntax error', body: plain('{ memoryStores(') },
      { name: 'a costly query', body: plain('{ memoryStores(first: 100) { edges { node { memories(first: 100) { edges { node { content } } } } } } }') },
      { name: 'no credentials', token: null, body: plain('{ __typename }') },
      { name: 'unknown credentials', token: 'msk_unknown', body: plain('{ __typename }') },
      { name: 'application/json first in Accept', body: plain('{ __typename }'), headers: { accept: 'application/json, application/graphql-response+json' } },
      { name: 'an extensions object', body: plain('{ __typename }', null, { extensions: { trace: true } }) },
      { name: 'null variables and operationName', body: JSON.stringify({ query: '{ __typename }', variables: null, operationName: null }) },
      { name: 'a subscription', body: plain('subscription { __typename }') },
    ];
    for (const exchange of cases) {
      const token = exchange.token === undefined ? client.token : exchange.token;
      const yoga = await answer({ config: { nodeEnv: 'test', graphiql: false }, leanPath: false }, token, exchange);
      // Conditional reads (answer-tags.ts) are the lean path's: Yoga's answers carry no tag.
      expect(yoga.headers.ETag, exchange.name).toBeUndefined();
      // Every query the compiler answers (here: each that succeeds) has one; nothing else does.
      const tagged = !exchange.name.includes('mutation') && yoga.status === 200 && yoga.body.errors === undefined;
      // A tag is withheld while the workspace's change mark is unsettled: ask again, as a polling client does.
      const lean = await askAgain(() => answer({ config: { nodeEnv: 'test', graphiql: false } }, token, exchange), (reply) => tagged && reply.headers.ETag === undefined);
      const { ETag: tag, Vary: vary, ...headers } = lean.headers;
      expect(tag !== undefined, exchange.name).toBe(tagged);
      // A tagged answer varies by key and media type (answer-tags.ts).
      expect(vary, exchange.name).toBe(tag === undefined ? undefined : 'Authorization, Accept');
      expect({ ...lean, headers }, exchange.name).toEqual(yoga);
    }
  });

  it('answers every kind of GET as the full Yoga pipeline does, and only its compiled query answers add an ETag (and its Vary), which a conditional GET revalidates', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const get = async (options: Omit<AppOptions, 'database'>, token: string | null, search: Record<string, string>, headers: Record<string, string> = {}) => {
      const app = createApp({ ...options, database: server.database.handle });
      const response = await app.fetch(`http://memstore.test/graphql?${new URLSearchParams(search)}`, {
        headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), 'x-request-id': 'same-id', ...headers },
      });
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // A page or an empty body: compared as text.
      }
      const kept = [...response.headers].map(([name, value]) => [name.toLowerCase(), value] as const).filter(([name]) => !['date', 'content-length'].includes(name));
      return { status: response.status, headers: Object.fromEntries(kept) as Record<string, string>, body };
    };
    const cases: { name: string; search: Record<string, string>; token?: string | null; headers?: Record<string, string>; tagged?: boolean }[] = [
      { name: 'a query', search: { query: '{ memoryStores(first: 5) { totalCount edges { node { id name } } } }' }, tagged: true },
      { name: 'a query with variables', search: { query: 'query ($id: ID!) { memoryStore(id: $id) { id name } }', variables: JSON.stringify({ id: store.id }) }, tagged: true },
      { name: 'a named operation of several', search: { query: 'query A { __typename } query B { memoryStores { totalCount } }', operationName: 'B' }, tagged: true },
      { name: 'a read only the resolvers answer', search: { query: `{ memoryStore(id: "${store.id}") { name bindingInfo { identityTemplateCount } } }` } },
      { name: 'a mutation', search: { query: 'mutation { updateMemoryStore(input: { id: "memstore_missing", name: "x" }) { __typename } }' } },
      { name: 'a subscription', search: { query: 'subscription { __typename }' } },
      { name: 'variables that are not JSON', search: { query: 'query ($first: Int) { memoryStores(first: $first) { totalCount } }', variables: '{first' } },
      { name: 'variables of the wrong type', search: { query: 'query ($first: Int) { memoryStores(first: $first) { totalCount } }', variables: JSON.stringify({ first: 'many' }) } },
      { name: 'a parameter nobody knows', search: { query: '{ __typename }', other: '1' } },
      { name: 'a validation error', search: { query: '{ memoryStorez }' } },
      { name: 'a syntax error', search: { query: '{ memoryStores(' } },
      { name: 'no query', search: {} },
      { name: 'no credentials', token: null, search: { query: '{ __typename }' } },
      { name: 'application/json first in Accept', search: { query: '{ memoryStores { totalCount } }' }, headers: { accept: 'application/json, application/graphql-response+json' }, tagged: true },
    ];
    for (const exchange of cases) {
      const token = exchange.token === undefined ? client.token : exchange.token;
      const ask = () => get({ config: { nodeEnv: 'test', graphiql: false } }, token, exchange.search, exchange.headers);
      // A tag is withheld while a transaction of this database that this test does not control
      // runs below the workspace's newest event (the mark is 'unsettled'): ask again.
      const lean = await askAgain(ask, (reply) => exchange.tagged === true && reply.headers.etag === undefined);
      const yoga = await get({ config: { nodeEnv: 'test', graphiql: false }, leanPath: false }, token, exchange.search, exchange.headers);
      expect(yoga.headers.etag, exchange.name).toBeUndefined();
      const { etag: tag, vary, ...headers } = lean.headers;
      expect(tag !== undefined, exchange.name).toBe(exchange.tagged === true);
      expect(vary, exchange.name).toBe(tag === undefined ? undefined : 'Authorization, Accept');
      expect({ ...lean, headers }, exchange.name).toEqual(yoga);
      if (tag) {
        // The client's cache revalidates: the same GET naming the tag is an empty 304 (a full
        // answer without a tag while the mark is unsettled, as above: ask again).
        const revalidate = () => get({ config: { nodeEnv: 'test', graphiql: false } }, token, exchange.search, { ...exchange.headers, 'if-none-match': tag });
        const revalidated = await askAgain(revalidate, (reply) => reply.status === 200 && reply.headers.etag === undefined);
        expect(revalidated.status, exchange.name).toBe(304);
        expect(revalidated.body, exchange.name).toBe('');
      }
    }
  });

  it('answers a rate-limited request and a request past its time limit as Yoga does', async () => {
    const client = await server.newWorkspace();
    const exchange = { body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }) };
    for (const leanPath of [true, false]) {
      const options = { config: { nodeEnv: 'test' as const, graphiql: false, rateLimit: { perSecond: 1, burst: 1 } }, leanPath };
      const app = createApp({ ...options, database: server.database.handle });
      const send = () =>
        app.fetch('http://memstore.test/graphql', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` }, body: exchange.body });
      expect((await send()).status).toBe(200);
      const limited = await send();
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('1');
      expect((await limited.json()).errors[0].extensions.code).toBe('RATE_LIMITED');
    }
  });

  it('is the path plain operations take: Yoga never parses them', async () => {
    const client = await server.newWorkspace();
    const lines: string[] = [];
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, logger: createLogger('debug', (line) => lines.push(line)) });
    const post = (body: string) =>
      app.fetch('http://memstore.test/graphql', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` }, body });
    await (await post(JSON.stringify({ query: '{ memoryStores { totalCount } }' }))).text();
    expect(lines.join('')).not.toContain('Parsing request to extract GraphQL parameters');
    await (await post(JSON.stringify({ query: '{ memoryStorez }' }))).text();
    expect(lines.join('')).toContain('Parsing request to extract GraphQL parameters');
  });
});
