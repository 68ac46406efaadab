import { randomUUID } from 'node:crypto';
import { GraphQLError } from 'graphql';
import { createYoga, useReadinessCheck, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { Config } from './config.js';
import type { Context } from './context.js';
import type { DatabaseHandle } from './db/client.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, MAX_REQUEST_BODY_BYTES, READINESS_TIMEOUT_MS, REQUEST_ID_MAX_CHARACTERS } from './domain/limits.js';
import { mayHoldDevelopmentKey, renderGraphiQL, useGraphiQLAssets } from './graphiql.js';
import { compileRead } from './graphql/compiled-reads.js';
import { createDocumentCache, createParseErrorCache } from './graphql/document-cache.js';
import { DATABASE_UNAVAILABLE, INTERNAL_ERROR_CODE, maskError } from './graphql/error-masking.js';
import { createLoaders } from './graphql/loaders.js';
import { useQueryLimits } from './graphql/query-limits.js';
import { snapshotRunner, useReadSnapshots } from './graphql/read-snapshot.js';
import { ResponseBudget, useResponseBudget } from './graphql/response-budget.js';
import { schema } from './graphql/schema.js';
import { useFastPath } from './http/fast-path.js';
import { credentialsOf, Gate, type Credentials } from './http/authentication.js';
import { RateLimiter } from './http/rate-limit.js';
import { CLIENT_CLOSED_REQUEST, useRequestBodyLimit } from './http/request-body.js';
import { useRequestErrorStatus } from './http/request-errors.js';
import { useRequestTimeout } from './http/request-timeout.js';
import { silentLogger, type Logger } from './logger.js';
import type { Viewer } from './domain/viewer.js';

export interface AppOptions {
  /**
   * The settings the app uses. Left out: introspection follows nodeEnv (off in production),
   * no rate limit, DEFAULT_REQUEST_TIMEOUT_MS.
   */
  config: Pick<Config, 'nodeEnv' | 'graphiql'> & Partial<Pick<Config, 'introspection' | 'rateLimit' | 'requestTimeoutMs'>>;
  /** `run` is needed for compiled reads: without it every read goes to the resolvers. */
  database: Pick<DatabaseHandle, 'db' | 'ping'> & Partial<Pick<DatabaseHandle, 'run' | 'runRaw' | 'readSnapshot'>>;
  logger?: Logger;
  /** Pre-filled in GraphiQL's Authorization header (development only). */
  developmentKey?: string | null;
  /** The rate limiter's clock in milliseconds (tests move it by hand). */
  clock?: () => number;
  /** Serve plain JSON operations on the lean path (default); false sends everything through Yoga (tests compare both). */
  fastPath?: boolean;
  /** Answer the reads it covers with one compiled SQL statement (default); false leaves every read to the resolvers (tests compare both). */
  compiledReads?: boolean;
}

export type App = YogaServerInstance<Record<string, never>, Context>;

const REQUEST_ID_PATTERN = new RegExp(`^[A-Za-z0-9._:-]{1,${REQUEST_ID_MAX_CHARACTERS}}$`);

const FIRST_QUERY = `# Welcome to memstore. The Authorization header below holds your development key.
mutation CreateStore {
  createMemoryStore(input: { name: "project-alpha-memory", description: "Agent knowledge base", metadata: { team: "backend" } }) {
    __typename
    ... on CreateMemoryStoreSuccess { memoryStore { id name status metadata createdAt } }
    ... on Error { code message }
    ... on InvalidRequestError { issues { field message } }
  }
}

query Stores {
  memoryStores(first: 10) {
    totalCount
    edges { node { id name status entryCount totalSize createdAt } }
  }
}
`;

/**
 * The Yoga instance: GraphQL at /graphql (GraphiQL for browsers when enabled), /healthz,
 * /readyz. Tests call `app.fetch`; only src/server.ts listens.
 */
export function createApp(options: AppOptions): App {
  const { config, database, developmentKey } = options;
  const logger = options.logger ?? silentLogger;
  const introspection = config.introspection ?? config.nodeEnv !== 'production';
  const rateLimiter = config.rateLimit ? new RateLimiter(config.rateLimit, options.clock) : null;
  // Per request: its id, its arrival, and whether it has spent one of its key's requests.
  const requests = new WeakMap<Request, { id: string; startedAt: number; admitted?: boolean }>();
  // Some of Yoga's own routes (GraphiQL) answer before later onRequest hooks run, so the
  // request's state is made wherever the request is first seen.
  const requestState = (request: Request) => {
    let state = requests.get(request);
    if (!state) {
      const given = request.headers.get('x-request-id');
      state = { id: given !== null && REQUEST_ID_PATTERN.test(given) ? given : randomUUID(), startedAt: performance.now() };
      requests.set(request, state);
    }
    return state;
  };
  const requestIdOf = (request: Request) => requestState(request).id;
  // Yoga logs fixed messages and Error objects; further arguments (which may hold request
  // parameters, and so memory content) are dropped, and errors go through the logger's scrubbing.
  const yogaLog = (level: 'debug' | 'info' | 'warn' | 'error', args: unknown[]) => {
    const [first] = args;
    if (first instanceof Error) logger[level]('graphql-yoga error', { error: first });
    else logger[level](typeof first === 'string' ? first : 'graphql-yoga event');
  };

  const requestLifecycle: Plugin = {
    onRequest({ request }) {
      requestState(request);
    },
    onResultProcess({ request, result }) {
      // Masked errors carry the original for this log line only; clients see the mask.
      for (const single of Array.isArray(result) ? result : [result]) logErrors(request, (single as { errors?: readonly GraphQLError[] }).errors ?? []);
    },
    onResponse({ request, response }) {
      const state = requestState(request);
      response.headers.set('x-request-id', state.id);
      logger.info('request', {
        requestId: state.id,
        method: request.method,
        path: new URL(request.url).pathname,
        status: response.status,
        durationMs: Math.round((performance.now() - state.startedAt) * 10) / 10,
      });
    },
  };

  /** The log lines of an answer's errors: internal ones at error level, database trouble at warn, a client gone at debug. */
  const logErrors = (request: Request, errors: readonly GraphQLError[]) => {
    for (const error of errors) {
      const code = error.extensions?.code;
      const requestId = requestIdOf(request);
      const details = { requestId, path: error.path, error: error.originalError ?? error };
      if (code === CLIENT_CLOSED_REQUEST) logger.debug('client went away before its request was read', { requestId });
      else if (code === DATABASE_UNAVAILABLE) logger.warn('database unavailable', details);
      else if (code === INTERNAL_ERROR_CODE) logger.error('unexpected error', details);
    }
  };

  const gate = new Gate(database.db, rateLimiter);
  // A query's statements read one snapshot (its transaction's, with loaders of their own).
  const inSnapshot = snapshotRunner<Context>(
    database.readSnapshot ?? ((work) => database.db.transaction((tx) => work(tx as never))),
    (context, tx) => ({ ...context, db: tx, loaders: createLoaders(tx, context.viewer.workspaceId) }),
  );
  /** The context of an authenticated request. */
  const contextFor = (request: Request, viewer: Viewer): Context => ({
    viewer,
    db: database.db,
    loaders: createLoaders(database.db, viewer.workspaceId),
    requestId: requestIdOf(request),
    now: new Date(),
    budget: new ResponseBudget(),
  });
  /** Credentials of the right form, then one of the key's requests spent (once per request, whichever path it takes). */
  const admitRequest = async (request: Request): Promise<Credentials> => {
    const credentials = credentialsOf(request);
    const state = requestState(request);
    if (!state.admitted) {
      state.admitted = true;
      await gate.admit(credentials);
    }
    return credentials;
  };
  const buildContext = async (request: Request): Promise<Context> => {
    const credentials = await admitRequest(request);
    return contextFor(request, await gate.viewer(credentials));
  };
  const timeoutMs = config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;

  return createYoga<Record<string, never>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    healthCheckEndpoint: '/healthz',
    landingPage: false,
    logging: {
      debug: (...args) => yogaLog('debug', args),
      info: (...args) => yogaLog('info', args),
      warn: (...args) => yogaLog('warn', args),
      error: (...args) => yogaLog('error', args),
    },
    graphiql: config.graphiql
      ? (request) => ({
          title: 'memstore',
          defaultQuery: FIRST_QUERY,
          headers:
            developmentKey && config.nodeEnv !== 'production' && mayHoldDevelopmentKey(request)
              ? JSON.stringify({ Authorization: `Bearer ${developmentKey}` }, null, 2)
              : undefined,
        })
      : false,
    // No cross-origin access: browsers hand other origins nothing of any answer.
    cors: false,
    maskedErrors: { maskError: (error, message) => maskError(error, message) },
    renderGraphiQL,
    // Batched operations (a JSON array) are refused with 400 BAD_REQUEST.
    batching: false,
    // Yoga's own parse cache (GET and the odd requests the lean path leaves it), bounded by bytes.
    parserAndValidationCache: { documentCache: createDocumentCache() as never, errorCache: createParseErrorCache() },
    plugins: [
      requestLifecycle,
      useRequestErrorStatus(),
      ...(config.graphiql ? [useGraphiQLAssets()] : []),
      ...(options.fastPath === false ? [] : [useFastPath<Context>({
        schema,
        introspection,
        maxBodyBytes: MAX_REQUEST_BODY_BYTES,
        timeoutMs,
        startedAt: (request) => requestState(request).startedAt,
        buildContext,
        admitRequest,
        contextFor,
        inSnapshot,
        maskError,
        onErrors: logErrors,
        adoptRequest: (original, replacement) => requests.set(replacement, requestState(original)),
        compileRead:
          options.compiledReads === false || !database.run
            ? undefined
            : (document, operation, variables) => compileRead(schema, document, operation, variables, database.run!, database.runRaw),
      })]),
      useRequestBodyLimit(MAX_REQUEST_BODY_BYTES),
      useQueryLimits({ introspection }),
      useResponseBudget(),
      useReadSnapshots(inSnapshot),
      useRequestTimeout({
        timeoutMs,
        startedAt: (request) => requestState(request).startedAt,
      }),
      useReadinessCheck({
        endpoint: '/readyz',
        check: async () => {
          let timer: NodeJS.Timeout | undefined;
          try {
            await Promise.race([
              database.ping(),
              new Promise((_, reject) => {
                timer = setTimeout(() => reject(new Error(`the database did not answer within ${READINESS_TIMEOUT_MS} ms`)), READINESS_TIMEOUT_MS);
              }),
            ]);
            return true;
          } catch (error) {
            logger.warn('readiness check failed', { error });
            return false;
          } finally {
            clearTimeout(timer);
          }
        },
      }),
    ],
    context: ({ request }) => buildContext(request),
  });
}
