import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import {
  CONTENT_MAX_BYTES,
  COUNT_SCAN_COST,
  MAX_DISCARDED_BODY_BYTES,
  MAX_QUERY_COST,
  MAX_REQUEST_BODY_BYTES,
  MEMORY_METADATA_MAX_KEYS,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  PATH_MAX_BYTES,
  PATH_SEGMENT_MAX_BYTES,
} from '../src/domain/limits.js';
import { generateToken } from '../src/domain/api-keys.js';
import { createStore, memoryRows } from './support/builders.js';
import { startServerProcess } from './support/process.js';
import { ListStores } from './support/documents.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const GRAPHQL_URL = 'http://memstore.test/graphql';
const CREATE_MEMORY = `mutation ($input: CreateMemoryInput!) {
  createMemory(input: $input) { __typename ... on CreateMemorySuccess { memory { id contentSizeBytes } } ... on Error { code message } }
}`;

/** JSON text with every character written as a \u escape (surrogate pairs for astral ones): the longest a client can make it. */
function jsonEscapedWorst(value: string): string {
  let escaped = '"';
  for (let index = 0; index < value.length; index += 1) escaped += `\\u${value.charCodeAt(index).toString(16).padStart(4, '0')}`;
  return `${escaped}"`;
}

async function post(client: TestClient, body: BodyInit, headers: Record<string, string> = {}) {
  const response = await server.app.fetch(GRAPHQL_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}`, ...headers },
    body,
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: text ? JSON.parse(text) : null };
}

/** A createMemory request body padded with trailing spaces to exactly `bytes` bytes. */
function createMemoryBody(memoryStoreId: string, path: string, content: string, bytes: number): string {
  const body = JSON.stringify({ query: CREATE_MEMORY, variables: { input: { memoryStoreId, path, content } } });
  expect(Buffer.byteLength(body)).toBeLessThanOrEqual(bytes);
  return body + ' '.repeat(bytes - Buffer.byteLength(body));
}

describe('the request body limit', () => {
  it('admits a maximal memory written in the worst JSON escaping, with maximal path and metadata', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const content = 'a'.repeat(CONTENT_MAX_BYTES);
    // Segments of at most PATH_SEGMENT_MAX_BYTES that add up, with their slashes, to PATH_MAX_BYTES.
    const segments: string[] = [];
    for (let left = PATH_MAX_BYTES; left > 0; left -= segments.at(-1)!.length + 1) {
      segments.push('p'.repeat(Math.min(PATH_SEGMENT_MAX_BYTES, left - (left > PATH_SEGMENT_MAX_BYTES ? 2 : 0))));
    }
    const path = segments.join('/');
    expect(Buffer.byteLength(path)).toBe(PATH_MAX_BYTES);
    // Astral characters: 12 bytes of JSON per character of the metadata limits.
    const astral = '\u{1F600}';
    const metadata = Object.fromEntries(
      Array.from({ length: MEMORY_METADATA_MAX_KEYS }, (_, index) => [
        `${String(index).padStart(2, '0')}${astral.repeat(METADATA_KEY_MAX_CHARACTERS - 2)}`,
        astral.repeat(METADATA_VALUE_MAX_CHARACTERS),
      ]),
    );
    const metadataJson = `{${Object.entries(metadata).map(([key, value]) => `${jsonEscapedWorst(key)}:${jsonEscapedWorst(value)}`).join(',')}}`;
    const body =
      `{"query":${JSON.stringify(CREATE_MEMORY)},"variables":{"input":{"memoryStoreId":${jsonEscapedWorst(store.id)},` +
      `"path":${jsonEscapedWorst(path)},"content":${jsonEscapedWorst(content)},"metadata":${metadataJson}}}}`;
    expect(Buffer.byteLength(body)).toBeGreaterThan(6 * CONTENT_MAX_BYTES);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_REQUEST_BODY_BYTES);
    const response = await post(client, body);
    expect(response.status).toBe(200);
    expect(response.json.data.createMemory, JSON.stringify(response.json.data.createMemory).slice(0, 500)).toMatchObject({ __typename: 'CreateMemorySuccess', memory: { contentSizeBytes: CONTENT_MAX_BYTES } });
  });

  it(`answers a body of exactly ${MAX_REQUEST_BODY_BYTES} bytes and refuses ${MAX_REQUEST_BODY_BYTES + 1} with 413 PAYLOAD_TOO_LARGE, writing nothing`, async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const atLimit = await post(client, createMemoryBody(store.id, 'notes/at-limit.md', 'fits', MAX_REQUEST_BODY_BYTES));
    expect(atLimit.status).toBe(200);
    expect(atLimit.json.data.createMemory.__typename).toBe('CreateMemorySuccess');

    const overLimit = await post(client, createMemoryBody(store.id, 'notes/over-limit.md', 'too big', MAX_REQUEST_BODY_BYTES + 1));
    expect(overLimit.status).toBe(413);
    expect(overLimit.json.errors[0].extensions).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', max: MAX_REQUEST_BODY_BYTES });
    expect((await memoryRows(server.db, client.workspaceId, store.id)).map((row) => row.path)).toEqual(['notes/at-limit.md']);
  });

  it(`refuses a streamed body without Content-Length once it passes the limit, and reads (and discards) no more than ${MAX_DISCARDED_BODY_BYTES} bytes of it`, async () => {
    const client = await server.newWorkspace();
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 1;
        controller.enqueue(chunk);
      },
    });
    const response = await post(client, endless);
    expect(response.status).toBe(413);
    expect(response.json.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    expect(pulled * chunk.byteLength).toBeLessThan(MAX_DISCARDED_BODY_BYTES + 4 * chunk.byteLength);
  });

  it(`refuses a declared Content-Length over ${MAX_DISCARDED_BODY_BYTES} bytes before reading the body`, async () => {
    const client = await server.newWorkspace();
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 1;
        controller.enqueue(new Uint8Array(16).fill(0x20));
      },
    });
    const response = await post(client, stream, { 'content-length': String(MAX_DISCARDED_BODY_BYTES + 1) });
    expect(response.status).toBe(413);
    expect(response.headers.get('connection')).toBe('close');
    expect(pulled).toBeLessThanOrEqual(1);
  });

  it('answers a 5 MB body with a 413 the client can read, every time, from a server process (30 tries with Content-Length, 30 chunked)', { timeout: 60_000 }, async () => {
    const token = generateToken();
    const process = startServerProcess({ MEMSTORE_DATA_DIR: 'memory://', MEMSTORE_BOOTSTRAP_KEYS: `big-bodies:${token}`, MEMSTORE_RATE_LIMIT_PER_SECOND: '0' });
    try {
      const { port } = new URL(await process.ready);
      const body = Buffer.alloc(5 * 1024 * 1024, 0x20);
      const send = (chunked: boolean) =>
        new Promise<string>((resolve) => {
          const headers: Record<string, string | number> = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
          if (!chunked) headers['content-length'] = body.byteLength;
          const request = http.request({ host: '127.0.0.1', port, path: '/graphql', method: 'POST', headers }, (response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk) => (text += chunk));
            response.on('end', () => resolve(`${response.statusCode} ${JSON.parse(text).errors[0].extensions.code}`));
            response.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
          });
          request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
          if (chunked) {
            for (let offset = 0; offset < body.byteLength; offset += 64 * 1024) request.write(body.subarray(offset, offset + 64 * 1024));
            request.end();
          } else {
            request.end(body);
          }
        });
      for (const chunked of [false, true]) {
        const outcomes: string[] = [];
        for (let attempt = 0; attempt < 30; attempt += 1) outcomes.push(await send(chunked));
        expect(outcomes, chunked ? 'chunked' : 'with Content-Length').toEqual(Array(30).fill('413 PAYLOAD_TOO_LARGE'));
      }
    } finally {
      process.child.kill('SIGTERM');
      await process.exited;
    }
  });
});

describe('what a request may be', () => {
  it('refuses batched operations with 400 BAD_REQUEST', async () => {
    const client = await server.newWorkspace();
    for (const batch of [[{ query: '{ __typename }' }], [{ query: '{ __typename }' }, { query: '{ __typename }' }]]) {
      const response = await post(client, JSON.stringify(batch));
      expect(response.status).toBe(400);
      expect(response.json.errors[0]).toMatchObject({ message: 'Batching is not supported.', extensions: { code: 'BAD_REQUEST' } });
    }
  });

  it('refuses bodies that are not JSON objects, and POSTs that are not JSON, with clear codes', async () => {
    const client = await server.newWorkspace();
    expect((await post(client, '{"query": ')).json.errors[0].extensions.code).toBe('BAD_REQUEST');
    expect((await post(client, '"just a string"')).status).toBe(400);
    for (const contentType of ['application/graphql', 'application/xml']) {
      const response = await post(client, '{ __typename }', { 'content-type': contentType });
      expect(response.status).toBe(415);
      expect(response.json.errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    const withCharset = await post(client, JSON.stringify({ query: '{ __typename }' }), { 'content-type': 'application/json; charset=utf-8' });
    expect(withCharset.json).toEqual({ data: { __typename: 'Query' }, extensions: { cost: { estimated: 1, limit: MAX_QUERY_COST } } });
  });

  it('answers GET /graphql?query=… with a valid key and no other header; without a key, 401 UNAUTHENTICATED', async () => {
    const client = await server.newWorkspace();
    const url = `${GRAPHQL_URL}?query=${encodeURIComponent('{ memoryStores { totalCount } }')}`;
    const allowed = await server.app.fetch(url, { headers: { authorization: `Bearer ${client.token}` } });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ data: { memoryStores: { totalCount: 0 } }, extensions: { cost: { estimated: 1 + COUNT_SCAN_COST, limit: MAX_QUERY_COST } } });
    const anonymous = await server.app.fetch(url, { headers: { accept: 'application/json' } });
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()).errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('refuses POSTs of forms and plain text (what a page of another site can send without a preflight) with 415', async () => {
    const client = await server.newWorkspace();
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const response = await post(client, JSON.stringify({ query: 'mutation { createMemoryStore(input: { name: "forged" }) { __typename } }' }), { 'content-type': contentType });
      expect(response.status, contentType).toBe(415);
      expect(response.json.errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    }
    expect((await client.data(ListStores, {})).memoryStores.totalCount).toBe(0);
  });

  it('refuses GET parameters that are not JSON with 400 BAD_REQUEST', async () => {
    const client = await server.newWorkspace();
    for (const parameters of ['variables=%7B', 'extensions=%7B', 'variables=%7B%22a%22%3A']) {
      const response = await server.app.fetch(`${GRAPHQL_URL}?query=%7B__typename%7D&${parameters}`, {
        headers: { authorization: `Bearer ${client.token}`, accept: 'application/json'},
      });
      expect(response.status, parameters).toBe(400);
      expect((await response.json()).errors[0].extensions.code).toBe('BAD_REQUEST');
    }
    const fine = await server.app.fetch(`${GRAPHQL_URL}?query=${encodeURIComponent('query ($n: Int) { memoryStores(first: $n) { totalCount } }')}&variables=${encodeURIComponent('{"n":1}')}`, {
      headers: { authorization: `Bearer ${client.token}`, accept: 'application/json'},
    });
    expect(await fine.json()).toEqual({ data: { memoryStores: { totalCount: 0 } }, extensions: { cost: { estimated: 1 + COUNT_SCAN_COST, limit: MAX_QUERY_COST } } });
  });

  it('never runs a mutation sent with GET: 405, and nothing is written', async () => {
    const client = await server.newWorkspace();
    const query = encodeURIComponent('mutation { createMemoryStore(input: { name: "via-get" }) { __typename } }');
    const response = await server.app.fetch(`${GRAPHQL_URL}?query=${query}`, {
      headers: { authorization: `Bearer ${client.token}`, accept: 'application/json'},
    });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect((await client.data(ListStores, {})).memoryStores.totalCount).toBe(0);
  });

  it('applies the same limits to every app: production included', async () => {
    const app = createApp({ config: { nodeEnv: 'production', graphiql: false }, database: server.database.handle });
    const client = await server.newWorkspace();
    const response = await app.fetch(GRAPHQL_URL, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` },
      body: ' '.repeat(MAX_REQUEST_BODY_BYTES + 1),
    });
    expect(response.status).toBe(413);
  });
});
