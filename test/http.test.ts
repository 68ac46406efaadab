import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { apiKeys } from '../src/db/schema.js';
import { generateToken } from '../src/domain/api-keys.js';
import { REQUEST_ID_MAX_CHARACTERS } from '../src/domain/limits.js';
import { createLogger } from '../src/logger.js';
import { createStore } from './support/builders.js';
import { CreateStore, GetStore, ListStores } from './support/documents.js';
import { useTestServer } from './support/server.js';
import { standInHandle } from './support/database.js';

const server = useTestServer();

const expectUnauthenticated = (response: { status: number; headers: Headers; errors?: { extensions?: Record<string, unknown> }[]; data?: unknown }) => {
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toBe('Bearer');
  expect(response.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  expect(response.data ?? null).toBeNull();
};

describe('authentication', () => {
  it('answers 401 UNAUTHENTICATED without an Authorization header', async () => {
    expectUnauthenticated(await server.anonymous().execute(ListStores, {}));
  });

  it('answers 401 for unknown, malformed and non-Bearer credentials', async () => {
    expectUnauthenticated(await server.anonymous(generateToken()).execute(ListStores, {}));
    expectUnauthenticated(await server.anonymous('msk_short').execute(ListStores, {}));
    const client = await server.newWorkspace();
    expectUnauthenticated(await server.anonymous().execute(ListStores, {}, { authorization: `Basic ${client.token}` }));
    expectUnauthenticated(await server.anonymous().execute(ListStores, {}, { authorization: 'Bearer' }));
  });

  it('answers 401 for a revoked key from the next request on, and writes nothing', async () => {
    const client = await server.newWorkspace();
    expect((await client.execute(ListStores, {})).status).toBe(200);
    await server.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.workspaceId, client.workspaceId));
    expectUnauthenticated(await client.execute(CreateStore, { input: { name: 'x' } }));
  });

  it('accepts the Bearer scheme in any case', async () => {
    const client = await server.newWorkspace();
    const response = await server.anonymous().execute(ListStores, {}, { authorization: `bearer ${client.token}` });
    expect(response.status).toBe(200);
  });

  it('scopes every read to the caller\'s workspace', async () => {
    const alice = await server.newWorkspace();
    const bob = await server.newWorkspace();
    const store = await createStore(alice);
    expect((await bob.data(GetStore, { id: store.id })).memoryStore).toBeNull();
    expect((await alice.data(GetStore, { id: store.id })).memoryStore?.id).toBe(store.id);
  });
});

describe('HTTP', () => {
  it('echoes a client\'s x-request-id and makes one up otherwise', async () => {
    const client = await server.newWorkspace();
    const echoed = await client.execute(ListStores, {}, { 'x-request-id': 'trace-123' });
    expect(echoed.headers.get('x-request-id')).toBe('trace-123');
    const made = await client.execute(ListStores, {});
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const odd = await client.execute(ListStores, {}, { 'x-request-id': 'has spaces and "quotes"' });
    expect(odd.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const unauthenticated = await server.anonymous().execute(ListStores, {}, { 'x-request-id': 'trace-401' });
    expect(unauthenticated.headers.get('x-request-id')).toBe('trace-401');
  });

  it('serves /healthz and /readyz without credentials', async () => {
    const health = await server.app.fetch('http://memstore.test/healthz');
    expect(health.status).toBe(200);
    expect(health.headers.get('x-request-id')).toBeTruthy();
    const ready = await server.app.fetch('http://memstore.test/readyz');
    expect(ready.status).toBe(200);
  });

  it('answers /readyz with 503 when the database does not answer', async () => {
    const app = createApp({
      config: { nodeEnv: 'test', graphiql: false },
      database: standInHandle(server.db, () => Promise.reject(new Error('connection refused'))),
    });
    expect((await app.fetch('http://memstore.test/readyz')).status).toBe(503);
  });

  it('serves GraphiQL to browsers without credentials, with the development key pre-filled on this machine', async () => {
    const app = createApp({ config: { nodeEnv: 'development', graphiql: true }, database: server.database.handle, developmentKey: 'msk_prefilled' });
    // A loopback host name: the key is never put into a page served under any other (test/cross-origin.test.ts).
    const page = await app.fetch('http://localhost:4000/graphql', { headers: { accept: 'text/html', 'x-request-id': 'trace-page' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('x-request-id')).toBe('trace-page');
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('GraphiQL');
    expect(html).toContain('Bearer msk_prefilled');
  });

  it('never pre-fills a key in production', async () => {
    const app = createApp({ config: { nodeEnv: 'production', graphiql: true }, database: server.database.handle, developmentKey: 'msk_prefilled' });
    const html = await (await app.fetch('http://memstore.test/graphql', { headers: { accept: 'text/html' } })).text();
    expect(html).not.toContain('msk_prefilled');
  });

  it('does not serve GraphiQL when it is switched off', async () => {
    const app = createApp({ config: { nodeEnv: 'production', graphiql: false }, database: server.database.handle });
    const response = await app.fetch('http://memstore.test/graphql', { headers: { accept: 'text/html' } });
    expect(response.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
  });

  it('masks unexpected failures: no SQL or stack reaches the client, and the log has the request id', async () => {
    const lines: string[] = [];
    const failingDb = new Proxy(server.db, {
      get(target, property, receiver) {
        // createMemoryStore inserts the store and its event in one transaction.
        if (property === 'insert' || property === 'transaction') {
          return () => {
            throw new Error('insert into "memory_stores" failed: secret detail');
          };
        }
        return Reflect.get(target, property, receiver);
      },
    });
    const app = createApp({
      config: { nodeEnv: 'test', graphiql: false },
      database: standInHandle(failingDb),
      logger: createLogger('debug', (line) => lines.push(line)),
    });
    const client = await server.newWorkspace();
    const response = await app.fetch('http://memstore.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}`, 'x-request-id': 'trace-masked' },
      body: JSON.stringify({ query: 'mutation { createMemoryStore(input: { name: "x" }) { __typename } }' }),
    });
    const body = await response.text();
    expect(body).not.toMatch(/memory_stores|secret|at .*\.ts/);
    expect(JSON.parse(body).errors[0]).toMatchObject({ message: 'Unexpected error.', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'unexpected error');
    expect(logged).toMatchObject({ level: 'error', requestId: 'trace-masked', error: { message: expect.stringContaining('secret detail') } });
    expect(lines.join('')).not.toContain(client.token!);
  });

  it('logs one JSON line per request with the request id and never the token', async () => {
    const lines: string[] = [];
    const app = createApp({
      config: { nodeEnv: 'test', graphiql: false },
      database: server.database.handle,
      logger: createLogger('info', (line) => lines.push(line)),
    });
    const client = await server.newWorkspace();
    await app.fetch('http://memstore.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}`, 'x-request-id': 'trace-log' },
      body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }),
    });
    const entries = lines.map((line) => JSON.parse(line));
    expect(entries).toContainEqual(expect.objectContaining({ msg: 'request', requestId: 'trace-log', method: 'POST', path: '/graphql', status: 200 }));
    expect(lines.join('')).not.toContain(client.token!);
  });
});

describe('GraphiQL assets', () => {
  it('are served by this server (no CDN), under a content-addressed, cacheable path', async () => {
    const app = createApp({ config: { nodeEnv: 'development', graphiql: true }, database: server.database.handle });
    const html = await (await app.fetch('http://memstore.test/graphql', { headers: { accept: 'text/html' } })).text();
    expect(html).not.toMatch(/https?:\/\/(unpkg|cdn|raw\.githubusercontent)/);
    const paths = [...html.matchAll(/\/graphiql\/[0-9a-f]{16}\/[a-z.-]+\.(?:js|css)/g)].map((match) => match[0]);
    expect(paths.length).toBeGreaterThanOrEqual(5);
    for (const path of paths) {
      const asset = await app.fetch(`http://memstore.test${path}`);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get('cache-control')).toContain('immutable');
      expect((await asset.text()).length).toBeGreaterThan(100);
    }
    expect((await app.fetch('http://memstore.test/graphiql/0000000000000000/yoga-graphiql.js')).status).toBe(404);
  });
});

describe('HTTP edges', () => {
  it(`echoes an x-request-id of ${REQUEST_ID_MAX_CHARACTERS} characters and replaces a longer one`, async () => {
    expect(REQUEST_ID_MAX_CHARACTERS).toBe(128);
    const client = await server.newWorkspace();
    const longest = 'a'.repeat(REQUEST_ID_MAX_CHARACTERS);
    expect((await client.execute(ListStores, {}, { 'x-request-id': longest })).headers.get('x-request-id')).toBe(longest);
    const tooLong = 'a'.repeat(REQUEST_ID_MAX_CHARACTERS + 1);
    expect((await client.execute(ListStores, {}, { 'x-request-id': tooLong })).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses a bare token sent without the Bearer scheme', async () => {
    const client = await server.newWorkspace();
    expectUnauthenticated(await server.anonymous().execute(ListStores, {}, { authorization: client.token! }));
  });
});
