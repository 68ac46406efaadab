import DataLoader from 'dataloader';
import type { Database } from '../db/client.js';
import { countMountingPairs, loadMemoryStoresByIds, type MemoryStoreRecord } from '../domain/stores.js';

/** Per-request loaders: one statement for all the keys a request level asks for. */
export function createLoaders(db: Database, workspaceId: string) {
  return {
    memoryStore: new DataLoader<string, MemoryStoreRecord | null>(async (ids) => {
      const byId = new Map((await loadMemoryStoresByIds(db, workspaceId, ids)).map((store) => [store.id, store]));
      return ids.map((id) => byId.get(id) ?? null);
    }),
    mountingPairCount: new DataLoader<string, number>(async (storeIds) => {
      const counts = await countMountingPairs(db, workspaceId, storeIds);
      return storeIds.map((id) => counts.get(id) ?? 0);
    }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
