import { DrizzleQueryError } from 'drizzle-orm/errors';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { createLogger } from '../src/logger.js';
import { createStore } from './support/builders.js';
import { useTestServer } from './support/server.js';
import { standInHandle } from './support/database.js';

const server = useTestServer();

const SECRET = 'CONTENT-MARKER-7f3a9c';

describe('log lines', () => {
  it('never hold an API key or memory content, whatever happens to the request', async () => {
    const lines: string[] = [];
    const client = await server.newWorkspace();
    const store = await createStore(client);
    // A database whose memory writes fail the way drizzle reports it: the statement's parameters in the message.
    const failingDb = new Proxy(server.db, {
      get(target, property, receiver) {
        if (property === 'transaction') {
          return () => Promise.reject(new DrizzleQueryError('insert into "memories" values ($1, $2)', [`${SECRET}-param`, client.token], new Error('deadlock detected')));
        }
        return Reflect.get(target, property, receiver);
      },
    });
    const logger = createLogger('debug', (line) => lines.push(line));
    const app = createApp({ config: { nodeEnv: 'test', graphiql: true, rateLimit: { perSecond: 1, burst: 2 } }, database: server.database.handle, logger });
    const failingApp = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: standInHandle(failingDb), logger });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${client.token}` };
    const createMemory = JSON.stringify({
      query: 'mutation ($input: CreateMemoryInput!) { createMemory(input: $input) { __typename } }',
      variables: { input: { memoryStoreId: store.id, path: 'notes/secret.md', content: SECRET } },
    });

    const responses = [
      await app.fetch('http://memstore.test/graphql', { method: 'POST', headers, body: createMemory }),
      await failingApp.fetch('http://memstore.test/graphql', { method: 'POST', headers, body: createMemory }),
      await app.fetch('http://memstore.test/graphql', { method: 'POST', headers, body: `{"query": "${SECRET}` }),
      await app.fetch(`http://memstore.test/graphql?query=${encodeURIComponent(`{ memory(id: "${SECRET}") { id } }`)}`, {
        headers: { authorization: `Bearer ${client.token}` },
      }),
      await app.fetch('http://memstore.test/graphql', { method: 'POST', headers, body: createMemory }),
      await app.fetch('http://memstore.test/graphql', { method: 'POST', headers: { ...headers, authorization: `Bearer ${client.token}x` }, body: createMemory }),
    ];
    expect(responses.map((response) => response.status)).toEqual([200, 200, 400, 200, 429, 401]);
    for (const response of responses) await response.text();

    const text = lines.join('');
    expect(lines.length).toBeGreaterThan(6);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(client.token!);
    // The failure is still logged usefully: what failed and why, without the values.
    const failure = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'unexpected error');
    expect(failure.error).toMatchObject({ message: 'Failed query: insert into "memories" values ($1, $2)', cause: { message: 'deadlock detected' } });
  });
});

describe('request log lines', () => {
  it.each([true, false])('carry the operation name, the API key id and the workspace id once the key is known (lean path: %s)', async (leanPath) => {
    const lines: string[] = [];
    const client = await server.newWorkspace();
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, logger: createLogger('info', (line) => lines.push(line)), leanPath });
    const send = (body: unknown, token = client.token!) =>
      app.fetch('http://memstore.test/graphql', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    // A compiled read, a resolver read, an anonymous mutation, a key nobody has.
    for (const response of [
      await send({ query: 'query Compiled { memoryStores { totalCount } }' }),
      await send({ query: 'query Resolved { memoryStores { edges { cursor } } }' }),
      await send({ query: 'mutation { createMemoryStore(input: { name: "logged" }) { __typename } }' }),
      await send({ query: 'query Stranger { memoryStores { totalCount } }' }, `msk_${'B'.repeat(40)}`),
    ]) await response.text();
    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
    expect(requests.map(({ operationName, status, workspaceId: logged }) => ({ operationName, status, workspaceId: logged }))).toEqual([
      { operationName: 'Compiled', status: 200, workspaceId: client.workspaceId },
      { operationName: 'Resolved', status: 200, workspaceId: client.workspaceId },
      { operationName: null, status: 200, workspaceId: client.workspaceId },
      { operationName: 'Stranger', status: 401, workspaceId: undefined },
    ]);
    for (const entry of requests.slice(0, 3)) expect(entry.apiKeyId).toMatch(/^key_/);
    expect(new Set(requests.slice(0, 3).map((entry) => entry.apiKeyId)).size).toBe(1);
    expect(requests[3]!.apiKeyId).toBeUndefined();
  });
});
