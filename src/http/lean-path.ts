import { normalizedExecutor } from '@graphql-tools/executor';
import type { DocumentNode, ExecutionResult, GraphQLError, OperationDefinitionNode } from 'graphql';
import { processRegularResult, type Plugin } from 'graphql-yoga';
import { selectOperation } from '../graphql/query-cost.js';
import { TAGGED_ANSWER_VARY } from './answer-tags.js';
import type { RequestPipeline } from './pipeline.js';
import { isPageRequest } from './cors.js';
import { isJsonRequest } from './request-body.js';
import type { Deadline } from './request-timeout.js';

/**
 * The lean path for the request every client sends — `POST /graphql` with a JSON object
 * holding a valid query, or a `GET /graphql` whose parameters hold a valid query — straight
 * to graphql's executor: the stages of pipeline.ts in their order, called directly, without
 * Yoga's per-request machinery; and a read the compiler covers answered by one statement,
 * with its ETag (a 304 when the request names it). Anything else (other content types,
 * bodies that are not a plain operation, documents that fail to parse or validate, anything
 * but a query over GET) continues through Yoga, with the body already read; so does every
 * response shape not produced here. Behaviour is the same on both paths: the whole suite
 * runs through this one, its odd cases through Yoga, test/pipeline.test.ts holds the two to
 * the same stages and test/lean-path.test.ts to the same answers.
 */

/** The response media types of plain results, in Yoga's order of preference. */
const RESULT_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'] as const;
type ResultMediaType = (typeof RESULT_MEDIA_TYPES)[number];

const DATA_OPEN = Buffer.from('{"data":');

/** The media types of the Accept values seen lately (clients send a few, the same all day), at most this many. */
const MAX_KNOWN_ACCEPTS = 64;
const knownAccepts = new Map<string, ResultMediaType | null>();

/** The media type Yoga would answer a plain result with, or null when it would not use JSON. */
function resultMediaType(request: Request): ResultMediaType | null {
  const accept = request.headers.get('accept') || '*/*';
  let chosen = knownAccepts.get(accept);
  if (chosen === undefined) {
    if (knownAccepts.size >= MAX_KNOWN_ACCEPTS) knownAccepts.clear();
    knownAccepts.set(accept, (chosen = mediaTypeFor(accept)));
  }
  return chosen;
}

function mediaTypeFor(accept: string): ResultMediaType | null {
  // Yoga reads Accept in reverse and lets the last match win: the first listed type decides.
  const accepted = accept.replace(/\s/g, '').toLowerCase().split(',').reverse();
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

const OPERATION_KEYS = new Set(['query', 'documentId', 'variables', 'operationName', 'extensions']);

/**
 * The body as a plain operation — its document text from the query, or from the trusted
 * document its documentId names — or null for anything Yoga should judge. Throws the
 * request error of a documentId that names no trusted document, or of a query text where
 * only trusted documents may run.
 */
function plainOperation(pipeline: RequestPipeline, body: unknown): PlainOperation | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  if (Object.keys(body).some((key) => !OPERATION_KEYS.has(key))) return null;
  const { variables, operationName, extensions } = body as Record<string, unknown>;
  if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
  if (operationName != null && typeof operationName !== 'string') return null;
  if (extensions != null && (typeof extensions !== 'object' || Array.isArray(extensions))) return null;
  const query = pipeline.documentOf((body as Record<string, unknown>).query, (body as Record<string, unknown>).documentId);
  if (typeof query !== 'string') return null;
  return { query, variables: (variables ?? undefined) as Record<string, unknown> | undefined, operationName: operationName || undefined };
}

type FetchAPI = { Request: typeof Request; Response: typeof Response };
type Respond = (response: Response) => void;

/** The lean path's handling of one request: it answers through `endResponse`, or leaves it (through `setRequest` when it read the body) to Yoga. */
export interface LeanPath {
  handle(request: Request, url: URL, fetchAPI: FetchAPI, endResponse: Respond, setRequest: (request: Request) => void): Promise<void>;
}

const leanPaths = new WeakMap<RequestPipeline, LeanPath>();

/** The lean path of a pipeline: one for its Yoga plugin and its native front (native-front.ts). */
export function leanPathOf(pipeline: RequestPipeline): LeanPath {
  let lean = leanPaths.get(pipeline);
  if (lean === undefined) leanPaths.set(pipeline, (lean = createLeanPath(pipeline)));
  return lean;
}

/** The lean path as a Yoga plugin: it sees every request first after the lifecycle and the other routes (yoga-stages.ts). */
export function useLeanPath(pipeline: RequestPipeline): Plugin {
  const lean = leanPathOf(pipeline);
  return {
    async onRequest({ request, url, endResponse, setRequest, fetchAPI }) {
      await lean.handle(request, url, fetchAPI as FetchAPI, endResponse, setRequest);
    },
  };
}

function createLeanPath(pipeline: RequestPipeline): LeanPath {
  const respond = (request: Request, result: ExecutionResult, mediaType: ResultMediaType, fetchAPI: { Response: typeof Response }) => {
    if (result.errors?.length) result = { ...result, errors: pipeline.mask(request, result.errors) };
    const extensions = pipeline.extensions(request);
    if (extensions) result = { ...result, extensions: { ...result.extensions, ...extensions } };
    return processRegularResult(result, fetchAPI as never, mediaType) as Response;
  };

  /** `304 Not Modified` for the request that named `tag`: no body. */
  const notModified = (tag: string, fetchAPI: { Response: typeof Response }) => new fetchAPI.Response(null, { status: 304, headers: { ETag: tag, Vary: TAGGED_ANSWER_VARY } });

  /** Runs a plain operation of a valid document and answers it: a compiled read, a 304, or the resolvers' result. */
  const run = async (request: Request, operation: PlainOperation, document: DocumentNode, selected: OperationDefinitionNode, mediaType: ResultMediaType, fetchAPI: FetchAPI, endResponse: Respond) => {
    let deadline: Deadline | undefined;
    try {
      await pipeline.admit(request);
      const refusal = pipeline.cost(request, document, selected, operation.variables);
      if (refusal) {
        endResponse(respond(request, { errors: refusal }, mediaType, fetchAPI));
        return;
      }
      const limit = (deadline = pipeline.deadline(request));
      // A read the compiler covers identifies the key and answers in one statement.
      const compiled = await pipeline.compile(request, document, selected, operation.variables);
      if (compiled) {
        // A conditional request whose answer has not changed: 304, without building it.
        const unchanged = await limit.within(() => pipeline.unchangedTag(request, compiled, mediaType));
        if (typeof unchanged === 'string') {
          endResponse(notModified(unchanged, fetchAPI));
          return;
        }
        // The time ran out: its error is the answer.
        if (unchanged !== null) {
          endResponse(respond(request, unchanged, mediaType, fetchAPI));
          return;
        }
      }
      const answer = await limit.within(() => pipeline.readOrIdentify(request, compiled));
      // The time ran out: its error is the answer.
      if (!('viewer' in answer)) {
        endResponse(respond(request, answer, mediaType, fetchAPI));
        return;
      }
      if (answer.data !== null) {
        // The answer's JSON goes out as the database wrote it, between its two keys.
        const close = `,"extensions":${JSON.stringify(pipeline.extensions(request))}}`;
        const body = typeof answer.data === 'string' ? `{"data":${answer.data}${close}` : Buffer.concat([DATA_OPEN, answer.data, Buffer.from(close)]);
        const headers: Record<string, string> = { 'Content-Type': `${mediaType}; charset=utf-8` };
        const tag = pipeline.answerTag(request, compiled!, answer, mediaType);
        if (tag !== null) {
          // The check found the mark unsettled, and it settled where it was before this
          // answer's snapshot: the tag the request names, so the answer is still 304.
          if (pipeline.namesRequestTag(request, tag)) {
            endResponse(notModified(tag, fetchAPI));
            return;
          }
          headers.ETag = tag;
          headers.Vary = TAGGED_ANSWER_VARY;
        }
        endResponse(new fetchAPI.Response(body, { status: 200, headers }));
        return;
      }
      // No compiled read, or a key the access policy does not let read all of it: the resolvers answer.
      const { viewer } = answer;
      const result = await limit.within(async () =>
        pipeline.execute(request, viewer, selected, async (contextValue) =>
          (await normalizedExecutor({ schema: pipeline.schema, document, contextValue, variableValues: operation.variables, operationName: operation.operationName })) as ExecutionResult,
        ),
      );
      endResponse(respond(request, result as ExecutionResult, mediaType, fetchAPI));
    } catch (error) {
      endResponse(respond(request, { errors: [error as GraphQLError] }, mediaType, fetchAPI));
    } finally {
      deadline?.clear();
    }
  };

  /** A POST with a JSON body. */
  const post = async (request: Request, mediaType: ResultMediaType, fetchAPI: FetchAPI, endResponse: Respond, setRequest: (request: Request) => void) => {
    let text: string;
    try {
      text = await pipeline.readBody(request);
    } catch (error) {
      endResponse(respond(request, { errors: [error as GraphQLError] }, mediaType, fetchAPI));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: Yoga says so.
    }
    let operation: PlainOperation | null = null;
    try {
      operation = body === undefined ? null : plainOperation(pipeline, body);
    } catch (error) {
      endResponse(respond(request, { errors: [error as GraphQLError] }, mediaType, fetchAPI));
      return;
    }
    const document = operation ? validDocument(pipeline, request, operation.query) : null;
    const selected = document ? selectOperation(document, operation!.operationName) : null;
    if (!operation || !document || !selected || selected.operation === 'subscription') {
      const replacement = new fetchAPI.Request(request.url, { method: 'POST', headers: request.headers, body: text });
      pipeline.states.adopt(request, replacement);
      setRequest(replacement);
      return;
    }
    await run(request, operation, document, selected, mediaType, fetchAPI, endResponse);
  };

  /**
   * A GET whose parameters hold a valid query (its answers may be cached by the client, and
   * revalidated with If-None-Match). Anything else over GET — a mutation (405), a
   * subscription, a page, parameters that are not plain — continues through Yoga.
   */
  const get = async (request: Request, url: URL, mediaType: ResultMediaType, fetchAPI: FetchAPI, endResponse: Respond) => {
    // A page (GraphiQL) and a stream are Yoga's.
    if (isPageRequest(request) || (request.headers.get('accept') ?? '').includes('text/event-stream')) return;
    const params: Record<string, unknown> = {};
    for (const [name, value] of url.searchParams) {
      if (!OPERATION_KEYS.has(name) || Object.hasOwn(params, name)) return;
      if (name === 'variables' || name === 'extensions') {
        try {
          params[name] = JSON.parse(value);
        } catch {
          return;
        }
      } else params[name] = value;
    }
    let operation: PlainOperation | null;
    try {
      operation = plainOperation(pipeline, params);
    } catch (error) {
      endResponse(respond(request, { errors: [error as GraphQLError] }, mediaType, fetchAPI));
      return;
    }
    if (!operation) return;
    const document = parsedDocument(pipeline, request, operation.query);
    if (!document) return;
    // Yoga refuses anything but a query over GET before it validates: so is it handed over.
    const selected = selectOperation(document, operation.operationName);
    if (!selected || selected.operation !== 'query' || pipeline.validate(request, document).length > 0) return;
    await run(request, operation, document, selected, mediaType, fetchAPI, endResponse);
  };

  return {
    async handle(request, url, fetchAPI, endResponse, setRequest) {
      if (url.pathname !== '/graphql') return;
      if (request.method === 'GET') {
        const mediaType = resultMediaType(request);
        if (mediaType !== null) await get(request, url, mediaType, fetchAPI, endResponse);
        return;
      }
      if (request.method !== 'POST' || !isJsonRequest(request)) return;
      const mediaType = resultMediaType(request);
      if (mediaType === null) return;
      await post(request, mediaType, fetchAPI, endResponse, setRequest);
    },
  };
}

/** The parsed document for a query text, or null when Yoga should report its parse error. */
function parsedDocument(pipeline: RequestPipeline, request: Request, query: string): DocumentNode | null {
  try {
    return pipeline.parse(request, query);
  } catch {
    return null;
  }
}

/** The parsed, valid document for a query text, or null when Yoga should report its errors. */
function validDocument(pipeline: RequestPipeline, request: Request, query: string): DocumentNode | null {
  const document = parsedDocument(pipeline, request, query);
  return document && pipeline.validate(request, document).length === 0 ? document : null;
}
