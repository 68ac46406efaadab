import { z } from 'zod';
import { ROUTES, type RestRoute } from './routes.js';
import { ErrorObject } from './schemas.js';

/**
 * The OpenAPI 3.1 document of the Forward REST API, generated from the route declarations
 * (routes.ts) and the zod shapes that validate requests (schemas.ts): what the document
 * says is what the server checks. Served at `/api/v1/forward/openapi.json`.
 */

export const FORWARD_REST_BASE = '/api/v1/forward';
export const OPENAPI_PATH = '/openapi.json';

type JsonSchema = Record<string, unknown>;

/** A zod shape as JSON Schema: the input a request sends, the output an answer holds; shared objects by reference. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, target: 'draft-2020-12', unrepresentable: 'any', reused: 'inline' }) as JsonSchema;
  return rest;
}

/** `$defs` lifted into components, so that every operation refers to one definition of each object. */
function hoist(schema: JsonSchema, components: Record<string, JsonSchema>): JsonSchema {
  const defs = schema.$defs as Record<string, JsonSchema> | undefined;
  const { $defs: _defs, ...rest } = schema;
  const text = JSON.stringify(rest).replaceAll('"#/$defs/', '"#/components/schemas/');
  if (defs) for (const [name, definition] of Object.entries(defs)) components[name] = JSON.parse(JSON.stringify(definition).replaceAll('"#/$defs/', '"#/components/schemas/'));
  return JSON.parse(text) as JsonSchema;
}

function parametersOf(route: RestRoute, components: Record<string, JsonSchema>) {
  const parameters: Record<string, unknown>[] = [];
  for (const [location, shape] of [['path', route.params], ['query', route.query]] as const) {
    for (const [name, field] of Object.entries(shape.shape as Record<string, z.ZodType>)) {
      const schema = hoist(jsonSchema(field, 'input'), components);
      parameters.push({ name, in: location, required: location === 'path' || !field.safeParse(undefined).success, description: field.description, schema });
    }
  }
  parameters.push({
    name: 'Idempotency-Key',
    in: 'header',
    required: route.idempotencyKeyRequired,
    description: route.idempotencyKeyRequired
      ? 'Required. A retry with the same key and body within 24 hours answers the first answer; another body is 409 idempotency_key_reused.'
      : 'Optional. A retry with the same key and request within 24 hours answers the first answer; another request is 409 idempotency_key_reused.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  });
  return route.method === 'GET' ? parameters.filter((parameter) => parameter.in !== 'header') : parameters;
}

const ERROR_STATUSES: Record<string, string> = {
  '400': 'Validation failed, bad page arguments, a missing Idempotency-Key or malformed JSON.',
  '401': 'No, unknown or revoked API key.',
  '403': 'An IDENTITY key outside its routes or identity.',
  '404': 'Not found (also another workspace\'s objects and a mismatched parent).',
  '409': 'A conflict with the stored state (error.code says which).',
  '413': 'The body is too large.',
  '415': 'The body is not JSON.',
  '429': 'Rate limited: see Retry-After and retry-after-ms.',
  '500': 'Unexpected error (logged with the request id).',
  '503': 'The database is unavailable, or the request ran out of time.',
};

export function openApiDocument(): Record<string, unknown> {
  const components: Record<string, JsonSchema> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  const errorSchema = hoist(jsonSchema(ErrorObject, 'output'), components);
  const errorRef = { $ref: '#/components/schemas/error' };
  if (!('error' in components)) components.error = errorSchema;
  for (const route of ROUTES) {
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      parameters: parametersOf(route, components),
      responses: {
        '200': { description: 'Success (every success is HTTP 200 with a JSON body).', content: { 'application/json': { schema: hoist(jsonSchema(route.answer, 'output'), components) } } },
        ...Object.fromEntries(Object.entries(ERROR_STATUSES).map(([status, description]) => [status, { description, content: { 'application/json': { schema: errorRef } } }])),
      },
    };
    if (route.body) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: hoist(jsonSchema(route.body, 'input'), components) } } };
    }
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  paths[OPENAPI_PATH] = {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'This document (no API key needed).',
      security: [],
      responses: { '200': { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'memstore — Forward Memory Store REST API',
      version: '1',
      description: 'The Forward Memory Store REST API as memstore serves it, for the Forward SDKs (TypeScript, Go, Python): set their base URL to this server\'s /api/v1/forward and their token to a memstore API key.',
    },
    servers: [{ url: FORWARD_REST_BASE }],
    security: [{ bearer: [] }],
    paths,
    components: { schemas: components, securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A memstore API key (msk_…).' } } },
  };
}
