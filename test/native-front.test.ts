import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { requestListenerOf } from '../src/http/native-front.js';
import type { StageName } from '../src/http/pipeline.js';
import { MAX_REQUEST_BODY_BYTES } from '../src/domain/limits.js';
import { createStore } from './support/builders.js';
import { askAgain } from './support/ask-again.js';
import { useTestServer } from './support/server.js';

/**
 * The native front (src/http/native-front.ts) takes plain GraphQL requests from Node's HTTP
 * server to the lean path without Yoga's adapter. Two servers over one app, one with the
 * front and one with Yoga alone, must answer every request the same: status, headers (but
 * the date) and body; the front must be the path its requests take; what it does not answer
 * goes through Yoga whole.
 */

const server = useTestServer();

interface Exchange {
  name: string;
  method?: 'GET' | 'POST';
  path?: string;
  body?: string;
  headers?: Record<string, string>;
  /** Whether the front answers it itself (else it hands it to Yoga, or never takes it). */
  front: boolean;
}

describe('the native front', () => {
  const stagesById = new Map<string, { stage: StageName; light: boolean }[]>();
  let app: ReturnType<typeof createApp>;
  let withFront: Server;
  let yogaOnly: Server;
  const base = (listening: Server) => `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;

  beforeAll(async () => {
    app = createApp({
      config: { nodeEnv: 'test', graphiql: true },
      database: server.database.handle,
      onStage: (request, stage) => {
        const id = request.headers.get('x-request-id') ?? '';
        stagesById.set(id, [...(stagesById.get(id) ?? []), { stage, light: !(request instanceof app.fetchAPI.Request) }]);
      },
    });
    withFront = createServer(requestListenerOf(app));
    yogaOnly = createServer(app);
    await Promise.all([withFront, yogaOnly].map((listening) => new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve))));
  });

  afterAll(async () => {
    await Promise.all([withFront, yogaOnly].map((listening) => new Promise((resolve) => listening.close(resolve))));
  });

  const ask = async (at: Server, token: string | null, exchange: Exchange, id: string) => {
    const response = await fetch(`${base(at)}${exchange.path ?? '/graphql'}`, {
      method: exchange.method ?? 'POST',
      headers: {
        ...(exchange.method === 'GET' ? {} : { 'content-type': 'application/json' }),
        ...(token === null ? {} : { authorization: `Bearer ${token}` }),
        'x-request-id': id,
        ...exchange.headers,
      },
      body: exchange.body,
    });
    const headers = Object.fromEntries([...response.headers].filter(([name]) => name !== 'date'));
    return { status: response.status, headers, body: await response.text() };
  };

  it('answers every kind of request as Yoga alone does, and answers the plain ones itself', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const plain = (query: string, variables?: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ query, variables, ...extra });
    const list = '{ memoryStores(first: 5) { totalCount edges { node { id name } } } }';
    const cases: (Exchange & { token?: string | null })[] = [
      { name: 'a compiled read', body: plain(list), front: true },
      { name: 'a compiled read with variables', body: plain('query ($id: ID!) { memoryStore(id: $id) { id name } }', { id: store.id }), front: true },
      { name: 'a mutation', body: plain('mutation { updateMemoryStore(input: { id: "memstore_missing", name: "x" }) { __typename ... on Error { code message } } }'), front: true },
      { name: 'a read the resolvers answer', body: plain('{ memoryStores(first: 2) { edges { node { id bindingInfo { identityTemplateCount } } } } }'), front: true },
      { name: 'application/json first in Accept', body: plain(list), headers: { accept: 'application/json, application/graphql-response+json' }, front: true },
      { name: 'variables of the wrong type', body: plain('query ($first: Int) { memoryStores(first: $first) { totalCount } }', { first: 'many' }), front: true },
      { name: 'no credentials', token: null, body: plain('{ __typename }'), front: true },
      { name: 'unknown credentials', token: 'msk_unknown', body: plain('{ __typename }'), front: true },
      { name: 'a syntax error (handed to Yoga)', body: plain('{ memoryStores('), front: false },
      { name: 'a validation error (handed to Yoga)', body: plain('{ memoryStorez }'), front: false },
      { name: 'a body that is not JSON (handed to Yoga)', body: '{"query": ', front: false },
      { name: 'a batch (handed to Yoga)', body: JSON.stringify([{ query: '{ __typename }' }]), front: false },
      { name: 'a body without a query (handed to Yoga)', body: JSON.stringify({ variables: {} }), front: false },
      { name: 'an empty body (handed to Yoga)', body: '', front: false },
      { name: 'a plain-text body (handed to Yoga unread)', body: 'hello', headers: { 'content-type': 'text/plain' }, front: false },
      { name: 'an Accept the lean path does not answer (handed to Yoga unread)', body: plain(list), headers: { accept: 'text/html' }, front: false },
      { name: 'a request from a web page (never taken)', body: plain(list), headers: { origin: 'https://elsewhere.example' }, front: false },
      { name: 'a body over the limit (never taken)', body: JSON.stringify({ query: '{ __typename }', pad: 'x'.repeat(MAX_REQUEST_BODY_BYTES) }), front: false },
      { name: 'a GET query', method: 'GET', path: `/graphql?query=${encodeURIComponent(list)}`, front: true },
      { name: 'a GET mutation (handed to Yoga)', method: 'GET', path: `/graphql?query=${encodeURIComponent('mutation { __typename }')}`, front: false },
      { name: 'the GraphiQL page (handed to Yoga)', method: 'GET', path: '/graphql', headers: { accept: 'text/html' }, front: false },
      { name: 'another path (never taken)', method: 'GET', path: '/schema.graphql', front: false },
    ];
    // A compiled read's tag is withheld while the workspace's change mark is unsettled for an
    // instant (a transaction of this database that this test does not control): when only one
    // of the two answers has a tag, the other is asked again, under a request id of its own.
    const tagless = (reply: { status: number; headers: Record<string, string> }) => reply.status === 200 && reply.headers.etag === undefined;
    for (const [index, exchange] of cases.entries()) {
      const token = exchange.token === undefined ? client.token : exchange.token;
      let yoga = await ask(yogaOnly, token, exchange, `yoga-${index}`);
      let id = `front-${index}`;
      let front = await ask(withFront, token, exchange, id);
      for (let attempt = 1; attempt <= 50 && tagless(yoga) !== tagless(front); attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        if (tagless(yoga)) yoga = await ask(yogaOnly, token, exchange, `yoga-${index}-${attempt}`);
        else front = await ask(withFront, token, exchange, (id = `front-${index}-${attempt}`));
      }
      // Each answer names its own request id.
      expect(front.headers['x-request-id'], exchange.name).toBe(id);
      delete front.headers['x-request-id'];
      delete yoga.headers['x-request-id'];
      expect({ name: exchange.name, ...front }).toEqual({ name: exchange.name, ...yoga });
      const stages = stagesById.get(id) ?? [];
      if (exchange.path === '/schema.graphql') continue;
      // The front arrives once, with its light request; what it hands over keeps that arrival.
      expect(stages.filter((entry) => entry.stage === 'arrive'), exchange.name).toHaveLength(1);
      expect(stages[0]!.light, exchange.name).toBe(exchange.front || !exchange.name.includes('never taken'));
      expect(stages.every((entry) => entry.light), exchange.name).toBe(exchange.front);
      expect(stages.filter((entry) => entry.stage === 'depart'), exchange.name).toHaveLength(1);
    }
  });

  it('leaves a request whose Host makes no URL to Yoga, and answers it as Yoga alone does', async () => {
    const statusLine = (at: Server, host: string) =>
      new Promise<string>((resolve) => {
        const body = '{"query":"{ __typename }"}';
        const socket = net.connect((at.address() as AddressInfo).port, '127.0.0.1', () =>
          socket.write(`POST /graphql HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`),
        );
        let received = '';
        socket.on('data', (chunk) => (received += chunk));
        socket.on('close', () => resolve(received.split('\r\n')[0]!));
      });
    for (const host of ['bad host', '[::1', 'a/b']) expect(await statusLine(withFront, host), host).toBe(await statusLine(yogaOnly, host));
    // And the server is still there.
    expect((await fetch(`${base(withFront)}/healthz`)).status).toBe(200);
  });

  it('revalidates a conditional request with a 304, as Yoga alone does', async () => {
    const client = await server.newWorkspace();
    await createStore(client);
    const exchange: Exchange = { name: 'a GET query', method: 'GET', path: `/graphql?query=${encodeURIComponent('{ memoryStores { totalCount } }')}`, front: true };
    // A tag is withheld, and a 304 too, while a transaction of this database that this test
    // does not control runs below the workspace's newest event (its mark is unsettled): ask again.
    const unsettled = (reply: { status: number; headers: Record<string, string> }) => reply.status === 200 && reply.headers.etag === undefined;
    const first = await askAgain(() => ask(withFront, client.token, exchange, 'tag-1'), unsettled);
    const tag = first.headers.etag!;
    expect(tag).toMatch(/^W\/"/);
    const again = { ...exchange, headers: { 'if-none-match': tag } };
    const front = await askAgain(() => ask(withFront, client.token, again, 'tag-2'), unsettled);
    const yoga = await askAgain(() => ask(yogaOnly, client.token, again, 'tag-3'), unsettled);
    expect(front.status).toBe(304);
    delete front.headers['x-request-id'];
    delete yoga.headers['x-request-id'];
    expect(front).toEqual(yoga);
  });
});
