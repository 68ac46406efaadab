import FindMyWay from 'find-my-way';
import type { Plugin } from 'graphql-yoga';
import type { z } from 'zod';
import { contextOnDatabase } from '../context.js';
import { refusal } from '../domain/access.js';
import { PermissionError, type ValidationIssue } from '../domain/errors.js';
import { REST_PATH_PARAMETER_MAX_CHARACTERS } from '../domain/limits.js';
import { sha256Hex } from '../domain/memories/records.js';
import { runOnce } from '../domain/replays.js';
import { errorBody, restErrorOf, RestRequestError, validationFailed } from '../rest/errors.js';
import { FORWARD_REST_BASE, OPENAPI_PATH, openApiDocument } from '../rest/openapi.js';
import { ROUTES, type RestRoute } from '../rest/routes.js';
import { parseCompiledData, type RequestPipeline } from './pipeline.js';
import { isJsonRequest } from './request-body.js';
import type { Deadline } from './request-timeout.js';

/**
 * The Forward REST API under /api/v1/forward (FORWARD-REST.md): find-my-way routes each
 * request to its declaration in rest/routes.ts, and the request passes the stages of
 * pipeline.ts that GraphQL requests pass — its id and arrival, the body limit, credentials
 * and the rate limit, the time limit, the key, execution (reads in one snapshot), the log
 * line — before the route's handler asks the domain. Failures answer the REST error
 * envelope (rest/errors.ts).
 */

interface RouterEntry {
  route: RestRoute | 'openapi';
}

/** The router of every REST path, the OpenAPI document's included (tests compare the two). */
export function createForwardRouter(): FindMyWay.Instance<FindMyWay.HTTPVersion.V1> {
  const router = FindMyWay({ ignoreTrailingSlash: false, caseSensitive: true, maxParamLength: REST_PATH_PARAMETER_MAX_CHARACTERS });
  const noop = () => {};
  for (const route of ROUTES) router.on(route.method, `${FORWARD_REST_BASE}${route.path.replace(/\{(\w+)\}/g, ':$1')}`, noop, { route } satisfies RouterEntry);
  router.on('GET', `${FORWARD_REST_BASE}${OPENAPI_PATH}`, noop, { route: 'openapi' } satisfies RouterEntry);
  return router;
}

function isUnderBase(pathname: string): boolean {
  return pathname === FORWARD_REST_BASE || pathname.startsWith(`${FORWARD_REST_BASE}/`);
}

/** Zod's problems as the API's issues, each naming its field. */
function issuesOf(error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({ field: issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment)), message: issue.message }));
}

function parse<Schema extends z.ZodType>(schema: Schema, value: unknown, prefix: string[] = []): z.output<Schema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw validationFailed(issuesOf(result.error).map((issue) => ({ ...issue, field: [...prefix, ...issue.field] })));
}

/** The query string as one value per name (the first, when a name repeats). */
function queryOf(url: URL): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) if (!(name in query)) query[name] = value;
  return query;
}

/** The body of a route that takes one: JSON only; an empty body is no body. */
function bodyOf(request: Request, text: string): unknown {
  if (text.trim() === '') return undefined;
  if (!isJsonRequest(request)) {
    throw new RestRequestError(415, 'invalid_request_error', 'unsupported_media_type', 'Request bodies must be JSON: send Content-Type: application/json.');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new RestRequestError(400, 'invalid_request_error', 'invalid_json', 'The request body is not valid JSON.');
  }
}

/** JSON with object keys sorted at every level: the same request hashes the same whatever its key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function useForwardRest(pipeline: RequestPipeline): Plugin {
  const router = createForwardRouter();
  let document: string | undefined;
  // The server adapter's own Response (Yoga's fetchAPI), as every other route answers with: it
  // writes a string body to the socket as it is, where the global Response would go through a
  // web stream (a fifth more CPU per small read).
  let Answer: typeof Response = Response;

  const json = (body: unknown, status: number, headers: Record<string, string> = {}): Response =>
    new Answer(typeof body === 'string' ? body : JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });

  const failure = (request: Request, error: unknown, route: RestRoute | null): Response => {
    // The pipeline's mask logs unexpected errors with the request id; expected ones need no line of their own.
    const answer = restErrorOf(error, (unexpected) => pipeline.mask(request, [unexpected as never])[0]!, route?.fieldNames);
    const headers = { ...answer.headers, ...(answer.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {}) };
    return json(errorBody(answer, pipeline.states.of(request).id), answer.status, headers);
  };

  const answer = async (request: Request, url: URL): Promise<Response> => {
    const found = router.find(request.method as FindMyWay.HTTPMethod, url.pathname);
    if (!found) {
      return failure(request, new RestRequestError(404, 'not_found_error', 'not_found', `No route ${request.method} ${url.pathname}.`), null);
    }
    const { route } = found.store as RouterEntry;
    if (route === 'openapi') return json((document ??= JSON.stringify(openApiDocument())), 200);
    const state = pipeline.states.of(request);
    state.operationName = route.operationId;

    let deadline: Deadline | undefined;
    try {
      const text = await pipeline.readBody(request);
      await pipeline.admit(request);
      const limit = (deadline = pipeline.deadline(request));
      const result = await limit.within(async () => {
        const params = parse(route.params, found.params);
        // A read the compiler covers identifies the key and answers in one statement, as GraphQL's do.
        const compiled = route.compiledRead ? await pipeline.compile(request, route.compiledRead.document, route.compiledRead.operation, route.compiledRead.variables(params)) : null;
        const answer = await pipeline.readOrIdentify(request, compiled);
        if (answer.data !== null) return JSON.stringify(route.compiledRead!.answer(parseCompiledData(answer.data) as Record<string, unknown>, params));
        // No compiled read, or a key the access policy does not let read all of it: the route's handler answers (or refuses).
        const viewer = answer.viewer;
        const reason = refusal(viewer, route.action(params));
        if (reason !== null) throw new PermissionError(reason);
        const query = parse(route.query, queryOf(url));
        const rawBody = route.body ? bodyOf(request, text) : undefined;
        const body = route.body ? parse(route.body, rawBody ?? null) : undefined;
        const idempotencyKey = request.headers.get('idempotency-key');
        if (route.idempotencyKeyRequired && idempotencyKey === null) {
          throw new RestRequestError(400, 'invalid_request_error', 'idempotency_key_required', 'This request needs an Idempotency-Key header: retries with the same key then create one store.', [
            { field: ['Idempotency-Key'], message: 'is required' },
          ]);
        }
        const input = { params, query, body, idempotencyKey };
        return pipeline.perform(request, viewer, route.readOnly ? route : null, async (context) => {
          if (idempotencyKey === null || route.readOnly) return JSON.stringify(await route.handle(context, input));
          const requestSha256 = sha256Hex(canonicalJson([route.method, route.path, params, query, rawBody ?? null]));
          const replay = await runOnce(context.db, viewer, { key: idempotencyKey, requestSha256, field: ['Idempotency-Key'] }, context.now, async (tx) =>
            JSON.stringify(await route.handle(contextOnDatabase(context, tx), input)),
          );
          return replay.body;
        });
      });
      // The time ran out: its error is the answer.
      if (typeof result !== 'string') return failure(request, result.errors![0], route);
      return json(result, 200);
    } catch (error) {
      return failure(request, error, route);
    } finally {
      deadline?.clear();
    }
  };

  return {
    onYogaInit({ yoga }) {
      Answer = yoga.fetchAPI.Response;
    },
    async onRequest({ request, url, endResponse }) {
      if (!isUnderBase(url.pathname)) return;
      endResponse(await answer(request, url));
    },
  };
}
