import { describe, expect, it } from 'vitest';
import { eventHubOf } from '../src/app.js';
import { createMemoryAt, createStoreNamed, eventsOf, pollThrough, subscribeSse, useListening, type TestStream } from './support/live.js';
import { useTestServer } from './support/server.js';

/**
 * Two streams of one shape on real connections share a live delivery's bytes (the second
 * writes what the first framed: http/direct-delivery.ts). The events it so writes are taken
 * all the same: the replay budget gives a replay's room back by the count of events taken
 * (replay-budget.ts), so a shared delivery that counted as one take kept that room for as
 * long as the stream stayed open, and once it filled the budget every replay on the instance
 * waited in line for ever. The buffer here is 4 events and the budget 1,500 bytes, so that
 * one burst of 8 makes both streams fall behind and replay.
 */
const BUFFER = 4;
const server = useTestServer({ live: { listen: false, pollIntervalMs: 3_600_000, bufferEvents: BUFFER, replayBudgetBytes: 1_500, replayStallMs: 3_000 } });
const http = useListening(() => server.app);
const QUERY = 'subscription Shared($memoryStoreId: ID) { memoryEvents(memoryStoreId: $memoryStoreId) { cursor kind memoryId version { path } } }';

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  for (let waited = 0; !condition() && waited < timeoutMs; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('streams that share a delivery, then replay', () => {
  it('give the replay budget back once they have taken every event: both get all 11 events once, in order, and the budget ends empty with nothing waiting', async () => {
    const client = await server.newWorkspace();
    const storeId = await createStoreNamed(client, 'shared');
    const hub = eventHubOf(server.app);
    const streams: TestStream[] = [];
    for (let index = 0; index < 2; index += 1) streams.push(await subscribeSse(fetch, http().url, client.token, QUERY, { memoryStoreId: storeId }));
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await hub.poll();
      // One batch of 3 (within the buffer): the first stream frames it, the second writes the same bytes.
      const paths = ['s1.md', 's2.md', 's3.md'];
      for (const path of paths) await createMemoryAt(client, storeId, path, 'x');
      await pollThrough(hub, server.db, client.workspaceId);
      for (const stream of streams) await stream.waitFor(3);
      // One batch of 8, more than the buffer: both fall behind and replay the rest.
      for (let index = 0; index < 8; index += 1) paths.push(`r${index}.md`);
      for (const path of paths.slice(3)) await createMemoryAt(client, storeId, path, 'x');
      await pollThrough(hub, server.db, client.workspaceId);
      await until(() => streams.every((stream) => stream.results.length >= 11) && hub.replayBudget.heldBytes === 0, 8_000);
      // Each stream counts every event it handed on as taken.
      const open = [...((hub as unknown as { streams: Map<string, Set<{ given: number; takes: number }>> }).streams.get(client.workspaceId) ?? [])];
      expect({
        received: streams.map((stream) => eventsOf(stream.results).map((event) => event.version.path)),
        takenOfGiven: open.map((stream) => stream.takes - stream.given),
        replayBytesHeld: hub.replayBudget.heldBytes,
        replaysWaiting: hub.replayBudget.waiting,
      }).toEqual({ received: [paths, paths], takenOfGiven: [0, 0], replayBytesHeld: 0, replaysWaiting: 0 });
    } finally {
      for (const stream of streams) stream.close();
    }
  }, 30_000);
});
