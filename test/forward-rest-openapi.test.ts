import { describe, expect, it } from 'vitest';
import { createForwardRouter } from '../src/http/forward-rest.js';
import { FORWARD_REST_BASE } from '../src/rest/openapi.js';
import { ROUTES } from '../src/rest/routes.js';
import { RestClient } from './support/rest.js';
import { useTestServer } from './support/server.js';

/**
 * The OpenAPI 3.1 document at /api/v1/forward/openapi.json is generated from the route
 * declarations and the zod shapes that validate requests: every route the router serves is
 * in it and every operation in it is served; parameters and bodies are the declared ones;
 * every reference resolves.
 */

const server = useTestServer();

async function fetchDocument() {
  const answer = await new RestClient(server.app, null).get('/openapi.json');
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  return answer.body as { openapi: string; servers: { url: string }[]; paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } };
}

describe('the OpenAPI document of the Forward REST API', () => {
  it('is served without an API key, as OpenAPI 3.1 with the API\'s base URL', async () => {
    const document = await fetchDocument();
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([{ url: FORWARD_REST_BASE }]);
  });

  it('holds exactly the routes the router serves (and the router serves exactly the operations it holds)', async () => {
    const document = await fetchDocument();
    const documented = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${FORWARD_REST_BASE}${path}`));
    const router = createForwardRouter() as unknown as { routes: { method: string; path: string }[] };
    const served = router.routes.map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`);
    expect(documented.sort()).toEqual(served.sort());
    expect(served).toHaveLength(ROUTES.length + 1);
    // Every documented operation is answered by its route (not the unknown-route 404).
    const admin = await server.newWorkspace();
    const rest = new RestClient(server.app, admin.token);
    for (const entry of documented) {
      const [method, path] = entry.split(' ') as [string, string];
      const answer = await rest.send(method, path.slice(FORWARD_REST_BASE.length).replace(/\{\w+\}/g, 'x'));
      expect(answer.body?.error?.message ?? '', entry).not.toMatch(/^No route/);
    }
  });

  it('declares each route\'s path and query parameters, its Idempotency-Key and its body, as the route validates them', async () => {
    const document = await fetchDocument();
    for (const route of ROUTES) {
      const operation = document.paths[route.path]![route.method.toLowerCase()]!;
      expect(operation.operationId).toBe(route.operationId);
      const parameters = operation.parameters as { name: string; in: string; required: boolean }[];
      expect(parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name).sort()).toEqual(Object.keys(route.params.shape).sort());
      expect(parameters.filter((parameter) => parameter.in === 'path').every((parameter) => parameter.required)).toBe(true);
      expect(parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name).sort()).toEqual(Object.keys(route.query.shape).sort());
      const key = parameters.find((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key');
      if (route.method === 'GET') expect(key).toBeUndefined();
      else expect(key?.required).toBe(route.idempotencyKeyRequired);
      expect(operation.requestBody !== undefined).toBe(route.body !== null);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '404', '409', '413', '415', '429', '500', '503']));
    }
    const create = document.paths['/memory_stores']!.post!;
    expect(create.requestBody.content['application/json'].schema).toMatchObject({ type: 'object', required: ['name'], properties: { name: { type: 'string' } } });
    const limit = document.paths['/memory_stores']!.get!.parameters.find((parameter: { name: string }) => parameter.name === 'limit');
    expect(limit).toMatchObject({ in: 'query', required: false, schema: { type: 'string', pattern: expect.any(String) } });
  });

  it('resolves every $ref to a component', async () => {
    const document = await fetchDocument();
    const references = [...JSON.stringify(document).matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]!);
    expect(references.length).toBeGreaterThan(10);
    for (const reference of new Set(references)) {
      expect(reference).toMatch(/^#\/components\/schemas\//);
      expect(document.components.schemas[reference.slice('#/components/schemas/'.length)], reference).toBeDefined();
    }
    expect(Object.keys(document.components.schemas)).toEqual(expect.arrayContaining(['memory_store', 'memory', 'memory_list_item', 'memory_version', 'memory_version_list_item', 'mount', 'error']));
  });
});
