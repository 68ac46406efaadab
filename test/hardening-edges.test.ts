import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { and, eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { requestListenerOf } from '../src/http/native-front.js';
import { memories, sessions, workspaces } from '../src/db/schema.js';
import { createLogger } from '../src/logger.js';
import { createMemory, createStore, newPair, startSession } from './support/builders.js';
import { TestClient, useTestServer } from './support/server.js';

/** Smaller edges, each found by trying to break the server. */

const server = useTestServer();

/** The keys of the first `"metadata"` object in a JSON text, in the order the text has them. */
function metadataKeyOrder(text: string): string[] {
  const start = text.indexOf('"metadata"');
  const open = text.indexOf('{', start);
  const close = text.indexOf('}', open);
  return [...text.slice(open + 1, close).matchAll(/"((?:[^"\\]|\\.)*)"\s*:\s*"(?:[^"\\]|\\.)*"/g)].map((match) => JSON.parse(`"${match[1]}"`) as string);
}

describe('metadata keys', () => {
  it('come in the same order through compiled reads and the resolvers: array-index keys ascending, then shortest first, ties in byte order', async () => {
    const client = await server.newWorkspace();
    const metadata = { b: '1', '10': '2', aa: '3', '9': '4', '0': '5', 'é': '6', '4294967295': '7', '01': '8', Z: '9' };
    const store = await createStore(client, { metadata });
    const memory = await createMemory(client, store.id, { metadata });
    const resolvers = new TestClient(
      createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, compiledReads: false }),
      client.token,
      client.workspaceId,
    );
    // Index keys (0 … 2^32 − 2) first, as numbers; then jsonb's order: by UTF-8 length, then bytes.
    const expected = ['0', '9', '10', 'Z', 'b', '01', 'aa', 'é', '4294967295', 'created_by'];
    for (const query of [`{ memoryStore(id: "${store.id}") { metadata } }`, `{ memory(id: "${memory.id}") { metadata } }`]) {
      const raw = async (app: typeof client.app) =>
        (
          await app.fetch('http://memstore.test/graphql', {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${client.token}` },
            body: JSON.stringify({ query }),
          })
        ).text();
      const compiledText = await raw(client.app);
      const resolverText = await raw(resolvers.app);
      const withoutCreatedBy = (keys: string[]) => (query.includes('memoryStore') ? keys : keys.filter((key) => key !== 'created_by'));
      expect(metadataKeyOrder(resolverText), query).toEqual(withoutCreatedBy(expected));
      expect(metadataKeyOrder(compiledText), query).toEqual(withoutCreatedBy(expected));
    }
  });
});

describe('a client that goes away in the middle of its body', () => {
  it.each([
    ['through Yoga', (app: ReturnType<typeof createApp>) => app as unknown as http.RequestListener],
    ['through the native front', (app: ReturnType<typeof createApp>) => requestListenerOf(app)],
  ])('leaves one debug line per request in the log, and nothing at error level (%s)', async (_path, listenerOf) => {
    const client = await server.newWorkspace();
    const lines: string[] = [];
    const app = createApp({
      config: { nodeEnv: 'test', graphiql: false },
      database: server.database.handle,
      logger: createLogger('debug', (line) => lines.push(line)),
    });
    const listener = http.createServer(listenerOf(app));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const { port } = listener.address() as AddressInfo;
    try {
      for (let attempt = 0; attempt < 20; attempt += 1) {
        await new Promise<void>((resolve) => {
          const socket = net.connect(port, '127.0.0.1', () => {
            socket.write(
              `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer ${client.token}\r\nContent-Length: 5000\r\n\r\n{"query": "{ __typename`,
            );
            setTimeout(() => {
              socket.destroy();
              resolve();
            }, 20);
          });
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }
    const entries = lines.map((line) => JSON.parse(line) as { level: string; msg: string });
    expect(entries.filter((entry) => entry.level === "error" || entry.level === "warn").map((entry) => JSON.stringify(entry).slice(0, 400))).toEqual([]);
    expect(entries.filter((entry) => entry.msg === 'client went away before its request was read')).toHaveLength(20);
  });
});

describe('deleting a workspace', () => {
  it('takes its sessions with it: a new workspace of the same id sees none of them', async () => {
    const client = await server.newWorkspace();
    const session = await startSession(client, newPair());
    await server.db.delete(workspaces).where(eq(workspaces.id, client.workspaceId));
    expect(await server.db.select().from(sessions).where(eq(sessions.workspaceId, client.workspaceId))).toEqual([]);
    expect(await server.db.select().from(memories).where(eq(memories.workspaceId, client.workspaceId))).toEqual([]);
    const reborn = await server.newWorkspace(client.workspaceId);
    const answer = await reborn.send({ query: 'query ($id: ID!) { session(id: $id) { id } }', variables: { id: session.id } });
    expect(answer.data).toEqual({ session: null });
    const [{ count }] = (await server.db.select({ count: sql<number>`count(*)::int` }).from(sessions).where(and(eq(sessions.workspaceId, client.workspaceId)))) as [{ count: number }];
    expect(count).toBe(0);
  });
});

describe('path characters', () => {
  const CREATE = `mutation ($input: CreateMemoryInput!) {
    createMemory(input: $input) { __typename ... on InvalidRequestError { issues { field message } } } }`;
  const RENAME = `mutation ($input: UpdateMemoryInput!) {
    updateMemory(input: $input) { __typename ... on InvalidRequestError { issues { field message } } } }`;
  // Controls (C0, DEL, C1), bidirectional overrides and marks, zero-width and other invisible format characters, line separators.
  const invisible = {
    'U+0007 (bell)': '\u0007',
    'U+001B (escape)': '\u001B',
    'U+007F (delete)': '\u007F',
    'U+0085 (next line)': '\u0085',
    'U+009B (C1 control)': '\u009B',
    'U+00AD (soft hyphen)': '\u00AD',
    'U+061C (Arabic letter mark)': '\u061C',
    'U+200B (zero width space)': '\u200B',
    'U+200D (zero width joiner)': '\u200D',
    'U+200E (left-to-right mark)': '\u200E',
    'U+202A (left-to-right embedding)': '\u202A',
    'U+202E (right-to-left override)': '\u202E',
    'U+2028 (line separator)': '\u2028',
    'U+2066 (left-to-right isolate)': '\u2066',
    'U+2069 (pop directional isolate)': '\u2069',
    'U+FEFF (byte order mark)': '\uFEFF',
    'U+E0041 (tag latin capital A)': '\u{E0041}',
  };

  it('refuses a path holding an invisible or control character, anywhere in a segment, as INVALID_REQUEST on ["input","path"], and writes nothing', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const existing = await createMemory(client, store.id, { path: 'fine.md' });
    for (const [name, character] of Object.entries(invisible)) {
      for (const path of [`notes/${character}evil.md`, `notes/ev${character}il.md`, `${character}`, `a/b${character}`]) {
        const created = await client.send({ query: CREATE, variables: { input: { memoryStoreId: store.id, path, content: 'x' } } });
        expect(created.data.createMemory.__typename, `${name} in ${JSON.stringify(path)}`).toBe('InvalidRequestError');
        // (At the edge of a segment, U+FEFF and U+2028 also count as padding whitespace.)
        expect(created.data.createMemory.issues, name).toContainEqual({
          field: ['input', 'path'],
          message: 'must not contain control characters or invisible formatting characters (bidirectional controls, zero-width characters)',
        });
        const renamed = await client.send({ query: RENAME, variables: { input: { id: existing.id, path } } });
        expect(renamed.data.updateMemory.__typename, name).toBe('InvalidRequestError');
      }
    }
    const rows = await server.db.select({ path: memories.path }).from(memories).where(eq(memories.workspaceId, client.workspaceId));
    expect(rows).toEqual([{ path: 'fine.md' }]);
  });

  it('still takes visible text of every script, emoji with variation selectors, and spaces inside segments', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    for (const path of ['notes/日本語.md', 'заметки/план.md', 'ملاحظات/خطة.md', 'emoji/❤️.md', 'a b/c d.md', 'combining/é.md']) {
      const created = await client.send({ query: CREATE, variables: { input: { memoryStoreId: store.id, path, content: 'x' } } });
      expect(created.data.createMemory.__typename, path).toBe('CreateMemorySuccess');
    }
  });
});
