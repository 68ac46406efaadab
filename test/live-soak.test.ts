import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { memoryStores, memoryVersions } from '../src/db/schema.js';
import { LocalStreamSlots } from '../src/subscriptions/stream-slots.js';
import { postgresUrl } from './support/database.js';
import { createStoreNamed, run, subscribeSse, type TestStream } from './support/live.js';
import { useTestServer, type TestClient } from './support/server.js';

/**
 * Lossless under load: concurrent writers over several stores while subscribers disconnect
 * and resume at random moments. Afterwards every subscriber's events are exactly the
 * committed changes the versions and stores tables record — none missing, none twice, each
 * memory's changes in order.
 */
const onPostgres = postgresUrl !== undefined;
const WRITERS = onPostgres ? 20 : 2;
const STORES = 10;
const SUBSCRIBERS = 5;
const DURATION_MS = 20_000;
const SELECTION = 'subscription($after: String) { memoryEvents(after: $after) { cursor kind memoryStoreId memoryId version { id } } }';

const server = useTestServer({ live: { slots: new LocalStreamSlots(100) } });

/** A subscriber that drops its connection now and then and resumes from its last cursor. */
class ResumingSubscriber {
  readonly events: { cursor: string; kind: string; memoryStoreId: string; memoryId: string | null; versionId: string | null }[] = [];
  reconnects = 0;
  private stream: TestStream | null = null;
  private seen = 0;

  constructor(private readonly client: TestClient) {}

  async connect(): Promise<void> {
    const after = this.events.at(-1)?.cursor ?? null;
    this.stream = await subscribeSse((url, init) => Promise.resolve(server.app.fetch(url, init)), 'http://memstore.test/graphql', this.client.token, SELECTION, after ? { after } : {});
    this.seen = 0;
  }

  /** Moves what the current stream delivered into `events`. */
  collect(): void {
    const results = this.stream?.results ?? [];
    for (; this.seen < results.length; this.seen += 1) {
      const result = results[this.seen]!;
      if (result.errors?.length || !result.data) throw new Error(`stream error: ${JSON.stringify(result.errors)}`);
      const event = result.data.memoryEvents;
      this.events.push({ cursor: event.cursor, kind: event.kind, memoryStoreId: event.memoryStoreId, memoryId: event.memoryId, versionId: event.version?.id ?? null });
    }
  }

  async reconnect(): Promise<void> {
    this.stream?.close();
    // Whatever arrived before the close counts; the rest is replayed after the last cursor.
    this.collect();
    this.reconnects += 1;
    await this.connect();
  }

  close(): void {
    this.collect();
    this.stream?.close();
  }
}

async function writer(client: TestClient, stores: string[], until: number): Promise<number> {
  const live: { id: string; storeId: string }[] = [];
  let writes = 0;
  let serial = 0;
  while (performance.now() < until) {
    const roll = Math.random();
    const storeId = stores[Math.floor(Math.random() * stores.length)]!;
    if (live.length === 0 || roll < 0.35) {
      const data = await run(client, 'mutation($s: ID!, $p: String!) { createMemory(input: { memoryStoreId: $s, path: $p, content: "new" }) { ... on CreateMemorySuccess { memory { id } } } }', {
        s: storeId,
        p: `w${Math.random().toString(36).slice(2)}/${(serial += 1)}.md`,
      });
      live.push({ id: data.createMemory.memory.id, storeId });
    } else if (roll < 0.85) {
      const target = live[Math.floor(Math.random() * live.length)]!;
      await run(client, 'mutation($id: ID!, $c: String!) { updateMemory(input: { id: $id, content: $c }) { __typename } }', { id: target.id, c: `update ${Math.random()}` });
    } else {
      const [target] = live.splice(Math.floor(Math.random() * live.length), 1);
      await run(client, 'mutation($id: ID!) { deleteMemory(input: { id: $id }) { __typename } }', { id: target!.id });
    }
    writes += 1;
  }
  return writes;
}

describe('live updates under load', () => {
  it(`${WRITERS} writers over ${STORES} stores for ${DURATION_MS / 1000} s, ${SUBSCRIBERS} subscribers resuming at random: each receives exactly the committed changes`, async () => {
    const client = await server.newWorkspace();
    const subscribers = Array.from({ length: SUBSCRIBERS }, () => new ResumingSubscriber(client));
    for (const subscriber of subscribers) await subscriber.connect();
    await new Promise((resolve) => setTimeout(resolve, 500));

    const stores: string[] = [];
    for (let index = 0; index < STORES; index += 1) stores.push(await createStoreNamed(client, `soak ${index}`));
    const until = performance.now() + DURATION_MS;
    const writing = Promise.all(Array.from({ length: WRITERS }, () => writer(client, stores, until)));
    // Each subscriber drops and resumes every 0.5–3 s.
    const churning = Promise.all(
      subscribers.map(async (subscriber) => {
        while (performance.now() < until) {
          await new Promise((resolve) => setTimeout(resolve, 500 + Math.random() * 2500));
          subscriber.collect();
          await subscriber.reconnect();
        }
      }),
    );
    const writes = (await writing).reduce((sum, count) => sum + count, 0);
    await churning;

    // The committed changes, from the tables: one event per version, and one per store.
    const versions = await server.db
      .select({ id: memoryVersions.id, memoryId: memoryVersions.memoryId, memoryStoreId: memoryVersions.memoryStoreId, operation: memoryVersions.operation, sequence: memoryVersions.sequence })
      .from(memoryVersions)
      .where(eq(memoryVersions.workspaceId, client.workspaceId));
    const storeRows = await server.db.select({ id: memoryStores.id }).from(memoryStores).where(and(eq(memoryStores.workspaceId, client.workspaceId)));
    expect(versions.length).toBe(writes);
    const expected = [
      ...storeRows.map((store) => `STORE_CREATED ${store.id}`),
      ...versions.map((version) => `MEMORY_${version.operation.toUpperCase()} ${version.memoryStoreId} ${version.id}`),
    ].sort();
    const sequenceOf = new Map(versions.map((version) => [version.id, version.sequence]));

    for (const subscriber of subscribers) {
      // Catch up: the last events may still be on their way.
      for (let waited = 0; waited < 10_000; waited += 100) {
        subscriber.collect();
        if (subscriber.events.length >= expected.length) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      subscriber.close();
      const received = subscriber.events.map((event) => (event.kind === 'STORE_CREATED' ? `STORE_CREATED ${event.memoryStoreId}` : `${event.kind} ${event.memoryStoreId} ${event.versionId}`));
      expect(new Set(received).size, 'no duplicate').toBe(received.length);
      expect([...received].sort()).toEqual(expected);
      // Each memory's changes arrive in its version order.
      const lastSequence = new Map<string, number>();
      for (const event of subscriber.events) {
        if (!event.memoryId) continue;
        const sequence = sequenceOf.get(event.versionId!)!;
        expect(sequence).toBeGreaterThan(lastSequence.get(event.memoryId) ?? 0);
        lastSequence.set(event.memoryId, sequence);
      }
      expect(subscriber.reconnects).toBeGreaterThan(3);
    }
    console.log(`soak: ${writes} writes by ${WRITERS} writers; ${subscribers.map((subscriber) => subscriber.reconnects).join(', ')} reconnects; ${expected.length} events each`);
  }, 90_000);
});
