import { and, eq } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';
import { memoryStoreMounts, memoryStores } from '../../src/db/schema.js';
import { CreateStore } from './documents.js';
import type { TestClient } from './server.js';

let storeCounter = 0;

/** Creates a store through the API and returns it; fails the test on any error. */
export async function createStore(
  client: TestClient,
  input: { name?: string; description?: string; metadata?: Record<string, unknown>; idempotencyKey?: string } = {},
) {
  storeCounter += 1;
  const data = await client.data(CreateStore, { input: { name: input.name ?? `store ${storeCounter}`, ...input } });
  if (data.createMemoryStore.__typename !== 'CreateMemoryStoreSuccess') {
    throw new Error(`createMemoryStore failed: ${JSON.stringify(data.createMemoryStore)}`);
  }
  return data.createMemoryStore.memoryStore;
}

/**
 * Mount rows written directly: the mount API comes with a later feature, but the store
 * guards already read this table.
 */
export async function insertMount(
  db: Database,
  workspaceId: string,
  memoryStoreId: string,
  options: { identityId?: string; templateId?: string; systemManaged?: boolean } = {},
) {
  await db.insert(memoryStoreMounts).values({
    workspaceId,
    memoryStoreId,
    identityId: options.identityId ?? 'idn_test',
    templateId: options.templateId ?? 'tmpl_test',
    access: options.systemManaged ? 'read_write' : 'read_only',
    systemManaged: options.systemManaged ?? false,
    createdAt: new Date(),
  });
}

/** The stored row behind a store, read straight from the database. */
export async function storeRow(db: Database, workspaceId: string, id: string) {
  const [row] = await db
    .select()
    .from(memoryStores)
    .where(and(eq(memoryStores.workspaceId, workspaceId), eq(memoryStores.id, id)));
  return row;
}

export async function countStoreRows(db: Database, workspaceId: string): Promise<number> {
  return (await db.select({ id: memoryStores.id }).from(memoryStores).where(eq(memoryStores.workspaceId, workspaceId))).length;
}
