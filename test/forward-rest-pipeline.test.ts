import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import type { StageName } from '../src/http/pipeline.js';
import { createLogger } from '../src/logger.js';
import { apiKeyIdOf } from './support/builders.js';
import { RestClient, segment } from './support/rest.js';
import { useTestServer } from './support/server.js';

/**
 * Forward REST requests pass the request stages GraphQL requests pass (http/pipeline.ts):
 * the same functions, in the same order — and so the same body limit, credentials, rate
 * limit, time limit, request id and log line.
 */

const server = useTestServer();

const SECRET = 'REST-CONTENT-MARKER-51c2';

describe('the Forward REST API behind the request pipeline', () => {
  it('passes the stages in order: a write through identify and execute, a covered read through one compiled statement', async () => {
    const admin = await server.newWorkspace();
    const seen = new Map<Request, StageName[]>();
    const app = createApp({
      config: { nodeEnv: 'test', graphiql: false, rateLimit: { perSecond: 100, burst: 100 } },
      database: server.database.handle,
      onStage: (request, stage) => seen.set(request, [...(seen.get(request) ?? []), stage]),
    });
    const rest = new RestClient(app, admin.token);
    const store = (await rest.post('/memory_stores', { json: { name: 'staged' }, headers: { 'idempotency-key': 'staged' } })).body.id as string;
    const memory = (await rest.post(`/memory_stores/${segment(store)}/memories`, { json: { path: 'a.md', content: 'a' } })).body.id as string;
    expect((await rest.get(`/memory_stores/${segment(store)}/memories/${segment(memory)}`)).status).toBe(200);
    expect((await rest.get(`/memory_stores/${segment(store)}/memories`)).status).toBe(200);
    const [create, write, read, list] = [...seen.values()];
    expect(create).toEqual(['arrive', 'readBody', 'admit', 'deadline', 'identify', 'execute', 'depart']);
    expect(write).toEqual(create);
    expect(read).toEqual(['arrive', 'readBody', 'admit', 'deadline', 'compiledRead', 'depart']);
    expect(list).toEqual(create);
  });

  it('logs one line per request with the route as operation name, the key and the workspace, and never the content or the token', async () => {
    const lines: string[] = [];
    const admin = await server.newWorkspace();
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, logger: createLogger('info', (line) => lines.push(line)) });
    const rest = new RestClient(app, admin.token);
    const store = (await rest.post('/memory_stores', { json: { name: 'logged' }, headers: { 'idempotency-key': 'logged', 'x-request-id': 'client-chosen-id-1' } })).body.id as string;
    await rest.post(`/memory_stores/${segment(store)}/memories`, { json: { path: 'secret.md', content: SECRET } });
    const entries = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
    expect(entries).toHaveLength(2);
    const apiKeyId = await apiKeyIdOf(server.db, admin.workspaceId);
    expect(entries[0]).toMatchObject({ requestId: 'client-chosen-id-1', method: 'POST', path: '/api/v1/forward/memory_stores', status: 200, operationName: 'createMemoryStore', apiKeyId, workspaceId: admin.workspaceId });
    expect(entries[1]).toMatchObject({ operationName: 'createMemory', status: 200 });
    expect(lines.join('')).not.toContain(SECRET);
    expect(lines.join('')).not.toContain(admin.token!);
  });

  it('answers a known key with its RateLimit headers and the client\'s request id', async () => {
    const admin = await server.newWorkspace();
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false, rateLimit: { perSecond: 10, burst: 5 } }, database: server.database.handle, clock: () => 0 });
    const answer = await new RestClient(app, admin.token).get('/memory_stores', { headers: { 'x-request-id': 'abc-123' } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-request-id')).toBe('abc-123');
    expect(answer.headers.get('ratelimit-limit')).toBe('5');
    expect(answer.headers.get('ratelimit-remaining')).toBe('4');
  });
});
