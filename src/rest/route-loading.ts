import { NotFoundError } from '../domain/errors.js';
import { loadMemoriesByIds } from '../domain/memories/reads.js';
import { memoryNotFound, storeNotFound, type MemoryRecord } from '../domain/memories/records.js';
import type { MountRecord } from '../domain/mounts.js';
import { countMountingPairs, loadMemoryStoresByIds, type MemoryStoreRecord } from '../domain/stores.js';
import { loadVersionsByIds, type MemoryVersionRecord } from '../domain/versions.js';
import { memoryStoreObject, mountObject } from './objects.js';
import type { RouteContext } from './route.js';

// ---------------------------------------------------------------------------------------
// Loading what the routes answer with

export async function storeObjects(context: RouteContext, stores: MemoryStoreRecord[]) {
  const counts = await countMountingPairs(context.db, context.viewer, stores.map((store) => store.id));
  return stores.map((store) => memoryStoreObject(store, counts.get(store.id) ?? 0));
}

export async function storeObject(context: RouteContext, store: MemoryStoreRecord) {
  return (await storeObjects(context, [store]))[0]!;
}

export async function loadStore(context: RouteContext, id: string): Promise<MemoryStoreRecord> {
  const [store] = await loadMemoryStoresByIds(context.db, context.viewer, [id]);
  if (!store) throw storeNotFound(id);
  return store;
}

/** The live memory `id` of store `storeId`: a memory of another store is not found, as an unknown one. */
export async function loadMemoryOfStore(context: RouteContext, storeId: string, id: string): Promise<MemoryRecord> {
  const [memory] = await loadMemoriesByIds(context.db, context.viewer, [id]);
  if (!memory || memory.memoryStoreId !== storeId) throw memoryNotFound(id);
  return memory;
}

export async function loadVersionOfStore(context: RouteContext, storeId: string, id: string): Promise<MemoryVersionRecord> {
  const [version] = await loadVersionsByIds(context.db, context.viewer, [id]);
  if (!version || version.memoryStoreId !== storeId) throw new NotFoundError(`No memory version with id "${id}".`);
  return version;
}

export async function mountObjects(context: RouteContext, mounts: MountRecord[]) {
  const stores = await loadMemoryStoresByIds(context.db, context.viewer, mounts.map((mount) => mount.memoryStoreId));
  const byId = new Map(stores.map((store) => [store.id, store]));
  return mounts.map((mount) => mountObject(mount, byId.get(mount.memoryStoreId)));
}
