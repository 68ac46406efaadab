import { describe, expect, it } from 'vitest';
import { createApp, eventHubOf, type App } from '../src/app.js';
import { countStatements } from '../src/db/statement-count.js';
import { generateToken } from '../src/domain/api-keys.js';
import { readsCompiledSoFar } from '../src/read-compiler/compile.js';
import { RestClient, segment } from './support/rest.js';
import { useTestServer } from './support/server.js';

/**
 * Compiling a read costs the server up to tens of milliseconds for the largest query within
 * the limits (30 ms measured for 25 store pages of fragments), and a token no key has got
 * that for free: each random token has a rate-limit bucket of its own. A read not compiled
 * yet is compiled only once the request's key is known, so a token no key has gets its 401
 * after one small statement, the key lookup, and nothing is compiled for it.
 */

const server = useTestServer();

/** An app of its own: its compiled reads are its own, so every read here is new to it. */
function freshApp(options: { leanPath?: boolean } = {}): App {
  return createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, ...options });
}

function post(app: App, token: string, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return app.fetch('http://memstore.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
    body: JSON.stringify({ query, variables }),
  });
}

/** A dashboard-like read with a store, its memories and their versions. */
const DASHBOARD = `query ($first: Int!) { memoryStores(first: $first) { edges { node { id name memories(first: 5) { edges { node { id path versions(first: 2) { edges { node { id operation } } } } } } } } } }`;

async function compilesAndStatements(work: () => Response | Promise<Response>) {
  const before = readsCompiledSoFar();
  const { result: response, statements } = await countStatements(async () => work());
  return { status: response.status, compiled: readsCompiledSoFar() - before, statements, body: (await response.json()) as { errors?: { extensions?: { code?: string } }[] } };
}

describe('a read for a token no key has', () => {
  const paths: { path: string; options: { leanPath?: boolean }; headers: Record<string, string> }[] = [
    { path: 'the lean path', options: {}, headers: {} },
    { path: 'Yoga (a request of a web page)', options: {}, headers: { origin: 'https://dashboard.example' } },
    { path: 'Yoga alone', options: { leanPath: false }, headers: {} },
  ];

  it.each(paths)('is refused 401 on $path after one statement, with nothing compiled; the key then compiles it once', async ({ options, headers }) => {
    const client = await server.newWorkspace();
    const app = freshApp(options);
    try {
      const stranger = await compilesAndStatements(() => post(app, generateToken(), DASHBOARD, { first: 3 }, headers));
      expect(stranger.status).toBe(401);
      expect(stranger.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      expect({ compiled: stranger.compiled, statements: stranger.statements }).toEqual({ compiled: 0, statements: 1 });

      // Another stranger, another new read (the same query with other variables' kinds of value).
      const second = await compilesAndStatements(() => post(app, generateToken(), DASHBOARD, { first: 4 }, headers));
      expect({ status: second.status, compiled: second.compiled, statements: second.statements }).toEqual({ status: 401, compiled: 0, statements: 1 });

      // The key compiles it once; a later request of the key compiles nothing.
      const owner = await compilesAndStatements(() => post(app, client.token!, DASHBOARD, { first: 3 }, headers));
      expect(owner.status).toBe(200);
      expect(owner.compiled).toBe(1);
      const again = await compilesAndStatements(() => post(app, client.token!, DASHBOARD, { first: 3 }, headers));
      expect({ status: again.status, compiled: again.compiled, statements: again.statements }).toEqual({ status: 200, compiled: 0, statements: 1 });

      // A stranger asking a read that is kept costs the one compiled statement, which refuses it.
      const kept = await compilesAndStatements(() => post(app, generateToken(), DASHBOARD, { first: 3 }, headers));
      expect({ status: kept.status, compiled: kept.compiled, statements: kept.statements }).toEqual({ status: 401, compiled: 0, statements: 1 });
    } finally {
      await eventHubOf(app).close();
    }
  });

  it('over Forward REST: a memory read by a token no key has compiles nothing', async () => {
    const client = await server.newWorkspace();
    const app = freshApp();
    try {
      const owner = new RestClient(app, client.token!);
      const store = (await owner.post('/memory_stores', { json: { name: 'strangers' }, headers: { 'idempotency-key': 'strangers' } })).body.id as string;
      const memory = (await owner.post(`/memory_stores/${segment(store)}/memories`, { json: { path: 'a.md', content: 'a' } })).body.id as string;
      const read = `/memory_stores/${segment(store)}/memories/${segment(memory)}`;
      const before = readsCompiledSoFar();
      const { result, statements } = await countStatements(() => new RestClient(app, generateToken()).get(read));
      expect({ status: result.status, compiled: readsCompiledSoFar() - before, statements }).toEqual({ status: 401, compiled: 0, statements: 1 });
      const answered = await owner.get(read);
      expect(answered.status).toBe(200);
      expect(answered.body.id).toBe(memory);
      expect(readsCompiledSoFar() - before).toBe(1);
    } finally {
      await eventHubOf(app).close();
    }
  });
});
