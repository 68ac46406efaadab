import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generate } from '@graphql-codegen/cli';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { PersistedDocuments, PersistedDocumentsError } from '../src/http/persisted-documents.js';
import { createStore } from './support/builders.js';
import { ListStores } from './support/documents.js';
import { useTestServer } from './support/server.js';

/**
 * Trusted documents: the manifest GraphQL Code Generator's client preset writes with
 * `persistedDocuments: true`, generated here from a client's document, lets that client send
 * `documentId` instead of the query; in only-mode nothing else runs.
 */

const server = useTestServer();

const CLIENT_DOCUMENT = /* GraphQL */ `
  query TrustedStores($first: Int!) {
    memoryStores(first: $first) { totalCount edges { node { name } } }
  }
  mutation TrustedCreate($name: String!) {
    createMemoryStore(input: { name: $name }) { __typename }
  }
`;

let manifest: Record<string, string>;
let manifestFile: string;
let storesId: string;
let createId: string;

beforeAll(async () => {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-trusted-'));
  fs.writeFileSync(path.join(directory, 'client.graphql'), CLIENT_DOCUMENT);
  await generate(
    {
      schema: path.resolve('schema.graphql'),
      documents: [path.join(directory, 'client.graphql')],
      generates: { [`${directory}/gql/`]: { preset: 'client', presetConfig: { persistedDocuments: true } } },
      silent: true,
    },
    true,
  );
  manifestFile = path.join(directory, 'gql', 'persisted-documents.json');
  manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as Record<string, string>;
  const byName = (name: string) => Object.entries(manifest).find(([, text]) => text.includes(name))![0];
  storesId = byName('TrustedStores');
  createId = byName('TrustedCreate');
}, 60_000);

function trustedApp(only: boolean, leanPath = true) {
  return createApp({
    config: { nodeEnv: 'test', graphiql: false },
    database: server.database.handle,
    persistedDocuments: PersistedDocuments.load(manifestFile, only),
    leanPath,
  });
}

async function post(app: ReturnType<typeof createApp>, token: string, body: unknown) {
  const response = await app.fetch('http://memstore.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { data?: any; errors?: { extensions: { code: string } }[] } };
}

describe('trusted documents', () => {
  it('reads the manifest codegen writes: one entry per operation, hash to document text', () => {
    expect(Object.keys(manifest)).toHaveLength(2);
    expect(manifest[storesId]).toContain('query TrustedStores');
  });

  it.each([true, false])('runs a trusted document named by its documentId, with variables (lean path: %s)', async (leanPath) => {
    const client = await server.newWorkspace();
    await createStore(client, { name: 'trusted one' });
    const app = trustedApp(false, leanPath);
    const answer = await post(app, client.token!, { documentId: storesId, variables: { first: 5 } });
    expect(answer).toEqual({ status: 200, body: { data: { memoryStores: { totalCount: 1, edges: [{ node: { name: 'trusted one' } }] } }, extensions: expect.anything() } });
    // With the algorithm's prefix too, and through a GET.
    expect((await post(app, client.token!, { documentId: `sha256:${storesId}`, variables: { first: 5 } })).status).toBe(200);
    const get = await app.fetch(`http://memstore.test/graphql?documentId=${storesId}&variables=${encodeURIComponent('{"first":1}')}`, {
      headers: { authorization: `Bearer ${client.token}`, accept: 'application/json' },
    });
    expect(get.status).toBe(200);
    expect(((await get.json()) as { data: any }).data.memoryStores.totalCount).toBe(1);
  });

  it.each([true, false])('refuses an unknown documentId with 400 PERSISTED_DOCUMENT_NOT_FOUND, running nothing (lean path: %s)', async (leanPath) => {
    const client = await server.newWorkspace();
    const answer = await post(trustedApp(false, leanPath), client.token!, { documentId: 'f'.repeat(64), variables: { name: 'never' } });
    // (An id of no document: nothing ran, so nothing was created.)
    expect(answer.status).toBe(400);
    expect(answer.body.errors?.[0]?.extensions.code).toBe('PERSISTED_DOCUMENT_NOT_FOUND');
    expect((await client.data(ListStores, {})).memoryStores.totalCount).toBe(0);
  });

  it.each([true, false])('in only-mode refuses a raw document with 400 PERSISTED_DOCUMENT_REQUIRED, and runs trusted ones (lean path: %s)', async (leanPath) => {
    const client = await server.newWorkspace();
    const app = trustedApp(true, leanPath);
    const raw = await post(app, client.token!, { query: 'mutation { createMemoryStore(input: { name: "raw" }) { __typename } }' });
    expect(raw.status).toBe(400);
    expect(raw.body.errors?.[0]?.extensions.code).toBe('PERSISTED_DOCUMENT_REQUIRED');
    const trusted = await post(app, client.token!, { documentId: createId, variables: { name: 'trusted' } });
    expect(trusted.body.data).toEqual({ createMemoryStore: { __typename: 'CreateMemoryStoreSuccess' } });
    const stores = await post(app, client.token!, { documentId: storesId, variables: { first: 10 } });
    expect(stores.body.data.memoryStores.edges).toEqual([{ node: { name: 'trusted' } }]);
  });

  it('refuses a request that sends both a query and a documentId', async () => {
    const client = await server.newWorkspace();
    const answer = await post(trustedApp(false), client.token!, { documentId: storesId, query: '{ __typename }' });
    expect(answer.status).toBe(400);
    expect(answer.body.errors?.[0]?.extensions.code).toBe('INVALID_REQUEST');
  });

  it('stops the server from starting on a manifest it cannot use, with a message naming the file', () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-trusted-bad-'));
    const notJson = path.join(directory, 'bad.json');
    fs.writeFileSync(notJson, '{ nope');
    expect(() => PersistedDocuments.load(notJson, true)).toThrow(PersistedDocumentsError);
    expect(() => PersistedDocuments.load(notJson, true)).toThrow(/bad\.json is not JSON/);
    expect(() => PersistedDocuments.load(path.join(directory, 'missing.json'), true)).toThrow(/cannot read .*missing\.json \(ENOENT\)/);
    fs.writeFileSync(notJson, '{"abc": 42}');
    expect(() => PersistedDocuments.load(notJson, true)).toThrow(/"abc" must map a hash to a document text/);
  });
});

describe('a documentId sent to a server without trusted documents', () => {
  it('is refused with 400 PERSISTED_DOCUMENT_NOT_FOUND, and plain queries run as ever', async () => {
    const client = await server.newWorkspace();
    const answer = await client.send({ documentId: 'abc' });
    expect(answer.status).toBe(400);
    expect(answer.errors?.[0]?.extensions?.code).toBe('PERSISTED_DOCUMENT_NOT_FOUND');
    expect((await client.send({ query: '{ __typename }' })).data).toEqual({ __typename: 'Query' });
  });
});
