import { parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import type { z } from 'zod';
import type { Database } from '../db/client.js';
import type { Action } from '../domain/access.js';
import type { MemoryWriteOptions } from '../domain/memories/writes.js';
import type { Viewer } from '../domain/viewer.js';

/**
 * What one route of the Forward REST API declares (routes.ts holds the 17): method, path,
 * the zod shapes of its parameters, query, body and answer, the action the access policy
 * judges, and the handler.
 */

export interface RouteContext {
  db: Database;
  viewer: Viewer;
  now: Date;
  memoryWrites: MemoryWriteOptions;
}

export type RestMethod = 'GET' | 'POST' | 'DELETE';

export interface RestRoute<Params extends z.ZodObject = z.ZodObject, Query extends z.ZodObject = z.ZodObject, Body extends z.ZodType | null = z.ZodType | null> {
  /** The OpenAPI operationId (also the request log's operation name). */
  operationId: string;
  method: RestMethod;
  /** The path under the API's base, `{name}` for a parameter. */
  path: string;
  summary: string;
  params: Params;
  query: Query;
  /** null: a bodiless POST (any body it carries is ignored) or a GET / DELETE. */
  body: Body;
  /** Whether the request must carry `Idempotency-Key` (else 400 idempotency_key_required). */
  idempotencyKeyRequired: boolean;
  /** Reads run in one read snapshot, unless seen to be one statement (which sees one state by itself: db/snapshot-choice.ts). */
  readOnly: boolean;
  /**
   * The same read as a GraphQL query the read compiler answers in one statement that also
   * identifies the key (read-compiler/): tried first; when the compiler leaves the answer to
   * the resolvers (or cannot compile), `handle` answers.
   */
  compiledRead?: CompiledRoute<z.output<Params>>;
  answer: z.ZodType;
  /** Domain input names the route's fields go by, when not their snake case (for `issues[].field`). */
  fieldNames?: Record<string, string>;
  action(params: z.output<Params>): Action;
  handle(context: RouteContext, input: { params: z.output<Params>; query: z.output<Query>; body: Body extends z.ZodType ? z.output<Body> : undefined; idempotencyKey: string | null }): Promise<unknown>;
}

export interface CompiledRoute<Params> {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables(params: Params): Record<string, unknown>;
  /** The route's answer from the query's `data`; throws the route's NotFoundError when there is nothing to answer. */
  answer(data: Record<string, any>, params: Params): unknown;
}

export function compiledRoute<Params>(query: string, rest: Omit<CompiledRoute<Params>, 'document' | 'operation'>): CompiledRoute<Params> {
  const document = parse(query);
  return { document, operation: document.definitions[0] as OperationDefinitionNode, ...rest };
}

export function route<Params extends z.ZodObject, Query extends z.ZodObject, Body extends z.ZodType | null>(declaration: RestRoute<Params, Query, Body>): RestRoute {
  return declaration as unknown as RestRoute;
}
