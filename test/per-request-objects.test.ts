import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { contextOnDatabase, createContextFactory } from '../src/context.js';
import { StatementScope } from '../src/db/deadline.js';
import type { Viewer } from '../src/domain/viewer.js';
import { createLoaders } from '../src/graphql/loaders.js';
import { requestListenerOf } from '../src/http/native-front.js';
import { useTestServer } from './support/server.js';

/**
 * The objects made for every request carry no accessors of their own. V8 gives an object
 * whose own getter was defined on it (an object literal with `get x()`, or
 * Object.defineProperty) a hidden class of its own, kept in the old generation, that holds the
 * getter's closure — and through it the request's objects — past every young-generation
 * collection until a full one: about 2.4 KB promoted per request for the native front's
 * signal alone (`--trace-gc-nvp`, README "Memory"). Their getters live on shared prototypes.
 */

const server = useTestServer();

/** The names of the object's own properties that are accessors. */
function ownAccessors(object: object): string[] {
  return Object.getOwnPropertyNames(object).filter((name) => {
    const descriptor = Object.getOwnPropertyDescriptor(object, name)!;
    return descriptor.get !== undefined || descriptor.set !== undefined;
  });
}

const viewer: Viewer = { workspaceId: 'ws_objects', apiKeyId: 'key_objects', kind: 'admin', identityId: null };

describe('objects made for every request', () => {
  it('a request context has no accessors of its own, and makes its loaders once, on first use, on its own database', () => {
    const contexts = createContextFactory(server.database.handle);
    const first = contexts.forViewer('request-1', viewer, new StatementScope());
    const second = contexts.forViewer('request-2', viewer, new StatementScope());
    expect(ownAccessors(first)).toEqual([]);
    expect(Object.getPrototypeOf(first)).toBe(Object.getPrototypeOf(second));
    expect(first.loaders).toBe(first.loaders);
    expect(first.loaders).not.toBe(second.loaders);
    // Each request's database handle (its statements under its scope), made once.
    expect(first.db).toBe(first.db);
    expect(first.db).not.toBe(second.db);
    expect(first.db).not.toBe(server.db);
    expect(ownAccessors(server.database.handle.scoped(new StatementScope()))).toEqual([]);

    // The same request on a transaction of it: the same fields, loaders of its own.
    const onTransaction = contextOnDatabase(first, server.db);
    expect(ownAccessors(onTransaction)).toEqual([]);
    expect({ viewer: onTransaction.viewer, requestId: onTransaction.requestId, now: onTransaction.now, budget: onTransaction.budget }).toEqual({
      viewer: first.viewer,
      requestId: first.requestId,
      now: first.now,
      budget: first.budget,
    });
    expect(onTransaction.budget).toBe(first.budget);
    expect(onTransaction.loaders).not.toBe(first.loaders);
  });

  it("a stream's context has no accessors of its own, and each event gets a clock, a budget and loaders of its own", () => {
    const contexts = createContextFactory(server.database.handle);
    const { context, renew } = contexts.forStream('stream-1', viewer, { hub: {} as never });
    expect(ownAccessors(context)).toEqual([]);
    const before = { now: context.now, budget: context.budget, loaders: context.loaders };
    expect(context.loaders).toBe(before.loaders);
    renew();
    expect(context.budget).not.toBe(before.budget);
    expect(context.loaders).not.toBe(before.loaders);
    expect(context.now.getTime()).toBeGreaterThanOrEqual(before.now.getTime());
  });

  it('loaders have no accessors of their own: each loader is made on first read, once, and two requests share none', () => {
    const first = createLoaders(server.db, viewer);
    const second = createLoaders(server.db, viewer);
    expect(ownAccessors(first)).toEqual([]);
    expect(Object.getPrototypeOf(first)).toBe(Object.getPrototypeOf(second));
    expect(first.memory).toBe(first.memory);
    expect(first.memory).not.toBe(second.memory);
    expect(first.memoryStore).not.toBe(first.memory);
  });

  describe("the native front's request", () => {
    const requests: Request[] = [];
    let listening: Server;

    beforeAll(async () => {
      const app = createApp({
        config: { nodeEnv: 'test', graphiql: true },
        database: server.database.handle,
        onStage: (request, stage) => {
          if (stage === 'arrive' && !(request instanceof app.fetchAPI.Request)) requests.push(request);
        },
      });
      listening = createServer(requestListenerOf(app));
      await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    });

    afterAll(async () => {
      await new Promise((resolve) => listening.close(resolve));
    });

    it('has a signal without accessors of its own, which tells whether the client went away', async () => {
      const client = await server.newWorkspace();
      for (let index = 0; index < 2; index += 1) {
        const response = await fetch(`http://127.0.0.1:${(listening.address() as AddressInfo).port}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` },
          body: JSON.stringify({ query: '{ __typename }' }),
        });
        expect(((await response.json()) as { data: unknown }).data).toEqual({ __typename: 'Query' });
      }
      expect(requests).toHaveLength(2);
      const [first, second] = requests.map((request) => request.signal);
      expect(ownAccessors(first!)).toEqual([]);
      expect(Object.getPrototypeOf(first)).toBe(Object.getPrototypeOf(second));
      // Answered, not gone: the time limit's work was not stopped by the client.
      expect(first!.aborted).toBe(false);
    });
  });
});
