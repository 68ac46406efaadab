import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../src/rest/routes.js';
import { REST_BASE, SDK_HEADERS } from './support/rest.js';
import { useTestServer } from './support/server.js';
import { createKey, revokeKey, seedWorkspace, type SeededWorkspace } from './support/workspace-fixture.js';

/**
 * HTTP fuzzing of the Forward REST API: thousands of generated requests through real HTTP
 * handling (`app.fetch`) — every route's path with right, foreign, malformed, percent-encoded
 * and oversized segments, odd query strings, bodies of every JSON shape and none, wrong
 * content types, odd Idempotency-Keys and request ids, other methods, bad credentials.
 * Whatever arrives, the answer is never a 5xx, is JSON in the error envelope with the
 * request id of its header, never leaks SQL, stack frames or file paths, and the server
 * still answers afterwards. `FUZZ_SEED=<n>` replaces the seed, `FUZZ_SCALE=<x>` scales the runs.
 */

const server = useTestServer();

const SEED = Number(process.env.FUZZ_SEED ?? 20261202);
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (count: number) => Math.max(1, Math.round(count * SCALE));

let seed: SeededWorkspace;
const tokens: Record<string, string | null> = {};

beforeAll(async () => {
  seed = await seedWorkspace(server);
  tokens.admin = seed.admin.token;
  tokens.identity = seed.identityKey.token;
  const revoked = await createKey(seed.admin, 'ADMIN');
  await revokeKey(seed.admin, revoked.id);
  tokens.revoked = revoked.token;
  tokens.none = null;
  tokens.garbage = 'msk_not-a-key';
});

const LEAKS = [/\bselect\b.*\bfrom\b/i, /\binsert into\b/i, /\bat [\w.<>]+ \(/, /\/work\//, /node_modules/, /\.ts:\d+/];

/** A path segment: a seeded id, another kind's id, junk, percent-encoded oddities, or a very long one. */
const segmentArbitrary = () =>
  fc.oneof(
    fc.constantFrom(
      () => seed.store.id,
      () => seed.memory.id,
      () => seed.memory.versionIds[0]!,
      () => seed.deletedMemory.id,
      () => seed.mountedStoreId,
      () => seed.session.defaultMemoryStoreId,
      () => seed.pair.identityId,
      () => seed.pair.templateId,
    ).map((of) => encodeURIComponent(of())),
    fc.constantFrom('%00', '%ff', '%zz', '%2F', '%E2%80%AE', '..', '.', '%20', 'memstore_', 'mem_%00', 'idn_', 'tmpl_x%0A', '%F0%9F%92%A9', ''),
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
    fc.integer({ min: 100, max: 5000 }).map((length) => 'a'.repeat(length)),
  );

const pathArbitrary = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...ROUTES.map((route) => route.path)).chain((template) => fc.array(segmentArbitrary(), { minLength: 4, maxLength: 4 }).map((segments) => template.replace(/\{\w+\}/g, () => segments.pop()!))) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((text) => `/${encodeURIComponent(text)}`) },
  { weight: 1, arbitrary: fc.constantFrom('', '/', '//memory_stores', '/memory_stores/', '/openapi.json', '/memory_stores/%2e%2e/memory_stores') },
);

const QUERY_NAMES = ['limit', 'after_id', 'before_id', 'system_managed', 'path_prefix', 'memory_id', 'expected_content_sha256', 'x'];
const queryValue = fc.oneof(
  fc.constantFrom('0', '1', '2', '100', '101', '-1', '1.5', '1e2', '9'.repeat(30), 'true', 'false', 'TRUE', '', '%00', '%ff', 'decisions%2F', '%E2%80%AE'),
  fc.constantFrom(() => seed.store.id, () => seed.memory.id, () => seed.deletedMemory.id, () => seed.memory.versionIds[1]!).map((of) => of()),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
);
const queryArbitrary = fc.array(fc.tuple(fc.constantFrom(...QUERY_NAMES), queryValue), { maxLength: 5 }).map((pairs) => pairs.map(([name, value]) => `${name}=${value}`).join('&'));

const jsonish = fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.boolean(), fc.constant(null), fc.double(), fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null)), { maxKeys: 4 }));
const bodyArbitrary = fc.oneof(
  { weight: 5, arbitrary: fc.record({ name: jsonish, description: jsonish, metadata: jsonish, path: jsonish, content: jsonish, content_sha256: jsonish, memory_store_id: jsonish }, { requiredKeys: [] }).map((value) => JSON.stringify(value)) },
  { weight: 2, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.constantFrom('', '{', '[]', 'null', '"x"', '{"name": "\\ud800"}', '{"path": "a\\u0000b", "content": "x"}', '{"metadata": {"__proto__": "x"}}', '\u0000\u0001', '{"name": "x", "name": "y"}') },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

const headerValue = fc.stringMatching(/^[\x21-\x7e]{0,300}$/);
const requestArbitrary = fc.record({
  method: fc.oneof({ weight: 9, arbitrary: fc.constantFrom('GET', 'POST', 'DELETE') }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'PATCH', 'HEAD', 'OPTIONS') }),
  path: pathArbitrary,
  query: queryArbitrary,
  body: bodyArbitrary,
  contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined),
  idempotencyKey: fc.option(fc.oneof(headerValue, fc.constant('k'.repeat(256)), fc.constant('same-key')), { nil: undefined }),
  requestId: fc.option(headerValue, { nil: undefined }),
  credential: fc.constantFrom('admin', 'admin', 'admin', 'identity', 'revoked', 'none', 'garbage'),
});

type FuzzRequest = typeof requestArbitrary extends fc.Arbitrary<infer Value> ? Value : never;

async function sendFuzzed(request: FuzzRequest) {
  const headers: Record<string, string> = { ...SDK_HEADERS };
  const token = tokens[request.credential];
  if (token) headers.authorization = `Bearer ${token}`;
  if (request.contentType) headers['content-type'] = request.contentType;
  if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
  if (request.requestId !== undefined) headers['x-request-id'] = request.requestId;
  const withBody = request.body !== undefined && request.method !== 'GET' && request.method !== 'HEAD';
  const url = `${REST_BASE}${request.path}${request.query ? `?${request.query}` : ''}`;
  return server.app.fetch(url, { method: request.method, headers, body: withBody ? request.body : undefined });
}

describe('fuzzing the Forward REST API', () => {
  it('never answers 5xx, always answers JSON (errors in the envelope with their request id), and leaks nothing', async () => {
    let firstFailure: string | null = null;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestArbitrary, async (request) => {
        const response = await sendFuzzed(request);
        const text = await response.text();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const failed = (why: string) => {
          firstFailure ??= `${why}: ${JSON.stringify(request)} → ${response.status} ${text.slice(0, 500)}`;
          return false;
        };
        if (response.status >= 500) return failed('5xx');
        if (request.method === 'HEAD' && text === '') return true;
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          return failed('not JSON');
        }
        if (response.status >= 400) {
          if (body?.type !== 'error' || typeof body.error?.type !== 'string' || typeof body.error?.code !== 'string') return failed('no error envelope');
          if (body.request_id !== response.headers.get('x-request-id')) return failed('request id');
        }
        for (const leak of LEAKS) if (leak.test(text)) return failed(`leak ${leak}`);
        return true;
      }),
      { seed: SEED, numRuns: runs(3000), endOnFailure: true },
    );
    expect(firstFailure).toBeNull();
    // The requests reached every kind of answer, successes included.
    for (const status of [200, 400, 401, 403, 404, 409, 415]) expect(statuses.get(status) ?? 0, `answers with ${status}: ${JSON.stringify([...statuses])}`).toBeGreaterThan(0);
    const alive = await server.app.fetch(`${REST_BASE}/memory_stores`, { headers: { authorization: `Bearer ${tokens.admin}` } });
    expect(alive.status).toBe(200);
  }, 600_000);
});
