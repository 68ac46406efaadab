import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MAX_COMPILED_READ_CACHE_BYTES, MAX_COMPILED_SEARCH_CACHE_BYTES, MAX_DOCUMENT_CACHE_BYTES } from '../src/domain/limits.js';
import { createStore } from './support/builders.js';
import { useTestServer } from './support/server.js';

/**
 * The caches of parsed documents and compiled reads hold at most their budgets, also when
 * each document is large (240 KB, under the body limit) and distinct: a compiled read keeps
 * literals of its document (a store's id here), which are slices of the document's text and
 * keep all of it alive. Measured as the heap this process holds after a full collection.
 */
const server = useTestServer();
setFlagsFromString('--expose_gc');
const collectGarbage = runInNewContext('gc') as () => void;
const MiB = 2 ** 20;

function heldBytes(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

describe('the compiled reads and documents a process keeps', () => {
  it('hold no more than their budgets for 300 distinct documents of 240 KB each, asked by a key and by tokens no key has', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const filler = '\u{1F600}'.repeat(60_000);
    const document = (index: number, kind: 'read' | 'search') =>
      kind === 'read'
        ? `{ memoryStore(id: "${store.id}") { id name entryCount } } # ${index} ${filler}`
        : `{ searchMemories(query: "fox ${index}", memoryStoreId: "${store.id}") { totalCount } } # ${filler}`;
    const before = heldBytes();
    for (let index = 0; index < 300; index += 1) {
      const kind = index % 3 === 2 ? 'search' : 'read';
      const answer = await client.send({ query: document(index, kind) });
      expect(answer.status).toBe(200);
      const stranger = await server.anonymous(`msk_${String(index).padStart(40, 'Z')}`).send({ query: document(index + 1000, kind) });
      expect(stranger.status).toBe(401);
    }
    const grown = heldBytes() - before;
    // eslint-disable-next-line no-console
    console.log(`held after 600 requests of distinct 240 KB documents: +${(grown / MiB).toFixed(1)} MiB`);
    expect(grown).toBeLessThan(MAX_DOCUMENT_CACHE_BYTES + MAX_COMPILED_READ_CACHE_BYTES + MAX_COMPILED_SEARCH_CACHE_BYTES + 8 * MiB);
  }, 120_000);
});
