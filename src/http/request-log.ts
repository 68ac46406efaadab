import { randomUUID } from 'node:crypto';
import type { GraphQLError } from 'graphql';
import { REQUEST_ID_MAX_CHARACTERS } from '../domain/limits.js';
import { DATABASE_UNAVAILABLE, INTERNAL_ERROR_CODE } from '../graphql/error-masking.js';
import type { Logger } from '../logger.js';
import type { Viewer } from '../domain/viewer.js';
import type { CostEstimate } from '../graphql/query-limits.js';
import type { Credentials } from './authentication.js';
import { rateLimitHeaders, type RateLimitState } from './rate-limit.js';
import { CLIENT_CLOSED_REQUEST } from './request-body.js';
import type { StatementScope } from '../db/deadline.js';
import type { RequestSpans } from './tracing.js';

/** What the server keeps about a request while it is answered. */
export interface RequestState {
  /** The client's X-Request-ID when it is of a safe form, else a new UUID. */
  id: string;
  /** performance.now() at arrival: the time limit and the log's duration count from here. */
  startedAt: number;
  /** The credentials, once one of the key's requests is spent (whichever path the request takes). */
  credentials?: Credentials;
  /** What the key has left of its rate limit after this request (when rate limits are on). */
  rateLimit?: RateLimitState;
  /** The key behind the credentials, once identified. */
  viewer?: Viewer;
  /** The operation's name, once its document is known (null: anonymous). */
  operationName?: string | null;
  /** The operation's estimated cost, once estimated. */
  cost?: CostEstimate;
  /** query, mutation or subscription, once the operation is known. */
  operationType?: string;
  /** The code of the answer's first top-level error, once masked (metrics count answers by it). */
  errorCode?: string;
  /** The request's spans, while it is answered (when tracing is on). */
  spans?: RequestSpans;
  /** Its statements' scope, once its time limit runs (request-timeout.ts): every statement it sends is sent under it. */
  scope?: StatementScope;
}

const REQUEST_ID_PATTERN = new RegExp(`^[A-Za-z0-9._:-]{1,${REQUEST_ID_MAX_CHARACTERS}}$`);

/** Each request's state, made wherever the request is first seen (some of Yoga's routes answer before later hooks run). */
export class RequestStates {
  private readonly states = new WeakMap<Request, RequestState>();

  of(request: Request): RequestState {
    let state = this.states.get(request);
    if (!state) {
      const given = request.headers.get('x-request-id');
      state = { id: given !== null && REQUEST_ID_PATTERN.test(given) ? given : randomUUID(), startedAt: performance.now() };
      this.states.set(request, state);
    }
    return state;
  }

  /** The state of a request already seen, if any. */
  known(request: Request): RequestState | undefined {
    return this.states.get(request);
  }

  /** A request made to stand for another (the same body, read once) carries its state. */
  adopt(original: Request, replacement: Request): void {
    this.states.set(replacement, this.of(original));
  }
}

/** The log lines of an answer's errors: internal ones at error level, database trouble at warn, a client gone at debug. */
export function logErrors(logger: Logger, requestId: string, errors: readonly GraphQLError[]): void {
  for (const error of errors) {
    const code = error.extensions?.code;
    const details = { requestId, path: error.path, error: error.originalError ?? error };
    if (code === CLIENT_CLOSED_REQUEST) logger.debug('client went away before its request was read', { requestId });
    else if (code === DATABASE_UNAVAILABLE) logger.warn('database unavailable', details);
    else if (code === INTERNAL_ERROR_CODE) logger.error('unexpected error', details);
  }
}

/** The one line every answered request leaves, and its X-Request-ID header. */
export function logResponse(logger: Logger, state: RequestState, request: Request, response: Response): void {
  response.headers.set('x-request-id', state.id);
  // What the key has left, on every answer to a key that exists (a 429 carries its own).
  if (state.rateLimit && state.viewer) for (const [name, value] of Object.entries(rateLimitHeaders(state.rateLimit))) response.headers.set(name, value);
  logger.info('request', {
    requestId: state.id,
    method: request.method,
    path: new URL(request.url).pathname,
    status: response.status,
    durationMs: Math.round((performance.now() - state.startedAt) * 10) / 10,
    ...(state.operationName !== undefined ? { operationName: state.operationName } : {}),
    ...(state.viewer ? { apiKeyId: state.viewer.apiKeyId, workspaceId: state.viewer.workspaceId } : {}),
  });
}

/**
 * Yoga's own log lines through ours: Yoga logs fixed messages and Error objects; further
 * arguments (which may hold request parameters, and so memory content) are dropped, and
 * errors go through the logger's scrubbing.
 */
export function yogaLogging(logger: Logger) {
  const log = (level: 'debug' | 'info' | 'warn' | 'error') => (...args: unknown[]) => {
    const [first] = args;
    if (first instanceof Error) logger[level]('graphql-yoga error', { error: first });
    else logger[level](typeof first === 'string' ? first : 'graphql-yoga event');
  };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}
