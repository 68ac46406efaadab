import { sql } from 'drizzle-orm';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { createDb } from '../src/db/client.js';
import { createMemory, createStore } from './support/builders.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { UpdateMemory } from './support/documents.js';
import { invariantViolations } from './support/invariants.js';
import { TestClient, useTestServer } from './support/server.js';

const server = useTestServer();
const TIMEOUT_MS = 600;

/** Holds the store's row lock (on PGlite: the whole database) for `holdMs` while `request` runs. */
async function whileStoreIsLocked<T>(memoryStoreId: string, holdMs: number, request: () => Promise<T>): Promise<T> {
  let locked!: () => void;
  const lockTaken = new Promise<void>((resolve) => (locked = resolve));
  const holder = server.db.transaction(async (tx) => {
    await tx.execute(sql`select id from memory_stores where id = ${memoryStoreId} for update`);
    locked();
    await sleep(holdMs);
  });
  await lockTaken;
  const result = await request();
  await holder;
  return result;
}

describe('the per-request time limit', () => {
  it('answers a write that finishes within the limit', async () => {
    const admin = await server.newWorkspace();
    const client = new TestClient(createApp({ config: { nodeEnv: 'test', graphiql: false, requestTimeoutMs: TIMEOUT_MS }, database: server.database.handle }), admin.token, admin.workspaceId);
    const store = await createStore(admin);
    const memory = await createMemory(admin, store.id, { content: 'before' });
    const response = await whileStoreIsLocked(store.id, TIMEOUT_MS / 4, () =>
      client.execute(UpdateMemory, { input: { id: memory.id, content: 'after', expectedContentSha256: memory.contentSha256 } }),
    );
    expect(response.status).toBe(200);
    expect(response.data?.updateMemory.__typename).toBe('UpdateMemorySuccess');
  });

  it('ends a write that runs past the limit with 503 REQUEST_TIMEOUT; the write is then whole or absent', async () => {
    const admin = await server.newWorkspace();
    const client = new TestClient(createApp({ config: { nodeEnv: 'test', graphiql: false, requestTimeoutMs: TIMEOUT_MS }, database: server.database.handle }), admin.token, admin.workspaceId);
    const store = await createStore(admin);
    const memory = await createMemory(admin, store.id, { content: 'before' });
    const holdMs = TIMEOUT_MS * 4;
    let elapsedMs = 0;
    const response = await whileStoreIsLocked(store.id, holdMs, async () => {
      const started = performance.now();
      const answer = await client.execute(UpdateMemory, { input: { id: memory.id, content: 'after', expectedContentSha256: memory.contentSha256 } });
      elapsedMs = performance.now() - started;
      return answer;
    });
    expect(response.status).toBe(503);
    expect(response.errors?.[0]?.extensions).toMatchObject({ code: 'REQUEST_TIMEOUT', timeoutMs: TIMEOUT_MS });
    expect(response.errors?.[0]?.message).toContain(`${TIMEOUT_MS} ms`);
    // On PostgreSQL the request ends at its limit while the lock is still held; PGlite runs one
    // statement at a time, so there the request cannot even authenticate until the lock ends.
    if (postgresUrl) expect(elapsedMs).toBeLessThan(holdMs - TIMEOUT_MS);
    await sleep(200);
    expect(await invariantViolations(server.db, admin.workspaceId)).toEqual([]);
  });
});

describe.runIf(postgresUrl)('PostgreSQL statement_timeout', () => {
  it('cancels a statement that runs past the configured limit and lets shorter ones finish', async () => {
    const scratch = await createScratchPostgresDatabase();
    const database = await createDb({ databaseUrl: scratch.url, dataDir: 'memory://', statementTimeoutMs: 300 });
    try {
      await expect(database.db.execute(sql`select pg_sleep(0.05)`)).resolves.toBeDefined();
      const error = await database.db.execute(sql`select pg_sleep(2)`).then(() => null, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(Error);
      const cause = (error as { cause?: { code?: string } }).cause ?? error;
      expect((cause as { code?: string }).code).toBe('57014');
    } finally {
      await database.close();
      await scratch.drop();
    }
  });
});
