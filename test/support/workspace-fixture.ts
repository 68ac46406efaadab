import { randomBytes } from 'node:crypto';
import { and, asc, eq, getTableColumns, getTableName, is } from 'drizzle-orm';
import { PgTable, type AnyPgColumn } from 'drizzle-orm/pg-core';
import type { Database } from '../../src/db/client.js';
import * as tables from '../../src/db/schema.js';
import { graphql } from '../generated/gql.js';
import type { ApiKeyKind, EnvironmentType } from '../generated/graphql.js';
import { createMemory, createStore, deleteMemory, updateMemory } from './builders.js';
import { TestClient, type GraphQLResponse, type TestServer } from './server.js';

/**
 * A workspace seeded through the API with one of everything (stores, live and deleted
 * memories, versions, a redaction, a mount, a session with an agent write, keys of both
 * kinds), and a snapshot of every tenant row of a workspace: the material of the
 * isolation and permission tables.
 */

export const FixtureCreateApiKey = graphql(`
  mutation FixtureCreateApiKey($input: CreateApiKeyInput!) {
    createApiKey(input: $input) {
      __typename
      ... on CreateApiKeySuccess {
        token
        apiKey {
          id
          name
          kind
          identityId
          createdAt
          revoked
          revokedAt
        }
      }
      ...ErrorFields
    }
  }
`);

export const FixtureRevokeApiKey = graphql(`
  mutation FixtureRevokeApiKey($id: ID!) {
    revokeApiKey(input: { id: $id }) {
      __typename
      ... on RevokeApiKeySuccess {
        apiKey {
          id
          kind
          revoked
          revokedAt
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

const FixtureMount = graphql(`
  mutation FixtureMount($input: MountMemoryStoreInput!) {
    mountMemoryStore(input: $input) {
      __typename
      ... on Error {
        code
        message
      }
    }
  }
`);

export const FixtureStartSession = graphql(`
  mutation FixtureStartSession($input: CreateSessionInput!) {
    createSession(input: $input) {
      __typename
      ... on CreateSessionSuccess {
        session {
          id
          defaultMemoryStoreId
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const FixtureAgentWrite = graphql(`
  mutation FixtureAgentWrite($input: WriteSessionMemoryInput!) {
    writeSessionMemory(input: $input) {
      __typename
      ... on WriteSessionMemorySuccess {
        memory {
          id
          path
          latestVersion {
            id
          }
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const FixtureAgentDelete = graphql(`
  mutation FixtureAgentDelete($input: DeleteSessionMemoryInput!) {
    deleteSessionMemory(input: $input) {
      __typename
      ... on DeleteSessionMemorySuccess {
        deletedMemoryId
        version {
          id
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const FixtureRedact = graphql(`
  mutation FixtureRedact($id: ID!) {
    redactMemoryVersion(input: { id: $id }) {
      __typename
      ... on Error {
        code
        message
      }
    }
  }
`);

const FixtureCursors = graphql(`
  query FixtureCursors($storeId: ID!, $identityId: ID!, $templateId: ID!) {
    memoryStores(first: 1) {
      edges {
        cursor
      }
    }
    apiKeys(first: 1) {
      edges {
        cursor
      }
    }
    memoryStoreMounts(identityId: $identityId, templateId: $templateId, first: 1) {
      edges {
        cursor
      }
    }
    memoryStore(id: $storeId) {
      memories(first: 1) {
        edges {
          cursor
        }
      }
      versions(first: 1) {
        edges {
          cursor
        }
      }
    }
  }
`);

/** An (identity, template) pair: the owner of mounts, default stores and sessions. */
export interface IdentityPair {
  identityId: string;
  templateId: string;
}

/** A fresh (identity, template) pair of well-formed external ids. */
export function freshPair(): IdentityPair {
  const body = randomBytes(8).toString('hex');
  return { identityId: `idn_${body}`, templateId: `tmpl_${body}` };
}

function expectType<Result extends { __typename: string }>(what: string, result: Result, typename: string): void {
  if (result.__typename !== typename) throw new Error(`${what} failed: ${JSON.stringify(result)}`);
}

export interface CreatedKey {
  id: string;
  token: string;
  /** A client of the same workspace that sends this key. */
  client: TestClient;
}

/** Creates an API key through the API with an ADMIN client; fails the test unless it succeeds. */
export async function createKey(admin: TestClient, kind: ApiKeyKind, identityId?: string, name = `${kind.toLowerCase()} key`): Promise<CreatedKey> {
  const result = (await admin.data(FixtureCreateApiKey, { input: { name, kind, identityId } })).createApiKey;
  if (result.__typename !== 'CreateApiKeySuccess') throw new Error(`createApiKey failed: ${JSON.stringify(result)}`);
  return { id: result.apiKey.id, token: result.token, client: new TestClient(admin.app, result.token, admin.workspaceId) };
}

/** Revokes a key through the API; fails the test unless it succeeds. */
export async function revokeKey(admin: TestClient, id: string): Promise<void> {
  expectType('revokeApiKey', (await admin.data(FixtureRevokeApiKey, { id })).revokeApiKey, 'RevokeApiKeySuccess');
}

/** Mounts a store on a pair through the API; fails the test unless it succeeds. */
export async function mountOnPair(client: TestClient, memoryStoreId: string, pair: IdentityPair): Promise<void> {
  expectType('mountMemoryStore', (await client.data(FixtureMount, { input: { memoryStoreId, ...pair } })).mountMemoryStore, 'MountMemoryStoreSuccess');
}

/** Starts a session of a pair through the API; fails the test unless it succeeds. */
export async function sessionOf(client: TestClient, pair: IdentityPair, environment: EnvironmentType = 'MANAGED') {
  const result = (await client.data(FixtureStartSession, { input: { ...pair, environment } })).createSession;
  if (result.__typename !== 'CreateSessionSuccess') throw new Error(`createSession failed: ${JSON.stringify(result)}`);
  return result.session;
}

/** An agent's write in a session; fails the test unless it succeeds. */
export async function agentWrite(client: TestClient, sessionId: string, path: string, content: string) {
  const result = (await client.data(FixtureAgentWrite, { input: { sessionId, path, content } })).writeSessionMemory;
  if (result.__typename !== 'WriteSessionMemorySuccess') throw new Error(`writeSessionMemory failed: ${JSON.stringify(result)}`);
  return result.memory;
}

/** An agent's deletion in a session; fails the test unless it succeeds. */
export async function agentDelete(client: TestClient, sessionId: string, path: string) {
  const result = (await client.data(FixtureAgentDelete, { input: { sessionId, path } })).deleteSessionMemory;
  if (result.__typename !== 'DeleteSessionMemorySuccess') throw new Error(`deleteSessionMemory failed: ${JSON.stringify(result)}`);
  return result;
}

/** Redacts a version through the API; fails the test unless it succeeds. */
export async function redactVersion(client: TestClient, id: string): Promise<void> {
  expectType('redactMemoryVersion', (await client.data(FixtureRedact, { id })).redactMemoryVersion, 'RedactMemoryVersionSuccess');
}

/** The id of the ADMIN key a `newWorkspace()` client sends (its workspace's first key). */
export async function firstKeyIdOf(db: Database, workspaceId: string): Promise<string> {
  const [key] = await db
    .select({ id: tables.apiKeys.id })
    .from(tables.apiKeys)
    .where(eq(tables.apiKeys.workspaceId, workspaceId))
    .orderBy(asc(tables.apiKeys.createdAt), asc(tables.apiKeys.id))
    .limit(1);
  if (!key) throw new Error(`workspace ${workspaceId} has no API key`);
  return key.id;
}

export interface SeededWorkspace {
  admin: TestClient;
  adminKeyId: string;
  /** The pair with an explicit mount, a default store and a session. */
  pair: IdentityPair;
  /** A user store that no pair mounts: memories, versions, a redaction. */
  store: { id: string; input: { name: string; description: string; metadata: Record<string, string>; idempotencyKey: string } };
  /** A live memory of `store` with two versions (CREATED, UPDATED), the first redacted. */
  memory: { id: string; path: string; versionIds: string[] };
  /** A memory of `store` deleted again (its CREATED and DELETED versions remain). */
  deletedMemory: { id: string; path: string };
  /** A user store mounted explicitly on `pair`, holding one memory. */
  mountedStoreId: string;
  session: { id: string; defaultMemoryStoreId: string };
  /** The path the agent wrote in the session's default store. */
  agentPath: string;
  /** An IDENTITY key of `pair.identityId`. */
  identityKey: CreatedKey;
  /** First-page cursors of the workspace's lists. */
  cursors: { memoryStores: string; apiKeys: string; pairMounts: string; memories: string; storeVersions: string };
}

/** A new workspace with one of everything, written through the API. */
export async function seedWorkspace(server: TestServer): Promise<SeededWorkspace> {
  const admin = await server.newWorkspace();
  const adminKeyId = await firstKeyIdOf(server.db, admin.workspaceId);
  const pair = freshPair();
  const idempotencyKey = `seed-${randomBytes(6).toString('hex')}`;
  const storeName = `seeded store ${randomBytes(4).toString('hex')}`;
  const storeInput = { name: storeName, description: 'seeded', metadata: { team: 'a' }, idempotencyKey };
  const store = await createStore(admin, storeInput);

  const memory = await createMemory(admin, store.id, { path: 'notes/live.md', content: 'first', metadata: { topic: 'seed' } });
  await updateMemory(admin, { id: memory.id, content: 'second' });
  const deleted = await createMemory(admin, store.id, { path: 'notes/deleted.md', content: 'gone soon' });
  await deleteMemory(admin, deleted.id);

  const memoryVersionRows = await server.db
    .select({ id: tables.memoryVersions.id })
    .from(tables.memoryVersions)
    .where(and(eq(tables.memoryVersions.workspaceId, admin.workspaceId), eq(tables.memoryVersions.memoryId, memory.id)))
    .orderBy(asc(tables.memoryVersions.sequence));
  const versionIds = memoryVersionRows.map((row) => row.id);
  if (versionIds.length !== 2) throw new Error('the seeded memory should have two versions');
  await redactVersion(admin, versionIds[0]!);

  const mounted = await createStore(admin, { name: `mounted ${storeName}` });
  await createMemory(admin, mounted.id, { path: 'shared/guide.md', content: 'read only guide' });
  await mountOnPair(admin, mounted.id, pair);

  const session = await sessionOf(admin, pair);
  const agentPath = 'agent/notes.md';
  await agentWrite(admin, session.id, agentPath, 'agent wrote this');

  const identityKey = await createKey(admin, 'IDENTITY', pair.identityId);

  const cursorData = await admin.data(FixtureCursors, { storeId: store.id, ...pair });
  const cursor = (edges: { cursor: string }[] | undefined, what: string) => {
    const first = edges?.[0]?.cursor;
    if (first === undefined) throw new Error(`no ${what} cursor`);
    return first;
  };
  return {
    admin,
    adminKeyId,
    pair,
    store: { id: store.id, input: storeInput },
    memory: { id: memory.id, path: 'notes/live.md', versionIds },
    deletedMemory: { id: deleted.id, path: 'notes/deleted.md' },
    mountedStoreId: mounted.id,
    session: { id: session.id, defaultMemoryStoreId: session.defaultMemoryStoreId },
    agentPath,
    identityKey,
    cursors: {
      memoryStores: cursor(cursorData.memoryStores.edges, 'memoryStores'),
      apiKeys: cursor(cursorData.apiKeys.edges, 'apiKeys'),
      pairMounts: cursor(cursorData.memoryStoreMounts.edges, 'memoryStoreMounts'),
      memories: cursor(cursorData.memoryStore?.memories.edges, 'memories'),
      storeVersions: cursor(cursorData.memoryStore?.versions.edges, 'versions'),
    },
  };
}

// ---------------------------------------------------------------------------------------
// Snapshots

/** Every table of src/db/schema.ts with a workspace_id column: the tenant tables. */
export const TENANT_TABLES: PgTable[] = (Object.values(tables) as unknown[]).filter(
  (value): value is PgTable => is(value, PgTable) && 'workspaceId' in getTableColumns(value),
);

const stableJson = (value: unknown) => JSON.stringify(value, (_key, inner) => (inner instanceof Date ? inner.toISOString() : inner));

/**
 * Every row a workspace owns: its `workspaces` row and its rows of every tenant table, each
 * table's rows in a stable order. Two snapshots are equal exactly when nothing of the
 * workspace changed.
 */
export async function tenantSnapshot(db: Database, workspaceId: string): Promise<Record<string, unknown[]>> {
  const snapshot: Record<string, unknown[]> = {
    workspaces: await db.select().from(tables.workspaces).where(eq(tables.workspaces.id, workspaceId)),
  };
  for (const table of TENANT_TABLES) {
    const { workspaceId: workspaceColumn } = getTableColumns(table) as Record<string, AnyPgColumn>;
    const rows = await db.select().from(table).where(eq(workspaceColumn!, workspaceId));
    snapshot[getTableName(table)] = rows.map((row) => JSON.parse(stableJson(row)) as unknown).sort((a, b) => stableJson(a).localeCompare(stableJson(b)));
  }
  return snapshot;
}

/** The API's own ids (`memstore_`, `mem_`, `memver_`, `sesn_`, `key_`) among a snapshot's rows. */
export function idsInSnapshot(snapshot: Record<string, unknown[]>): Set<string> {
  const ids = new Set<string>();
  const text = JSON.stringify(snapshot);
  for (const match of text.matchAll(/\b(?:memstore|mem|memver|sesn|key)_[0-9a-z]{20}\b/g)) ids.add(match[0]);
  return ids;
}

/** A raw GraphQL request (for generated cases that typed documents cannot express). */
export function sendRaw(client: TestClient, query: string, variables: Record<string, unknown> = {}): Promise<GraphQLResponse<any>> {
  return client.send({ query, variables });
}
