import { and, eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { idempotencyKeys, memoryStores, requestReplays } from '../src/db/schema.js';
import { IDEMPOTENCY_KEY_TTL_MS, REPLAY_SWEEP_BATCH } from '../src/domain/limits.js';
import { memoryRows } from './support/builders.js';
import { RestClient, segment } from './support/rest.js';
import { useTestServer } from './support/server.js';

/**
 * Retries the SDKs make (FORWARD-REST.md, "Retries"): a request with an Idempotency-Key
 * that arrives several times — at once, or after its answer was lost — runs once and is
 * answered the same each time; the same key with another request is refused; keys last
 * 24 hours and are swept afterwards.
 */

const server = useTestServer();

async function workspace() {
  const admin = await server.newWorkspace();
  return { admin, rest: new RestClient(server.app, admin.token) };
}

const storeCount = async (workspaceId: string) => (await server.db.select({ id: memoryStores.id }).from(memoryStores).where(eq(memoryStores.workspaceId, workspaceId))).length;

describe('Idempotency-Key on the Forward REST API', () => {
  it('the same create sent 5 times in parallel makes one store and gives 5 identical answers', async () => {
    const { admin, rest } = await workspace();
    const request = { json: { name: 'retried', description: 'sent five times', metadata: { attempt: 'any' } }, headers: { 'idempotency-key': 'create-5x' } };
    const answers = await Promise.all(Array.from({ length: 5 }, () => rest.post('/memory_stores', request)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    const bodies = answers.map((answer) => JSON.stringify(answer.body));
    expect(new Set(bodies).size).toBe(1);
    expect(await storeCount(admin.workspaceId)).toBe(1);
    const [store] = await server.db.select().from(memoryStores).where(eq(memoryStores.workspaceId, admin.workspaceId));
    expect(answers[0]!.body.id).toBe(store!.id);
    const replays = await server.db.select().from(requestReplays).where(eq(requestReplays.workspaceId, admin.workspaceId));
    expect(replays).toHaveLength(1);
    expect(replays[0]!.responseBody).toBe(bodies[0]);
    // The request ids differ: each retry is its own request.
    expect(new Set(answers.map((answer) => answer.headers.get('x-request-id'))).size).toBe(5);
  });

  it('a different body with that key is 409 idempotency_key_reused and creates nothing; the same body in another key order still replays', async () => {
    const { admin, rest } = await workspace();
    const first = await rest.post('/memory_stores', { json: { name: 'first', metadata: { a: '1', b: '2' } }, headers: { 'idempotency-key': 'k' } });
    expect(first.status).toBe(200);
    const other = await rest.post('/memory_stores', { json: { name: 'second' }, headers: { 'idempotency-key': 'k' } });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ type: 'conflict_error', code: 'idempotency_key_reused' });
    const reordered = await rest.post('/memory_stores', { raw: '{"metadata":{"b":"2","a":"1"},"name":"first"}', headers: { 'content-type': 'application/json', 'idempotency-key': 'k' } });
    expect(reordered.body).toEqual(first.body);
    expect(await storeCount(admin.workspaceId)).toBe(1);
  });

  it('a retry after the store changed answers the first answer, not the store as it is now', async () => {
    const { rest } = await workspace();
    const request = { json: { name: 'original' }, headers: { 'idempotency-key': 'lost-answer' } };
    const first = await rest.post('/memory_stores', request);
    expect((await rest.post(`/memory_stores/${segment(first.body.id)}`, { json: { name: 'renamed' } })).status).toBe(200);
    const retry = await rest.post('/memory_stores', request);
    expect(retry.body).toEqual(first.body);
    expect((await rest.get(`/memory_stores/${segment(first.body.id)}`)).body.name).toBe('renamed');
  });

  it('any write with an Idempotency-Key replays: a memory create retried runs once; the same key on another route is reused', async () => {
    const { admin, rest } = await workspace();
    const store = (await rest.post('/memory_stores', { json: { name: 's' }, headers: { 'idempotency-key': 'store' } })).body.id as string;
    const request = { json: { path: 'notes/once.md', content: 'once' }, headers: { 'idempotency-key': 'memory-once' } };
    const answers = await Promise.all(Array.from({ length: 3 }, () => rest.post(`/memory_stores/${segment(store)}/memories`, request)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((answer) => JSON.stringify(answer.body))).size).toBe(1);
    expect(await memoryRows(server.db, admin.workspaceId, store)).toHaveLength(1);
    const elsewhere = await rest.post(`/memory_stores/${segment(store)}/archive`, { headers: { 'idempotency-key': 'memory-once' } });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body.error.code).toBe('idempotency_key_reused');
  });

  it('keys belong to their workspace: the same key elsewhere creates that workspace\'s own store', async () => {
    const one = await workspace();
    const two = await workspace();
    const request = { json: { name: 'same' }, headers: { 'idempotency-key': 'shared-key' } };
    const first = await one.rest.post('/memory_stores', request);
    const second = await two.rest.post('/memory_stores', request);
    expect(second.status).toBe(200);
    expect(second.body.id).not.toBe(first.body.id);
    expect(await storeCount(one.admin.workspaceId)).toBe(1);
    expect(await storeCount(two.admin.workspaceId)).toBe(1);
  });

  it('a failed first attempt keeps nothing: its retry runs', async () => {
    const { admin, rest } = await workspace();
    const refused = await rest.post('/memory_stores', { json: { name: '' }, headers: { 'idempotency-key': 'fails-first' } });
    expect(refused.status).toBe(400);
    expect(await server.db.select().from(requestReplays).where(eq(requestReplays.workspaceId, admin.workspaceId))).toEqual([]);
    const retried = await rest.post('/memory_stores', { json: { name: 'fixed' }, headers: { 'idempotency-key': 'fails-first' } });
    expect(retried.status).toBe(200);
  });

  it('an Idempotency-Key longer than 255 characters is refused, naming the header', async () => {
    const { admin, rest } = await workspace();
    const answer = await rest.post('/memory_stores', { json: { name: 'x' }, headers: { 'idempotency-key': 'k'.repeat(256) } });
    expect(answer.status).toBe(400);
    expect(answer.body.issues[0].field).toEqual(['Idempotency-Key']);
    expect(await storeCount(admin.workspaceId)).toBe(0);
    const longest = await rest.post('/memory_stores', { json: { name: 'x' }, headers: { 'idempotency-key': 'k'.repeat(255) } });
    expect(longest.status).toBe(200);
  });

  it('keys last 24 hours: an expired key runs again, and claims sweep expired keys in batches', async () => {
    const { admin, rest } = await workspace();
    const request = { json: { name: 'daily' }, headers: { 'idempotency-key': 'day-1' } };
    const first = await rest.post('/memory_stores', request);
    const old = new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS - 60_000);
    const filler = Array.from({ length: REPLAY_SWEEP_BATCH + 5 }, (_, index) => ({ workspaceId: admin.workspaceId, key: `old-${index}`, requestSha256: 'x', responseBody: '{}', createdAt: old }));
    await server.db.insert(requestReplays).values(filler);
    // The oldest of all: the sweep, oldest first, takes it in the first batch.
    await server.db.update(requestReplays).set({ createdAt: new Date(old.getTime() - 1000) }).where(and(eq(requestReplays.workspaceId, admin.workspaceId), eq(requestReplays.key, 'day-1')));
    await server.db.update(idempotencyKeys).set({ createdAt: old }).where(eq(idempotencyKeys.workspaceId, admin.workspaceId));
    const later = await rest.post('/memory_stores', request);
    expect(later.status).toBe(200);
    expect(later.body.id).not.toBe(first.body.id);
    // One batch of expired keys went with this claim (day-1's old row among them); the rest go with the next claims.
    const left = await server.db.select({ key: requestReplays.key }).from(requestReplays).where(eq(requestReplays.workspaceId, admin.workspaceId));
    // 105 fillers and day-1's old row were expired; 100 went (day-1's first), 6 fillers stay, beside day-1's new row.
    expect(left.length).toBe(7);
    expect((await rest.post('/memory_stores', { json: { name: 'next' }, headers: { 'idempotency-key': 'day-2' } })).status).toBe(200);
    const after = await server.db.select({ key: requestReplays.key }).from(requestReplays).where(eq(requestReplays.workspaceId, admin.workspaceId));
    expect(after.map((row) => row.key).sort()).toEqual(['day-1', 'day-2']);
  });
});
