import { randomBytes } from 'node:crypto';
import { and, asc, desc, eq } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';
import { apiKeys, memories, memoryStoreMounts, memoryStores, memoryVersions } from '../../src/db/schema.js';
import type { CreateMemoryInput, EnvironmentType, UpdateMemoryInput } from '../generated/graphql.js';
import { ArchiveStore, CreateMemory, CreateStore, DeleteMemory, MountStore, StartSession, UpdateMemory } from './documents.js';
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

/** Archives a store through the API; fails the test on any error. */
export async function archiveStore(client: TestClient, id: string) {
  const result = (await client.data(ArchiveStore, { id })).archiveMemoryStore;
  if (result.__typename !== 'ArchiveMemoryStoreSuccess') throw new Error(`archiveMemoryStore failed: ${JSON.stringify(result)}`);
  return result.memoryStore;
}

let memoryCounter = 0;

/** Creates a memory through the API (a fresh path and short content unless given); fails the test on any error. */
export async function createMemory(client: TestClient, memoryStoreId: string, overrides: Partial<Omit<CreateMemoryInput, 'memoryStoreId'>> = {}) {
  memoryCounter += 1;
  const input = { memoryStoreId, path: `notes/memory-${memoryCounter}.md`, content: `content ${memoryCounter}`, ...overrides };
  const result = (await client.data(CreateMemory, { input })).createMemory;
  if (result.__typename !== 'CreateMemorySuccess') throw new Error(`createMemory failed: ${JSON.stringify(result)}`);
  return result.memory;
}

/** Updates a memory through the API; fails the test unless it succeeds. */
export async function updateMemory(client: TestClient, input: UpdateMemoryInput) {
  const result = (await client.data(UpdateMemory, { input })).updateMemory;
  if (result.__typename !== 'UpdateMemorySuccess') throw new Error(`updateMemory failed: ${JSON.stringify(result)}`);
  return result.memory;
}

/** Deletes a memory through the API; fails the test unless it succeeds. */
export async function deleteMemory(client: TestClient, id: string) {
  const result = (await client.data(DeleteMemory, { input: { id } })).deleteMemory;
  if (result.__typename !== 'DeleteMemorySuccess') throw new Error(`deleteMemory failed: ${JSON.stringify(result)}`);
  return result;
}

/** The live memory rows of a store, by path, read straight from the database. */
export async function memoryRows(db: Database, workspaceId: string, memoryStoreId: string) {
  return db
    .select()
    .from(memories)
    .where(and(eq(memories.workspaceId, workspaceId), eq(memories.memoryStoreId, memoryStoreId)))
    .orderBy(asc(memories.path));
}

/** The version rows of a store (or of one memory), oldest first, read straight from the database. */
export async function versionRows(db: Database, workspaceId: string, memoryStoreId: string, memoryId?: string) {
  return db
    .select()
    .from(memoryVersions)
    .where(
      and(
        eq(memoryVersions.workspaceId, workspaceId),
        eq(memoryVersions.memoryStoreId, memoryStoreId),
        memoryId === undefined ? undefined : eq(memoryVersions.memoryId, memoryId),
      ),
    )
    .orderBy(asc(memoryVersions.memoryId), asc(memoryVersions.sequence));
}

/** The id of the workspace's one API key (the key a test client uses). */
export async function apiKeyIdOf(db: Database, workspaceId: string): Promise<string> {
  const [key] = await db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.workspaceId, workspaceId));
  if (!key) throw new Error(`workspace ${workspaceId} has no API key`);
  return key.id;
}

/** An (identity, template) pair: the owner of mounts, default stores and sessions. */
export interface Pair {
  identityId: string;
  templateId: string;
}

let pairCounter = 0;

/** A fresh (identity, template) pair of well-formed external ids. */
export function newPair(): Pair {
  pairCounter += 1;
  const body = `${Date.now().toString(36)}${pairCounter}${randomBytes(3).toString('hex')}`;
  return { identityId: `idn_${body}`, templateId: `tmpl_${body}` };
}

/** Mounts a store on a pair through the API; fails the test unless it succeeds. */
export async function mountStore(client: TestClient, memoryStoreId: string, pair: Pair) {
  const result = (await client.data(MountStore, { input: { memoryStoreId, ...pair } })).mountMemoryStore;
  if (result.__typename !== 'MountMemoryStoreSuccess') throw new Error(`mountMemoryStore failed: ${JSON.stringify(result)}`);
  return result.mount;
}

/** Creates a session of a pair through the API (MANAGED unless told); fails the test unless it succeeds. */
export async function startSession(client: TestClient, pair: Pair, environment: EnvironmentType = 'MANAGED') {
  const result = (await client.data(StartSession, { input: { ...pair, environment } })).createSession;
  if (result.__typename !== 'CreateSessionSuccess') throw new Error(`createSession failed: ${JSON.stringify(result)}`);
  // A new session's default store exists (it is null only once that store is deleted).
  const { defaultMemoryStore } = result.session;
  if (!defaultMemoryStore) throw new Error('a new session without its default store');
  return { ...result.session, defaultMemoryStore };
}

/** The mount rows of a pair (or of every pair), default slot first, read straight from the database. */
export async function mountRows(db: Database, workspaceId: string, pair?: Pair) {
  return db
    .select()
    .from(memoryStoreMounts)
    .where(
      and(
        eq(memoryStoreMounts.workspaceId, workspaceId),
        pair === undefined ? undefined : eq(memoryStoreMounts.identityId, pair.identityId),
        pair === undefined ? undefined : eq(memoryStoreMounts.templateId, pair.templateId),
      ),
    )
    .orderBy(desc(memoryStoreMounts.systemManaged), asc(memoryStoreMounts.createdAt), asc(memoryStoreMounts.memoryStoreId));
}

/** Sets when a store was mounted on a pair (tests control mount order this way). */
export async function setMountTime(db: Database, workspaceId: string, pair: Pair, memoryStoreId: string, createdAt: Date) {
  const updated = await db
    .update(memoryStoreMounts)
    .set({ createdAt })
    .where(
      and(
        eq(memoryStoreMounts.workspaceId, workspaceId),
        eq(memoryStoreMounts.identityId, pair.identityId),
        eq(memoryStoreMounts.templateId, pair.templateId),
        eq(memoryStoreMounts.memoryStoreId, memoryStoreId),
      ),
    )
    .returning();
  if (updated.length !== 1) throw new Error(`no mount of ${memoryStoreId} on ${JSON.stringify(pair)}`);
}

/** The system-managed stores of a pair (its default stores, archived ones included), read straight from the database. */
export async function defaultStoreRows(db: Database, workspaceId: string, pair: Pair) {
  return db
    .select()
    .from(memoryStores)
    .where(
      and(
        eq(memoryStores.workspaceId, workspaceId),
        eq(memoryStores.systemManaged, true),
        eq(memoryStores.identityId, pair.identityId),
        eq(memoryStores.templateId, pair.templateId),
      ),
    )
    .orderBy(asc(memoryStores.createdAt), asc(memoryStores.id));
}
