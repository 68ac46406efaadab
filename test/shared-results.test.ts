import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { Viewer } from '../src/domain/viewer.js';
import { SharedEventResults, sharedShapeKey } from '../src/subscriptions/shared-results.js';

/** One execution of an event for the streams that answer it alike (src/subscriptions/shared-results.ts). */
const admin: Viewer = { workspaceId: 'ws_a', apiKeyId: 'key_1', kind: 'ADMIN' as Viewer['kind'], identityId: null };
const document = parse('subscription { memoryEvents { cursor } }');

describe('shared event results', () => {
  it('are one execution for streams of one workspace and operation, whichever key of that kind opened them', async () => {
    const shared = new SharedEventResults();
    const payload = {};
    let runs = 0;
    const execute = () => ({ data: { n: (runs += 1) } });
    const shape = sharedShapeKey(admin, document, null, {});
    const otherKey = sharedShapeKey({ ...admin, apiKeyId: 'key_2' }, parse('subscription { memoryEvents { cursor } }'), null, {});
    expect(otherKey).toBe(shape);
    const results = await Promise.all([shared.resultOf(payload, shape, execute), shared.resultOf(payload, otherKey, execute), shared.resultOf(payload, shape, execute)]);
    expect(results.map((result) => result.data)).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }]);
    expect(runs).toBe(1);
    // Another event is executed anew.
    expect((await shared.resultOf({}, shape, execute)).data).toEqual({ n: 2 });
  });

  it('are given at once, without a promise, when the execution needs no I/O; an execution that waits is shared as a promise, then at once', async () => {
    const shared = new SharedEventResults();
    const shape = sharedShapeKey(admin, document, null, {});
    let runs = 0;
    const now = () => ({ data: { n: (runs += 1) } });
    const payload = {};
    const first = shared.resultOf(payload, shape, now);
    expect(first).not.toBeInstanceOf(Promise);
    expect(shared.resultOf(payload, shape, now)).toBe(first);
    const later = () => new Promise<{ data: { n: number } }>((resolve) => setTimeout(() => resolve({ data: { n: (runs += 1) } }), 5));
    const waiting = {};
    const both = [shared.resultOf(waiting, shape, later), shared.resultOf(waiting, shape, later)];
    expect(both.every((answer) => answer instanceof Promise)).toBe(true);
    const [one, two] = await Promise.all(both);
    expect(two).toBe(one);
    expect(shared.resultOf(waiting, shape, later)).toBe(one);
    expect(runs).toBe(2);
  });

  it('are never shared across workspaces, kinds of key, identities, variables, operation names or documents', () => {
    const base = sharedShapeKey(admin, document, null, { a: 1 });
    const variants = [
      sharedShapeKey({ ...admin, workspaceId: 'ws_b' }, document, null, { a: 1 }),
      sharedShapeKey({ ...admin, kind: 'IDENTITY' as Viewer['kind'], identityId: 'idn_1' }, document, null, { a: 1 }),
      sharedShapeKey({ ...admin, kind: 'IDENTITY' as Viewer['kind'], identityId: 'idn_2' }, document, null, { a: 1 }),
      sharedShapeKey(admin, document, null, { a: 2 }),
      sharedShapeKey(admin, document, 'Named', { a: 1 }),
      sharedShapeKey(admin, parse('subscription { memoryEvents { kind } }'), null, { a: 1 }),
    ];
    expect(new Set([base, ...variants]).size).toBe(variants.length + 1);
  });

  it('are held by each stream as a digest of a few dozen characters, however long its document and variables', () => {
    const long = parse(`subscription { memoryEvents { ${Array.from({ length: 20_000 }, (_, index) => `a${index}: kind`).join(' ')} } }`);
    const shape = sharedShapeKey(admin, long, null, { text: 'x'.repeat(500_000) });
    expect(shape.length).toBeLessThan(64);
    // Still the same for the same operation, parsed again.
    expect(sharedShapeKey(admin, parse(long.loc!.source.body), null, { text: 'x'.repeat(500_000) })).toBe(shape);
  });

  it('are not shared when they hold errors or the execution throws: each stream then executes on its own', async () => {
    const shared = new SharedEventResults();
    const shape = sharedShapeKey(admin, document, null, {});
    let runs = 0;
    const failing = () => ({ errors: [{ message: `failed ${(runs += 1)}` }] }) as never;
    const payload = {};
    const both = await Promise.all([shared.resultOf(payload, shape, failing), shared.resultOf(payload, shape, failing)]);
    expect(runs).toBe(2);
    expect(both.map((result) => result.errors?.[0]?.message)).toEqual(['failed 1', 'failed 2']);

    const thrown = {};
    let attempts = 0;
    const throwsFirst = () => {
      attempts += 1;
      if (attempts === 1) throw new Error('boom');
      return { data: { ok: true } };
    };
    const settled = await Promise.allSettled([shared.resultOf(thrown, shape, throwsFirst), shared.resultOf(thrown, shape, throwsFirst)]);
    expect(settled[0]!.status).toBe('rejected');
    expect(settled[1]).toEqual({ status: 'fulfilled', value: { data: { ok: true } } });
  });

  it('are shared for a window of time only: a stream further behind executes the event itself, and old results are forgotten', async () => {
    let clock = 0;
    const shared = new SharedEventResults(1_000, () => clock);
    const shape = sharedShapeKey(admin, document, null, {});
    let runs = 0;
    const execute = () => ({ data: { n: (runs += 1) } });
    const early = {};
    expect((await shared.resultOf(early, shape, execute)).data).toEqual({ n: 1 });
    clock = 999;
    expect((await shared.resultOf(early, shape, execute)).data).toEqual({ n: 1 });
    clock = 1_000;
    // Past the window: executed anew for the late stream, and the old result is gone.
    expect((await shared.resultOf(early, shape, execute)).data).toEqual({ n: 2 });
    for (let index = 0; index < 50; index += 1) await shared.resultOf({}, shape, execute);
    expect(shared.size).toBe(51);
    clock = 5_000;
    await shared.resultOf({}, shape, execute);
    expect(shared.size).toBe(1);
  });
});
