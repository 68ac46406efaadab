import { randomBytes } from 'node:crypto';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import { afterAll, beforeAll } from 'vitest';
import { createApp, eventHubOf, type App, type AppOptions } from '../../src/app.js';
import type { Database } from '../../src/db/client.js';
import { ensureAdminKey, generateToken } from '../../src/domain/api-keys.js';
import { openTestDatabase, type TestDatabase } from './database.js';

export interface GraphQLResponse<Result> {
  status: number;
  headers: Headers;
  data?: Result | null;
  errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, unknown> }[];
  extensions?: Record<string, unknown>;
}

/** Sends operations through real HTTP handling (`app.fetch`) with one API key. */
export class TestClient {
  constructor(
    readonly app: App,
    readonly token: string | null,
    readonly workspaceId: string,
  ) {}

  async execute<Result, Variables extends Record<string, unknown>>(
    document: TypedDocumentNode<Result, Variables>,
    ...[variables, headers]: Variables extends Record<string, never> ? [Variables?, Record<string, string>?] : [Variables, Record<string, string>?]
  ): Promise<GraphQLResponse<Result>> {
    return this.send({ query: print(document), variables }, headers);
  }

  /**
   * A raw request body, for what typed documents cannot express (bad arguments, odd JSON):
   * an object is sent as JSON, a string is sent byte for byte as the JSON text.
   */
  async send(body: unknown, headers: Record<string, string> = {}): Promise<GraphQLResponse<any>> {
    const response = await this.app.fetch('http://memstore.test/graphql', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
        ...(this.token === null ? {} : { authorization: `Bearer ${this.token}` }),
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const json = (await response.json()) as Omit<GraphQLResponse<unknown>, 'status' | 'headers'>;
    return { status: response.status, headers: response.headers, ...json } as GraphQLResponse<any>;
  }

  /** Like `execute`, but fails the test unless the response has data and no errors. */
  async data<Result, Variables extends Record<string, unknown>>(
    document: TypedDocumentNode<Result, Variables>,
    variables?: Variables,
  ): Promise<Result> {
    const response = await this.send({ query: print(document), variables });
    if (response.errors?.length || !response.data) {
      throw new Error(`Expected data, got ${response.status}: ${JSON.stringify(response.errors)}`);
    }
    return response.data as Result;
  }
}

export interface TestServer {
  app: App;
  database: TestDatabase;
  db: Database;
  /** A new workspace (of a fresh id, unless given) with one ADMIN key, and a client that uses it. */
  newWorkspace(workspaceId?: string): Promise<TestClient>;
  /** A client without credentials (or with the given raw token). */
  anonymous(token?: string | null): TestClient;
}

/** Options of the app under test besides its config and database (e.g. `singleStatementWrites: false`). */
export type TestAppOptions = Omit<AppOptions, 'config' | 'database'>;

export async function startTestServer(options: TestAppOptions = {}): Promise<TestServer> {
  const database = await openTestDatabase();
  const app = createApp({ config: { nodeEnv: 'test', graphiql: true }, database: database.handle, ...options });
  const db = database.handle.db;
  return {
    app,
    database,
    db,
    async newWorkspace(workspaceId = `ws_${randomBytes(6).toString('hex')}`) {
      const token = generateToken();
      await ensureAdminKey(db, workspaceId, token, new Date(), 'test key');
      return new TestClient(app, token, workspaceId);
    },
    anonymous(token = null) {
      return new TestClient(app, token, '');
    },
  };
}

/** Starts a test server for the file (before its tests) and releases it afterwards. */
export function useTestServer(options: TestAppOptions = {}): TestServer {
  const server = {} as TestServer;
  beforeAll(async () => {
    Object.assign(server, await startTestServer(options));
  });
  afterAll(async () => {
    // Test files of a worker share its database: a file's poller must not outlive the file.
    if (server.app) await eventHubOf(server.app).close();
    await server.database?.release();
  });
  return server;
}

/**
 * The two ways memory writes are made: one statement first, falling back to the transaction
 * (the default), and the transaction alone. Write tests run under both (describe.each).
 */
export const WRITE_PATHS = [
  { writes: 'one statement first', singleStatementWrites: true },
  { writes: 'transactions only', singleStatementWrites: false },
] as const;
