import { normalizedExecutor } from '@graphql-tools/executor';
import { GraphQLError, validate, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { processRegularResult, type Plugin } from 'graphql-yoga';
import type { CompiledRead } from '../graphql/compiled-reads.js';
import { createDocumentCache } from '../graphql/document-cache.js';
import type { RunInSnapshot } from '../graphql/read-snapshot.js';
import type { ResponseBudget } from '../graphql/response-budget.js';
import { costError, parseWithLimits, validationRules } from '../graphql/query-limits.js';
import type { Viewer } from '../domain/viewer.js';
import { unauthenticated, type Credentials } from './authentication.js';
import { selectOperation } from '../graphql/query-cost.js';
import { isJsonRequest, readBodyText } from './request-body.js';
import { startDeadline } from './request-timeout.js';

/**
 * The lean path for the request every client sends — `POST /graphql` with a JSON object
 * holding a valid query — straight from the body to graphql's executor: a cached parse, a
 * cached validation, the same context, limits, time limit, masking and response rules as
 * the Yoga pipeline, but none of its per-request machinery. Anything else (GET, other
 * content types, bodies that are not a plain operation, documents that fail to parse or
 * validate) continues through Yoga unchanged, with the body already read; so does every
 * response shape we do not produce here. Behaviour is the same on both paths: the whole
 * test suite runs through this one, and its odd cases through Yoga.
 */

/** The response media types of plain results, in Yoga's order of preference. */
const RESULT_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'] as const;
type ResultMediaType = (typeof RESULT_MEDIA_TYPES)[number];

const DATA_OPEN = Buffer.from('{"data":');
const DATA_CLOSE = Buffer.from('}');


export interface FastPathOptions<Context> {
  schema: GraphQLSchema;
  introspection: boolean;
  maxBodyBytes: number;
  timeoutMs: number;
  startedAt(request: Request): number;
  /** Authenticates and builds the context; throws GraphQLErrors such as 401 and 429. */
  buildContext(request: Request): Promise<Context>;
  /** Checks the credentials' form and spends one of the key's requests; throws 401 and 429. */
  admitRequest(request: Request): Promise<Credentials>;
  /** The context for a viewer authenticated by a compiled read. */
  contextFor(request: Request, viewer: Viewer): Context;
  /** Runs a query's execution in one read snapshot (read-snapshot.ts). */
  inSnapshot: RunInSnapshot<Context>;
  /** The app's error mask: expected errors pass, others become INTERNAL_SERVER_ERROR. */
  maskError(error: unknown): GraphQLError;
  /** Called with the errors of every answer, as clients see them, for the log. */
  onErrors(request: Request, errors: readonly GraphQLError[]): void;
  /** The request Yoga continues with replaces the original: carry its state (request id, clock). */
  adoptRequest(original: Request, replacement: Request): void;
  /** One statement that authenticates and answers the whole query, or null (graphql/compiled-reads.ts). */
  compileRead?(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): CompiledRead | null;
}

/** The media type Yoga would answer a plain result with, or null when it would not use JSON. */
function resultMediaType(request: Request): ResultMediaType | null {
  // Yoga reads Accept in reverse and lets the last match win: the first listed type decides.
  const accepted = (request.headers.get('accept') || '*/*').replace(/\s/g, '').toLowerCase().split(',').reverse();
  let chosen: ResultMediaType | null = null;
  for (const entry of accepted) {
    const [mediaType, ...parameters] = entry.split(';');
    const charset = parameters.find((parameter) => parameter.includes('charset=')) ?? 'charset=utf-8';
    if (charset !== 'charset=utf-8' || mediaType === undefined) continue;
    const [type, subtype] = mediaType.split('/');
    for (const candidate of RESULT_MEDIA_TYPES) {
      const [candidateType, candidateSubtype] = candidate.split('/');
      if ((type === '*' || type === candidateType) && (subtype === '*' || subtype === candidateSubtype)) chosen = candidate;
    }
  }
  return chosen;
}

interface PlainOperation {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

/** The body as a plain operation, or null for anything Yoga should judge. */
function plainOperation(body: unknown): PlainOperation | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const { query, variables, operationName, extensions } = body as Record<string, unknown>;
  if (typeof query !== 'string') return null;
  if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
  if (operationName != null && typeof operationName !== 'string') return null;
  if (extensions != null && (typeof extensions !== 'object' || Array.isArray(extensions))) return null;
  return { query, variables: (variables ?? undefined) as Record<string, unknown> | undefined, operationName: operationName || undefined };
}

export function useFastPath<Context extends object>(options: FastPathOptions<Context>): Plugin {
  const rules = validationRules(options.introspection);
  // Parsed documents by query text, bounded by bytes. Documents are immutable, so sharing them is safe.
  const documents = createDocumentCache();
  const valid = new WeakMap<DocumentNode, boolean>();

  /** The parsed, valid document for a query text, or null when Yoga should report its errors. */
  const validDocument = (query: string): DocumentNode | null => {
    let document = documents.get(query);
    if (document === undefined) {
      try {
        document = parseWithLimits(query);
      } catch {
        document = null;
      }
      documents.set(query, document);
    }
    if (document === null) return null;
    let isValid = valid.get(document);
    if (isValid === undefined) {
      isValid = validate(options.schema, document, rules).length === 0;
      valid.set(document, isValid);
    }
    return isValid ? document : null;
  };

  const respond = (request: Request, result: ExecutionResult, mediaType: ResultMediaType, fetchAPI: { Response: typeof Response }) => {
    if (result.errors?.length) {
      const masked = result.errors.map((error) => options.maskError(error));
      options.onErrors(request, masked);
      result = { ...result, errors: masked };
    }
    return processRegularResult(result, fetchAPI as never, mediaType) as Response;
  };

  return {
    async onRequest({ request, url, endResponse, setRequest, fetchAPI }) {
      if (request.method !== 'POST' || url.pathname !== '/graphql' || !isJsonRequest(request)) return;
      const mediaType = resultMediaType(request);
      if (mediaType === null) return;

      let text: string;
      try {
        text = await readBodyText(request, options.maxBodyBytes);
      } catch (error) {
        endResponse(respond(request, { errors: [error as GraphQLError] }, mediaType, fetchAPI));
        return;
      }
      let operation: PlainOperation | null = null;
      try {
        operation = plainOperation(JSON.parse(text));
      } catch {
        // Not JSON: Yoga says so.
      }
      const document = operation ? validDocument(operation.query) : null;
      const selected = document ? selectOperation(document, operation!.operationName) : null;
      if (!operation || !document || !selected || selected.operation === 'subscription') {
        const replacement = new fetchAPI.Request(request.url, { method: 'POST', headers: request.headers, body: text });
        options.adoptRequest(request, replacement);
        setRequest(replacement);
        return;
      }

      // Set before anything reaches the database: the time limit counts from the request's arrival.
      const deadline = startDeadline(options.timeoutMs, performance.now() - options.startedAt(request), request.signal);
      const fail = (error: unknown) => endResponse(respond(request, { errors: [options.maskError(error)] }, mediaType, fetchAPI));
      // Variables that cannot be coerced, or a cost over the limit (the cost model reads no context).
      const refusal = costError(options.schema, document, selected, operation.variables, options.introspection);

      try {
        let context: Context | undefined;
        // A read the compiler covers authenticates and answers in one statement, once the
        // request has spent one of its key's requests. Requests refused before that (no or
        // malformed credentials, over the rate limit, too costly) take the common path, which
        // answers them in the usual order: credentials, rate limit, then cost.
        const compiled = refusal === null ? (options.compileRead?.(document, selected, operation.variables) ?? null) : null;
        if (compiled) {
          const credentials = await options.admitRequest(request);
          const answer = await deadline.within(() => compiled(credentials.tokenSha256));
          if (answer !== null && !('viewer' in answer)) {
            endResponse(respond(request, answer, mediaType, fetchAPI));
            return;
          }
          if (answer === null) throw unauthenticated();
          context = options.contextFor(request, answer.viewer);
          if (answer.data !== null) {
            const body = typeof answer.data === 'string' ? `{"data":${answer.data}}` : Buffer.concat([DATA_OPEN, answer.data, DATA_CLOSE]);
            endResponse(new fetchAPI.Response(body, { status: 200, headers: { 'Content-Type': `${mediaType}; charset=utf-8` } }));
            return;
          }
        }
        context ??= await options.buildContext(request);
        if (refusal) {
          endResponse(respond(request, { errors: refusal }, mediaType, fetchAPI));
          return;
        }
        const { budget } = context as { budget?: ResponseBudget };
        const execute = async (contextValue: Context) =>
          (await normalizedExecutor({ schema: options.schema, document, contextValue, variableValues: operation.variables, operationName: operation.operationName })) as ExecutionResult;
        const ready = context;
        const result = await deadline.within(async () => {
          const executed = selected.operation === 'query' ? await options.inSnapshot(ready, execute) : await execute(ready);
          return budget ? budget.settle(executed) : executed;
        });
        endResponse(respond(request, result as ExecutionResult, mediaType, fetchAPI));
      } catch (error) {
        fail(error);
      } finally {
        deadline.clear();
      }
    },
  };
}
