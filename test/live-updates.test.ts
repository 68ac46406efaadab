import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { memoryEvents } from '../src/db/schema.js';
import { createStoreNamed, eventsOf, run, subscribeSse, subscribeWs, SUBSCRIBE_EVENTS, type TestStream, useListening } from './support/live.js';
import { useTestServer, type TestClient } from './support/server.js';

/**
 * Subscription.memoryEvents over both transports, through real HTTP and a real WebSocket:
 * every kind of write, and exactly the events API.md §9 lists, with their fields, in order.
 */
const server = useTestServer();
const listening = useListening(() => server.app);

const bothTransports = [
  { transport: 'SSE', open: (token: string | null, variables: Record<string, unknown> = {}) => subscribeSse(fetch, listening().url, token, SUBSCRIBE_EVENTS, variables) },
  { transport: 'WebSocket', open: async (token: string | null, variables: Record<string, unknown> = {}) => subscribeWs(listening().wsUrl, token, SUBSCRIBE_EVENTS, variables) },
] as const;

/**
 * Every kind of write, one after another; resolves with the events they must produce, in order.
 * An event's version is read when the event is delivered, so before the redaction the stream
 * must have received the rename's event (else it would show that version already redacted).
 */
async function everyKindOfWrite(client: TestClient, stream: TestStream) {
  const expected: Record<string, unknown>[] = [];
  // A store created with an idempotency key, then the same request retried: one STORE_CREATED.
  const storeId = await createStoreNamed(client, 'live', ', idempotencyKey: "once"');
  expect(await createStoreNamed(client, 'live', ', idempotencyKey: "once"')).toBe(storeId);
  expected.push({ kind: 'STORE_CREATED', memoryStoreId: storeId, memoryStore: { id: storeId }, memoryId: null, memory: null, version: null });

  await run(client, `mutation($id: ID!) { updateMemoryStore(input: { id: $id, name: "live 2" }) { __typename } }`, { id: storeId });
  expected.push({ kind: 'STORE_UPDATED', memoryStoreId: storeId, memoryId: null, memory: null, version: null });

  const created = await run(client, `mutation($s: ID!) { createMemory(input: { memoryStoreId: $s, path: "notes/a.md", content: "one" }) { ... on CreateMemorySuccess { memory { id latestVersion { id } } } } }`, { s: storeId });
  const memoryId = created.createMemory.memory.id as string;
  expected.push({ kind: 'MEMORY_CREATED', memoryStoreId: storeId, memoryId, version: { id: created.createMemory.memory.latestVersion.id, operation: 'CREATED', path: 'notes/a.md', content: 'one', redacted: false } });

  const updated = await run(client, `mutation($id: ID!) { updateMemory(input: { id: $id, content: "two" }) { ... on UpdateMemorySuccess { memory { latestVersion { id } } } } }`, { id: memoryId });
  expected.push({ kind: 'MEMORY_UPDATED', memoryStoreId: storeId, memoryId, version: { id: updated.updateMemory.memory.latestVersion.id, operation: 'UPDATED', path: 'notes/a.md', content: 'two', redacted: false } });

  // An update that changes nothing writes no version and no event.
  await run(client, `mutation($id: ID!) { updateMemory(input: { id: $id, content: "two" }) { __typename } }`, { id: memoryId });

  const renamed = await run(client, `mutation($id: ID!) { updateMemory(input: { id: $id, path: "notes/b.md", metadata: { k: "v" } }) { ... on UpdateMemorySuccess { memory { latestVersion { id } } } } }`, { id: memoryId });
  const renameVersionId = renamed.updateMemory.memory.latestVersion.id as string;
  expected.push({ kind: 'MEMORY_UPDATED', memoryStoreId: storeId, memoryId, version: { id: renameVersionId, operation: 'UPDATED', path: 'notes/b.md', content: 'two', redacted: false } });

  await stream.waitFor(expected.length);
  await run(client, `mutation($id: ID!) { redactMemoryVersion(input: { id: $id }) { __typename } }`, { id: renameVersionId });
  expected.push({ kind: 'VERSION_REDACTED', memoryStoreId: storeId, memoryId, version: { id: renameVersionId, operation: 'UPDATED', path: 'notes/b.md', content: null, redacted: true } });

  const deleted = await run(client, `mutation($id: ID!) { deleteMemory(input: { id: $id }) { ... on DeleteMemorySuccess { version { id } } } }`, { id: memoryId });
  expected.push({ kind: 'MEMORY_DELETED', memoryStoreId: storeId, memoryId, memory: null, version: { id: deleted.deleteMemory.version.id, operation: 'DELETED', path: 'notes/b.md', content: 'two', redacted: false } });

  // An agent: its session's new default store, a create and an update at one path, a delete.
  const session = await run(client, `mutation { createSession(input: { identityId: "idn_live", templateId: "tmpl_live", environment: MANAGED }) { ... on CreateSessionSuccess { session { id defaultMemoryStore { id } } } } }`);
  const sessionId = session.createSession.session.id as string;
  const defaultStoreId = session.createSession.session.defaultMemoryStore.id as string;
  expected.push({ kind: 'STORE_CREATED', memoryStoreId: defaultStoreId, memoryStore: { id: defaultStoreId, name: 'System Default Memory' }, memoryId: null, version: null });
  // A second session of the pair reuses the store: no event.
  await run(client, `mutation { createSession(input: { identityId: "idn_live", templateId: "tmpl_live", environment: MANAGED }) { __typename } }`);
  const agent = async (path: string, content: string) =>
    (await run(client, `mutation($s: ID!, $p: String!, $c: String!) { writeSessionMemory(input: { sessionId: $s, path: $p, content: $c }) { ... on WriteSessionMemorySuccess { memory { id latestVersion { id } } } } }`, { s: sessionId, p: path, c: content })).writeSessionMemory.memory;
  const first = await agent('diary.md', 'agent one');
  expected.push({ kind: 'MEMORY_CREATED', memoryStoreId: defaultStoreId, memoryId: first.id, version: { id: first.latestVersion.id, operation: 'CREATED', path: 'diary.md', content: 'agent one', redacted: false } });
  const second = await agent('diary.md', 'agent two');
  expected.push({ kind: 'MEMORY_UPDATED', memoryStoreId: defaultStoreId, memoryId: first.id, version: { id: second.latestVersion.id, operation: 'UPDATED', path: 'diary.md', content: 'agent two', redacted: false } });
  await run(client, `mutation($s: ID!) { deleteSessionMemory(input: { sessionId: $s, path: "diary.md" }) { __typename } }`, { s: sessionId });
  expected.push({ kind: 'MEMORY_DELETED', memoryStoreId: defaultStoreId, memoryId: first.id, memory: null, version: { operation: 'DELETED', path: 'diary.md', content: 'agent two', redacted: false } });

  await run(client, `mutation($id: ID!) { archiveMemoryStore(input: { id: $id }) { __typename } }`, { id: storeId });
  expected.push({ kind: 'STORE_ARCHIVED', memoryStoreId: storeId, memoryId: null, memory: null, version: null });

  const doomed = await createStoreNamed(client, 'doomed');
  expected.push({ kind: 'STORE_CREATED', memoryStoreId: doomed, memoryId: null, version: null });
  await run(client, `mutation($id: ID!) { deleteMemoryStore(input: { id: $id }) { __typename } }`, { id: doomed });
  expected.push({ kind: 'STORE_DELETED', memoryStoreId: doomed, memoryStore: null, memoryId: null, memory: null, version: null });
  return { expected, storeId, defaultStoreId };
}

describe.each(bothTransports)('Subscription.memoryEvents over $transport', ({ open }) => {
  it('delivers exactly one event per change of every kind of write, in order, with its fields', async () => {
    const client = await server.newWorkspace();
    const stranger = await server.newWorkspace();
    const stream = await open(client.token);
    // Let the stream open before the first write (no `after`: it starts now).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const strangerStream = await open(stranger.token);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { expected } = await everyKindOfWrite(client, stream);

    const events = eventsOf(await stream.waitFor(expected.length));
    // Nothing more arrives.
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(stream.results).toHaveLength(expected.length);
    for (const [index, event] of events.entries()) expect(event, `event ${index}`).toMatchObject(expected[index]!);
    // Cursors are unique and increasing in delivery order as the server compares them.
    expect(new Set(events.map((event) => event.cursor)).size).toBe(events.length);
    // Another workspace's stream sees none of it.
    expect(strangerStream.results).toEqual([]);
    // Replayed now, the rename's event shows its version as it is now: redacted.
    const replay = await open(client.token, { after: events[3]!.cursor });
    const [renameReplayed] = eventsOf(await replay.waitFor(1));
    expect(renameReplayed).toMatchObject({ kind: 'MEMORY_UPDATED', version: { id: expected[4]!.version && (expected[4]!.version as { id: string }).id, content: null, redacted: true } });
    replay.close();

    // The database holds one row per change, in the same order.
    const rows = await server.db.select().from(memoryEvents).where(eq(memoryEvents.workspaceId, client.workspaceId));
    expect(rows).toHaveLength(expected.length);
    expect([...rows].sort((a, b) => a.id - b.id).map((row) => row.kind.toUpperCase())).toEqual(expected.map((event) => event.kind));
    stream.close();
    strangerStream.close();
  });

  it('filters by store and by path prefix; another workspace\'s store id yields no events and no error', async () => {
    const client = await server.newWorkspace();
    const stranger = await server.newWorkspace();
    const mine = await createStoreNamed(client, 'mine');
    const theirs = await createStoreNamed(stranger, 'theirs');
    const byStore = await open(client.token, { memoryStoreId: mine });
    const byPrefix = await open(client.token, { memoryStoreId: mine, pathPrefix: 'keep/' });
    const foreign = await open(client.token, { memoryStoreId: theirs });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const other = await createStoreNamed(client, 'other');
    await run(client, `mutation($s: ID!) { createMemory(input: { memoryStoreId: $s, path: "keep/x.md", content: "x" }) { __typename } }`, { s: other });
    const kept = await run(client, `mutation($s: ID!) { createMemory(input: { memoryStoreId: $s, path: "keep/a.md", content: "a" }) { ... on CreateMemorySuccess { memory { id } } } }`, { s: mine });
    await run(client, `mutation($s: ID!) { createMemory(input: { memoryStoreId: $s, path: "drop/b.md", content: "b" }) { __typename } }`, { s: mine });
    // Renamed out of the prefix: still delivered (its path before the rename matched).
    await run(client, `mutation($id: ID!) { updateMemory(input: { id: $id, path: "drop/a.md" }) { __typename } }`, { id: kept.createMemory.memory.id });
    await run(stranger, `mutation($s: ID!) { createMemory(input: { memoryStoreId: $s, path: "keep/t.md", content: "t" }) { __typename } }`, { s: theirs });

    expect(eventsOf(await byStore.waitFor(3)).map((event) => [event.kind, event.version.path])).toEqual([
      ['MEMORY_CREATED', 'keep/a.md'],
      ['MEMORY_CREATED', 'drop/b.md'],
      ['MEMORY_UPDATED', 'drop/a.md'],
    ]);
    expect(eventsOf(await byPrefix.waitFor(2)).map((event) => [event.kind, event.version.path])).toEqual([
      ['MEMORY_CREATED', 'keep/a.md'],
      ['MEMORY_UPDATED', 'drop/a.md'],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(byStore.results).toHaveLength(3);
    expect(byPrefix.results).toHaveLength(2);
    expect(foreign.results).toEqual([]);
    for (const stream of [byStore, byPrefix, foreign]) stream.close();
  });

  it('refuses an IDENTITY key with FORBIDDEN and a missing key with UNAUTHENTICATED, opening no stream', async () => {
    const client = await server.newWorkspace();
    const key = await run(client, `mutation { createApiKey(input: { name: "agent", kind: IDENTITY, identityId: "idn_x" }) { ... on CreateApiKeySuccess { token } } }`);
    const identity = await open(key.createApiKey.token);
    const forbidden = await identity.waitFor(1);
    expect(forbidden[0]!.errors?.[0]?.extensions?.code ?? forbidden[0]!.errors?.[0]?.message).toMatch(/FORBIDDEN/);
    const anonymous = await open(null);
    const refused = await anonymous.waitFor(1);
    expect(JSON.stringify(refused[0]!.errors)).toMatch(/UNAUTHENTICATED/);
    identity.close();
    anonymous.close();
  });
});

export type { TestStream };
