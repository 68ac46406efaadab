import { describe, expect, it } from 'vitest';
import { RestClient, segment } from './support/rest.js';
import { useTestServer } from './support/server.js';

/**
 * Id-keyed pages as the SDKs walk them (FORWARD-REST.md, "Pages"): `limit=2`, then
 * `after_id=last_id` until `has_more` is false — and backwards with `before_id=first_id` —
 * while memories (and stores) are deleted and created between the pages, the page's own
 * cursor item included. Every item that exists throughout is seen exactly once, no item
 * twice, and the pages keep list order.
 */

const server = useTestServer();

interface PageBody {
  data: { id: string; path?: string }[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** Walks a list page by page; `between` runs after each page that has more (with that page). */
async function walk(rest: RestClient, path: string, direction: 'forward' | 'backward', between: (page: PageBody) => Promise<void>, query = '', start?: string): Promise<PageBody['data']> {
  const seen: PageBody['data'] = [];
  let cursor = start;
  for (let pages = 0; pages < 100; pages += 1) {
    const parameter = cursor === undefined ? '' : `&${direction === 'forward' ? 'after_id' : 'before_id'}=${segment(cursor)}`;
    const answer = await rest.get(path, { query: `limit=2${query}${parameter}` });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const page = answer.body as PageBody;
    expect(page.data.length).toBeLessThanOrEqual(2);
    expect(page.first_id).toBe(page.data[0]?.id ?? null);
    expect(page.last_id).toBe(page.data.at(-1)?.id ?? null);
    if (direction === 'forward') seen.push(...page.data);
    else seen.unshift(...page.data);
    if (!page.has_more) return seen;
    cursor = direction === 'forward' ? page.last_id! : page.first_id!;
    await between(page);
  }
  throw new Error('the walk did not end');
}

function expectEachOnce(seen: { id: string }[], stable: string[]): void {
  const ids = seen.map((item) => item.id);
  expect(new Set(ids).size).toBe(ids.length);
  for (const id of stable) expect(ids.filter((candidate) => candidate === id)).toHaveLength(1);
}

async function setup() {
  const admin = await server.newWorkspace();
  const rest = new RestClient(server.app, admin.token);
  const store = (await rest.post('/memory_stores', { json: { name: 'paged' }, headers: { 'idempotency-key': 'paged-store' } })).body.id as string;
  const memories = `/memory_stores/${segment(store)}/memories`;
  const created: { id: string; path: string }[] = [];
  for (let index = 0; index < 9; index += 1) {
    const answer = await rest.post(memories, { json: { path: `notes/${String(index * 2).padStart(2, '0')}.md`, content: `memory ${index}` } });
    expect(answer.status).toBe(200);
    created.push({ id: answer.body.id, path: answer.body.path });
  }
  return { admin, rest, store, memories, created };
}

describe('walking the lists of the Forward REST API with limit=2', () => {
  it('sees every memory once in path order, forwards and backwards, while the cursor item itself is deleted and others are created', async () => {
    const { rest, memories, created } = await setup();
    const deleted = new Set<string>();
    let added = 0;
    // Between pages: delete the page's cursor item, then create one memory behind the walk and one ahead of it.
    const churn = (direction: 'forward' | 'backward') => async (page: PageBody) => {
      const cursor = direction === 'forward' ? page.data.at(-1)! : page.data[0]!;
      expect((await rest.delete(`${memories}/${segment(cursor.id)}`)).status).toBe(200);
      deleted.add(cursor.id);
      for (const path of [`notes/${cursor.path!.slice(6, 8)}a-new-${added}.md`, `aaa/${added}.md`]) {
        expect((await rest.post(memories, { json: { path, content: 'new' } })).status).toBe(200);
      }
      added += 1;
    };

    const forward = await walk(rest, memories, 'forward', churn('forward'));
    expectEachOnce(forward, created.map((memory) => memory.id));
    const paths = forward.map((memory) => memory.path!);
    expect(paths).toEqual([...paths].sort());
    expect(deleted.size).toBeGreaterThanOrEqual(4);

    const live = (await walk(rest, memories, 'forward', async () => {}, '')).map((memory) => memory.id);
    const stableNow = live.slice(0, -1);
    const backward = await walk(rest, memories, 'backward', churn('backward'), '', live.at(-1));
    expectEachOnce(backward, stableNow.filter((id) => !deleted.has(id) || backward.some((memory) => memory.id === id)));
    const backwardPaths = backward.map((memory) => memory.path!);
    expect(backwardPaths).toEqual([...backwardPaths].sort());
    // Every memory live at the start of the backward walk and never deleted was seen.
    for (const id of stableNow) if (!deleted.has(id)) expect(backward.map((memory) => memory.id)).toContain(id);
  });

  it('pages from a deleted memory: it keeps its place by its last path (after_id and before_id)', async () => {
    const { rest, memories, created } = await setup();
    const gone = created[4]!;
    expect((await rest.delete(`${memories}/${segment(gone.id)}`)).status).toBe(200);
    const after = (await rest.get(memories, { query: `limit=2&after_id=${segment(gone.id)}` })).body as PageBody;
    expect(after.data.map((memory) => memory.id)).toEqual([created[5]!.id, created[6]!.id]);
    expect(after.has_more).toBe(true);
    const before = (await rest.get(memories, { query: `limit=2&before_id=${segment(gone.id)}` })).body as PageBody;
    expect(before.data.map((memory) => memory.id)).toEqual([created[2]!.id, created[3]!.id]);
    expect(before.has_more).toBe(true);
    const first = (await rest.get(memories, { query: `limit=2&before_id=${segment(created[2]!.id)}` })).body as PageBody;
    expect(first).toMatchObject({ has_more: false, first_id: created[0]!.id, last_id: created[1]!.id });
  });

  it('sees every version once, newest first, forwards and backwards, while memories are deleted and created', async () => {
    const { rest, store, memories, created } = await setup();
    const versions = `/memory_stores/${segment(store)}/memory_versions`;
    const stable = ((await walk(rest, versions, 'forward', async () => {})) as { id: string }[]).map((version) => version.id);
    expect(stable).toHaveLength(9);
    let next = 0;
    const churn = async () => {
      if (next < created.length) expect((await rest.delete(`${memories}/${segment(created[next]!.id)}`)).status).toBe(200);
      expect((await rest.post(memories, { json: { path: `more/${next}.md`, content: 'more' } })).status).toBe(200);
      next += 1;
    };
    const forward = await walk(rest, versions, 'forward', churn);
    expectEachOnce(forward, stable);
    expect(forward.map((version) => version.id)).toEqual([...forward.map((version) => version.id)].sort().reverse());
    const backward = await walk(rest, versions, 'backward', churn, '', stable.at(-1));
    expectEachOnce(backward, stable.slice(0, -1));
    expect(backward.map((version) => version.id)).toEqual([...backward.map((version) => version.id)].sort().reverse());
    // memory_id narrows the walk to one memory's versions.
    const one = await walk(rest, versions, 'forward', async () => {}, `&memory_id=${segment(created[0]!.id)}`);
    expect(one.map((version) => (version as { operation?: string }).operation)).toEqual(['deleted', 'created']);
  });

  it('sees every store once, newest first, forwards and backwards, while stores are created and deleted', async () => {
    const admin = await server.newWorkspace();
    const rest = new RestClient(server.app, admin.token);
    const stores: string[] = [];
    for (let index = 0; index < 7; index += 1) stores.unshift((await rest.post('/memory_stores', { json: { name: `s${index}` }, headers: { 'idempotency-key': `s${index}` } })).body.id);
    let count = 0;
    const doomed: string[] = [];
    // Between pages: a new store (the newest: behind a forward walk, ahead of a backward one), and a store
    // of this page other than the cursor deleted (a store has no history to keep a deleted one's place).
    const churn = (direction: 'forward' | 'backward') => async (page: PageBody) => {
      count += 1;
      doomed.push((await rest.post('/memory_stores', { json: { name: `new ${count}` }, headers: { 'idempotency-key': `new-${count}` } })).body.id);
      const seen = page.data.length === 2 ? page.data[direction === 'forward' ? 0 : 1]!.id : null;
      if (seen) {
        expect((await rest.delete(`/memory_stores/${segment(seen)}`)).status).toBe(200);
        doomed.push(seen);
      }
    };
    const forward = await walk(rest, '/memory_stores', 'forward', churn('forward'));
    expectEachOnce(forward, stores);
    const remaining = ((await walk(rest, '/memory_stores', 'forward', async () => {})) as { id: string }[]).map((store) => store.id);
    const backward = await walk(rest, '/memory_stores', 'backward', churn('backward'), '', remaining.at(-1));
    expectEachOnce(backward, remaining.slice(0, -1).filter((id) => backward.some((store) => store.id === id) || !doomed.includes(id)));
    expect(backward.map((store) => store.id)).toEqual([...backward.map((store) => store.id)].sort().reverse());
  });
});
