import fs from 'node:fs';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createDb } from '../src/db/client.js';
import { recordStatements } from '../src/db/statement-count.js';
import { generateToken } from '../src/domain/api-keys.js';
import { CONTENT_MAX_BYTES, MAX_RESPONSE_BYTES } from '../src/domain/limits.js';
import { createStore } from './support/builders.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { startServerProcess } from './support/process.js';
import { useTestServer, type TestClient } from './support/server.js';

/**
 * A request under the cost limit cannot make the server (or the database) hold gigabytes:
 * 30 aliases of a store's 100 memories with 100 KiB of content each would be a 300 MB
 * answer. The answer's text is bounded (MAX_RESPONSE_BYTES, spent as it is built and before
 * content is loaded): past it, one RESPONSE_TOO_LARGE error, and no more content read.
 */

const server = useTestServer();
const MEMORIES = 100;

/** A store of MEMORIES memories of CONTENT_MAX_BYTES each, written straight into the database. */
async function storeOfLargeMemories(run: (text: string, params: unknown[]) => Promise<unknown>, workspaceId: string, storeId: string): Promise<void> {
  await run(
    `insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata, version_sequence, created_at, updated_at)
     select $1, 'mem_' || lpad(g::text, 20, '0'), $2, 'big/' || lpad(g::text, 3, '0') || '.md', repeat(chr(97 + g % 26), ${CONTENT_MAX_BYTES}), ${CONTENT_MAX_BYTES},
       encode(sha256(convert_to(repeat(chr(97 + g % 26), ${CONTENT_MAX_BYTES}), 'UTF8')), 'hex'), '{}', 1, now(), now()
     from generate_series(1, ${MEMORIES}) g`,
    [workspaceId, storeId],
  );
  await run(
    `insert into memory_versions (workspace_id, id, memory_store_id, memory_id, path, content, content_size_bytes, content_sha256, operation, sequence, created_by_api_key_id, created_at)
     select workspace_id, 'memver_' || substr(id, 5), memory_store_id, id, path, content, content_size_bytes, content_sha256, 'created', 1, 'key_seed', created_at
     from memories where workspace_id = $1 and memory_store_id = $2`,
    [workspaceId, storeId],
  );
  await run(`update memory_stores set entry_count = ${MEMORIES}, total_size = ${MEMORIES * CONTENT_MAX_BYTES} where workspace_id = $1 and id = $2`, [workspaceId, storeId]);
}

const attack = (storeId: string) =>
  `{ ${Array.from({ length: 30 }, (_, index) => `a${index}: memoryStore(id: "${storeId}") { memories(first: ${MEMORIES}) { edges { node { content } } } }`).join(' ')} }`;

async function send(client: TestClient, query: string) {
  return client.send({ query });
}

describe('the size of an answer', () => {
  it(`refuses 30 aliases × ${MEMORIES} memories × 100 KiB (cost about 36,000) with RESPONSE_TOO_LARGE, after reading at most ${MAX_RESPONSE_BYTES} bytes of content`, async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    // Through drizzle's connections: the compiled reads' refuse writes.
    const execute = (text: string, params: unknown[]) =>
      server.database.handle.db.execute(sql.join(text.split(/\$(\d+)/).map((part, index) => (index % 2 === 0 ? sql.raw(part) : sql`${params[Number(part) - 1]}`))));
    await storeOfLargeMemories(execute, client.workspaceId, store.id);
    const { result, statements } = await recordStatements(() => send(client, attack(store.id)));
    expect(result.status).toBe(400);
    expect(result.data ?? null).toBeNull();
    expect(result.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'RESPONSE_TOO_LARGE', max: MAX_RESPONSE_BYTES }) })]);
    // The content statements asked for at most as many memories as the budget holds.
    const contentIds = statements
      .filter((statement) => /select "id", "content" from "memories"/.test(statement.sql))
      .reduce((sum, statement) => sum + (statement.params.find(Array.isArray) as unknown[] | undefined)!.length, 0);
    expect(contentIds).toBeLessThanOrEqual(Math.ceil(MAX_RESPONSE_BYTES / CONTENT_MAX_BYTES));
  });

  it('answers the same query over fewer memories: the budget counts what is there, not what could be', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const answer = await send(client, attack(store.id));
    expect(answer.status).toBe(200);
    expect(answer.data.a29).toEqual({ memories: { edges: [] } });
  });

  it('keeps the server and the database within a few hundred MB while three such requests run at once', { timeout: 120_000 }, async () => {
    const token = generateToken();
    const scratch = postgresUrl ? await createScratchPostgresDatabase() : undefined;
    const dataDir = fs.mkdtempSync('/tmp/memstore-size-');
    const process = startServerProcess({
      MEMSTORE_BOOTSTRAP_KEYS: `size:${token}`,
      MEMSTORE_RATE_LIMIT_PER_SECOND: '0',
      MEMSTORE_DATA_DIR: scratch ? dataDir : 'memory://',
      ...(scratch ? { DATABASE_URL: scratch.url } : {}),
    });
    try {
      const url = await process.ready;
      const post = async (query: string) => {
        const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query }) });
        return { status: response.status, body: (await response.json()) as any };
      };
      const created = await post('mutation { createMemoryStore(input: { name: "large" }) { ... on CreateMemoryStoreSuccess { memoryStore { id } } } }');
      const storeId = created.body.data.createMemoryStore.memoryStore.id as string;
      // Seeded through the API: 100 memories of 100 KiB.
      for (let index = 0; index < MEMORIES; index += 10) {
        await Promise.all(
          Array.from({ length: 10 }, (_, offset) =>
            post(`mutation { createMemory(input: { memoryStoreId: "${storeId}", path: "big/${index + offset}.md", content: "${'z'.repeat(CONTENT_MAX_BYTES)}" }) { __typename } }`),
          ),
        );
      }
      const rss = (pid: number) => {
        try {
          return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
        } catch {
          return 0;
        }
      };
      const backends = async () => {
        if (!scratch) return [] as number[];
        const database = await createDb({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 1 });
        try {
          return ((await database.run(`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`, [])) as { pid: number }[]).map((row) => row.pid);
        } finally {
          await database.close();
        }
      };
      const serverPid = process.child.pid!;
      const before = rss(serverPid);
      const pids = await backends();
      let peakServer = before;
      let peakBackend = 0;
      const sampler = setInterval(() => {
        peakServer = Math.max(peakServer, rss(serverPid));
        for (const pid of pids) peakBackend = Math.max(peakBackend, rss(pid));
      }, 20);
      const answers = await Promise.all([post(attack(storeId)), post(attack(storeId)), post(attack(storeId))]);
      clearInterval(sampler);
      for (const answer of answers) {
        expect(answer.status).toBe(400);
        expect(answer.body.errors[0].extensions.code).toBe('RESPONSE_TOO_LARGE');
      }
      console.log(`response size: server RSS ${(before / 2 ** 20).toFixed(0)} MB → peak ${(peakServer / 2 ** 20).toFixed(0)} MB; peak database backend ${(peakBackend / 2 ** 20).toFixed(0)} MB`);
      expect(peakServer - before).toBeLessThan(300 * 2 ** 20);
      expect(peakBackend).toBeLessThan(400 * 2 ** 20);
    } finally {
      process.child.kill('SIGTERM');
      await process.exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
      await scratch?.drop();
    }
  });
});
