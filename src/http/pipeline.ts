import { GraphQLError, printSchema, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode, type Source } from 'graphql';
import type { Context, ContextFactory } from '../context.js';
import type { Database, RunStatement, RunStatementRaw } from '../db/client.js';
import { StatementScope } from '../db/deadline.js';
import { SnapshotChoice, type ReadOutcome } from '../db/snapshot-choice.js';
import type { Viewer } from '../domain/viewer.js';
import { createParseCache } from '../graphql/document-cache.js';
import { maskError } from '../graphql/error-masking.js';
import { QUERY_OUTCOME } from '../graphql/response-budget.js';
import { parseWithLimits, validateDocument, type CostEstimate } from '../graphql/query-limits.js';
import type { CompiledAnswer, CompiledRead } from '../read-compiler/compile.js';
import type { Logger } from '../logger.js';
import { AnswerTags, namesTag } from './answer-tags.js';
import { CompiledReadCache } from './compiled-read-cache.js';
import { credentialsOf, Gate, knownTokens, unauthenticated, type Credentials } from './authentication.js';
import type { KeyRateLimiter } from './rate-limit.js';
import { readBodyText } from './request-body.js';
import { PersistedDocuments } from './persisted-documents.js';
import { logErrors, logResponse, RequestStates, type RequestState } from './request-log.js';
import { startDeadline, type Deadline } from './request-timeout.js';
import type { Telemetry } from './telemetry.js';

/**
 * The stages every GraphQL request passes, in this order, declared once: each is one
 * function of the pipeline below, and both paths a request can take call the same
 * functions — the Yoga pipeline through the plugins of yoga-stages.ts, the lean path
 * (lean-path.ts) directly. test/pipeline.test.ts sends the same requests down both and
 * fails when a stage runs on one path only. A compiled read is one stage standing for two:
 * its statement identifies the key and answers (`compiledRead` for `identify` and `execute`).
 */
export const REQUEST_STAGES = [
  /** The request's id and arrival time (request-log.ts); its span, when tracing (telemetry.ts). */
  'arrive',
  /** The body, up to MAX_REQUEST_BODY_BYTES; a larger one is drained within bounds and answered 413 (request-body.ts). */
  'readBody',
  /** The document, up to MAX_QUERY_TOKENS, from one byte-bounded cache (query-limits.ts). */
  'parse',
  /** GraphQL's rules, the depth, alias and directive limits, and introspection when off (query-limits.ts). */
  'validate',
  /** Credentials of the right form, then one of the key's requests: 401 and 429 before any work (authentication.ts). */
  'admit',
  /** Variables coerced, and the operation's cost under MAX_QUERY_COST (query-cost.ts): reported in `extensions.cost`; the operation's span. */
  'cost',
  /** The time limit, counted from arrival (request-timeout.ts); the statements under it are timed and traced (telemetry.ts). */
  'deadline',
  /** The key behind the credentials: unknown or revoked, 401 (authentication.ts). */
  'identify',
  /** Execution: queries in one read snapshot (or alone, as the one statement they are: db/snapshot-choice.ts), every answer within the response budget. */
  'execute',
  /** One statement that identifies the key and answers the query (read-compiler/). */
  'compiledRead',
  /** What clients may see of errors, and the log lines of the unexpected ones (error-masking.ts). */
  'mask',
  /** The response's X-Request-ID, the request's log line (request-log.ts), its metrics and the end of its spans (telemetry.ts). */
  'depart',
] as const;

export type StageName = (typeof REQUEST_STAGES)[number];

export interface PipelineOptions {
  schema: GraphQLSchema;
  introspection: boolean;
  maxBodyBytes: number;
  timeoutMs: number;
  db: Database;
  contexts: ContextFactory;
  rateLimiter: KeyRateLimiter | null;
  logger: Logger;
  /** Compiled reads need a statement runner; without one every read goes to the resolvers. */
  run?: RunStatement;
  runRaw?: RunStatementRaw;
  /** Called as each stage starts (tests follow the stages a request takes). */
  onStage?: (request: Request, stage: StageName) => void;
  /** The trusted documents clients may name by documentId (and, in only-mode, must). */
  persistedDocuments?: PersistedDocuments | null;
  /** Metrics and traces, told of each request at its stages (telemetry.ts); null when both are off. */
  telemetry?: Telemetry | null;
}

export interface RequestPipeline {
  readonly schema: GraphQLSchema;
  readonly maxBodyBytes: number;
  readonly states: RequestStates;
  arrive(request: Request): RequestState;
  readBody(request: Request): Promise<string>;
  /**
   * The document text a request's parameters ask for: its query, or the trusted document its
   * documentId names. Throws a request error for an unknown id, or for a query text when
   * only trusted documents may run.
   */
  documentOf(query: unknown, documentId: unknown): unknown;
  /** Throws the parse error (GRAPHQL_PARSE_FAILED, or QUERY_TOO_COMPLEX past the token limit). */
  parse(request: Request, source: string | Source): DocumentNode;
  validate(request: Request, document: DocumentNode): readonly GraphQLError[];
  admit(request: Request): Promise<Credentials>;
  cost(request: Request, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): GraphQLError[] | null;
  deadline(request: Request): Deadline;
  identify(request: Request): Promise<Viewer>;
  /**
   * Runs the operation with the viewer's context: a query in a read snapshot, or alone once
   * it is known to need one statement (db/snapshot-choice.ts); the answer settled against its budget.
   */
  execute(request: Request, viewer: Viewer, operation: OperationDefinitionNode, run: (context: Context) => Promise<ExecutionResult>): Promise<ExecutionResult>;
  /**
   * Runs work with the viewer's context, as `execute` runs an operation (and Forward REST,
   * http/forward-rest.ts, a request): a read, `read` standing for its kind, in one read
   * snapshot or alone (db/snapshot-choice.ts); anything else (`read` null) as it is.
   */
  perform<T>(request: Request, viewer: Viewer, read: object | null, work: (context: Context) => Promise<T>, outcome?: ReadOutcome<T>): Promise<T>;
  /**
   * The compiled form of a read, or null when the resolvers answer. Compiling a read costs
   * the server up to tens of milliseconds for the largest query within the limits, so a read
   * not compiled yet is compiled only for a token that found its key lately, or once the
   * key is looked up (identify): a token no key has gets its 401 without making the server
   * compile. Throws UNAUTHENTICATED for such a token.
   */
  compile(request: Request, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): Promise<CompiledRead | null>;
  /**
   * Runs a compiled read with the request's key: the answer's `data` as JSON text, or null
   * when the access policy leaves this key's answer to the resolvers, or when there is no
   * compiled read (`viewer` is then the key, identified). Throws UNAUTHENTICATED for a token
   * no key has.
   */
  readOrIdentify(request: Request, compiled: CompiledRead | null): Promise<{ viewer: Viewer; data: string | Uint8Array | null; mark: string | null }>;
  /**
   * The tag (answer-tags.ts) of a compiled read's answer to `request` in a representation (its
   * media type, say), from the mark that came with it; null when it has none. It covers the
   * response's `extensions` (extensions), which two documents of one statement may differ in.
   */
  answerTag(request: Request, compiled: CompiledRead, answer: { viewer: Viewer; mark: string | null }, representation: string): string | null;
  /**
   * For a request with `If-None-Match`, a compiled read whose answer may not have changed:
   * authenticates the key and reads the change mark in one statement, without the answer,
   * and returns the current tag when the request names it (the answer is then `304 Not
   * Modified`), else null (the read goes on). Throws UNAUTHENTICATED for a token no key has.
   */
  unchangedTag(request: Request, compiled: CompiledRead, representation: string): Promise<string | null>;
  /** Whether the request's `If-None-Match` names `tag`: its answer is then `304 Not Modified`. */
  namesRequestTag(request: Request, tag: string): boolean;
  mask(request: Request, errors: readonly GraphQLError[]): GraphQLError[];
  /** The response's `extensions`: the operation's estimated cost and the limit, once estimated. */
  extensions(request: Request): { cost: CostEstimate } | undefined;
  depart(request: Request, response: Response): void;
}

/** Without a manifest: every query runs, and no documentId names a document. */
const NO_PERSISTED_DOCUMENTS = PersistedDocuments.fromManifest({}, false);

export function createPipeline(options: PipelineOptions): RequestPipeline {
  const { schema, introspection, logger, contexts } = options;
  const states = new RequestStates();
  const gate = new Gate(options.db, options.rateLimiter);
  const stage = options.onStage ?? (() => {});
  const telemetry = options.telemetry ?? null;
  // Parsed documents (or their parse errors) by query text, bounded by bytes, for both paths.
  // Documents are immutable, so sharing them is safe.
  const documents = createParseCache();
  const validations = new WeakMap<DocumentNode, readonly GraphQLError[]>();
  // Made on the first tag: it prints the schema.
  let tags: AnswerTags | undefined;
  // Compiled reads and cost estimates, by operation and variables (compiled-read-cache.ts).
  const compiledReads = new CompiledReadCache(schema, options.run, options.runRaw);
  // Which reads answer in one statement, by kind: a query's operation (of a cached document,
  // as above), a REST route.
  const snapshots = new SnapshotChoice<object>();

  /** Whether the request's token found its key lately (or in this request). */
  const tokenKnown = (request: Request): boolean => {
    const state = states.of(request);
    return state.viewer !== undefined || (state.credentials !== undefined && knownTokens.has(state.credentials.tokenSha256));
  };

  /** Runs a compiled statement with the request's key, which it identifies (the compiledRead stage); UNAUTHENTICATED for a token no key has. */
  const runCompiled = async (request: Request, statement: (tokenSha256: string, scope: StatementScope | undefined) => Promise<CompiledAnswer | null>): Promise<CompiledAnswer> => {
    stage(request, 'compiledRead');
    const state = states.of(request);
    if (!state.credentials) throw unauthenticated();
    const { tokenSha256 } = state.credentials;
    const answer = await statement(tokenSha256, state.scope);
    if (answer === null) {
      knownTokens.delete(tokenSha256);
      throw unauthenticated();
    }
    knownTokens.add(tokenSha256);
    state.viewer = answer.viewer;
    return answer;
  };

  return {
    schema,
    maxBodyBytes: options.maxBodyBytes,
    states,
    arrive(request) {
      // A request the native front (native-front.ts) handed to Yoga arrived there already.
      const handedOver = states.known(request);
      if (handedOver) return handedOver;
      stage(request, 'arrive');
      const state = states.of(request);
      telemetry?.arrive(request, state);
      return state;
    },
    documentOf(query, documentId) {
      return (options.persistedDocuments ?? NO_PERSISTED_DOCUMENTS).documentOf(query, documentId);
    },
    readBody(request) {
      stage(request, 'readBody');
      return readBodyText(request, options.maxBodyBytes);
    },
    parse(request, source) {
      stage(request, 'parse');
      const text = typeof source === 'string' ? source : source.body;
      let parsed = documents.get(text);
      if (parsed === undefined) {
        try {
          parsed = parseWithLimits(source);
        } catch (error) {
          if (!(error instanceof GraphQLError)) throw error;
          parsed = error;
        }
        documents.set(text, parsed);
      }
      if (parsed instanceof GraphQLError) throw parsed;
      return parsed;
    },
    validate(request, document) {
      stage(request, 'validate');
      let errors = validations.get(document);
      if (!errors) validations.set(document, (errors = validateDocument(schema, document, introspection)));
      return errors;
    },
    async admit(request) {
      stage(request, 'admit');
      const state = states.of(request);
      // Once per request, whichever path it takes.
      if (state.credentials) return state.credentials;
      const credentials = credentialsOf(request);
      const rateLimit = await gate.admit(credentials);
      if (rateLimit) state.rateLimit = rateLimit;
      state.credentials = credentials;
      return credentials;
    },
    cost(request, document, operation, variables) {
      stage(request, 'cost');
      const state = states.of(request);
      state.operationName = operation.name?.value ?? null;
      state.operationType = operation.operation;
      telemetry?.operation(state);
      return compiledReads.estimate(document, operation, variables, introspection, state);
    },
    deadline(request) {
      stage(request, 'deadline');
      const state = states.of(request);
      const deadline = startDeadline(options.timeoutMs, performance.now() - state.startedAt, request.signal, telemetry?.statements(state));
      state.scope = deadline.scope;
      return deadline;
    },
    async identify(request) {
      const state = states.of(request);
      // Looked up once per request (compile may have looked it up already).
      if (state.viewer) return state.viewer;
      stage(request, 'identify');
      if (!state.credentials) throw unauthenticated();
      state.viewer = await gate.viewer(state.credentials, state.scope);
      knownTokens.add(state.credentials.tokenSha256);
      return state.viewer;
    },
    execute(request, viewer, operation, run) {
      const work = async (context: Context) => context.budget.settle(await run(context));
      return this.perform(request, viewer, operation.operation === 'query' ? operation : null, work, QUERY_OUTCOME);
    },
    perform(request, viewer, read, work, outcome) {
      stage(request, 'execute');
      const state = states.of(request);
      // Its statements under the request's time limit; without one (no deadline stage ran), a scope of its own, unlimited.
      const scope = (state.scope ??= new StatementScope());
      // Each attempt with a context of its own (its loaders and response budget); a read's, under its part of the scope.
      const attempt = (attemptScope: StatementScope, inSnapshot: boolean) => {
        const context = contexts.forViewer(state.id, viewer, attemptScope);
        return inSnapshot ? contexts.inSnapshot(context, work) : work(context);
      };
      if (read === null) return attempt(scope, false);
      return snapshots.read(scope, read, (part) => attempt(part, false), (part) => attempt(part, true), outcome);
    },
    async compile(request, document, operation, variables) {
      if (!tokenKnown(request) && !compiledReads.holds(document, operation, variables)) await this.identify(request);
      return compiledReads.compile(document, operation, variables);
    },
    async readOrIdentify(request, compiled) {
      if (!compiled) return { viewer: await this.identify(request), data: null, mark: null };
      // A statement no key has answered yet (a new shape, or one too long to keep) is planned
      // for this request, which a query within every limit can make cost the database half a
      // second: unless its token found its key lately, the key is looked up first, so that a
      // token no key has costs one small statement.
      if (!compiled.proven && !tokenKnown(request)) await this.identify(request);
      return runCompiled(request, (tokenSha256, scope) => compiled.read(tokenSha256, scope));
    },
    answerTag(request, compiled, answer, representation) {
      const extensions = JSON.stringify(this.extensions(request) ?? null);
      return (tags ??= new AnswerTags(printSchema(schema))).tag(answer.mark, answer.viewer, compiled.shape, representation, extensions);
    },
    async unchangedTag(request, compiled, representation) {
      if (!request.headers.has('if-none-match')) return null;
      // A statement that stops short of the answer: the key and the change mark.
      const tag = this.answerTag(request, compiled, await runCompiled(request, (tokenSha256, scope) => compiled.check(tokenSha256, scope)), representation);
      return tag !== null && this.namesRequestTag(request, tag) ? tag : null;
    },
    namesRequestTag(request, tag) {
      const ifNoneMatch = request.headers.get('if-none-match');
      return ifNoneMatch !== null && namesTag(ifNoneMatch, tag);
    },
    mask(request, errors) {
      stage(request, 'mask');
      const masked = errors.map((error) => maskError(error));
      const state = states.of(request);
      const code = masked[0]?.extensions?.code;
      if (state.errorCode === undefined && typeof code === 'string') state.errorCode = code;
      logErrors(logger, state.id, masked);
      return masked;
    },
    extensions(request) {
      const { cost } = states.of(request);
      return cost ? { cost } : undefined;
    },
    depart(request, response) {
      stage(request, 'depart');
      const state = states.of(request);
      logResponse(logger, state, request, response);
      telemetry?.depart(request, response, state);
    },
  };
}

const decoder = new TextDecoder();

/** A compiled read's `data` as a value (it comes as JSON text, or as the database's undecoded bytes of it). */
export function parseCompiledData(data: string | Uint8Array): unknown {
  return JSON.parse(typeof data === 'string' ? data : decoder.decode(data));
}

/** A result with the request's `extensions` (pipeline.extensions) added to its own. */
export function withExtensions(result: ExecutionResult, extensions: Record<string, unknown> | undefined): ExecutionResult {
  return extensions ? { ...result, extensions: { ...result.extensions, ...extensions } } : result;
}
