import type { StatementObserver } from '../db/statement-observer.js';
import { statementCommand } from '../db/statement-observer.js';
import { TRACED_STATEMENT_MAX_CHARACTERS } from '../domain/limits.js';
import type { Metrics } from './metrics.js';
import { RATE_LIMITED } from './rate-limit.js';
import type { RequestState } from './request-log.js';
import type { Tracing } from './tracing.js';

/**
 * What the request pipeline tells metrics and traces, at its stages (pipeline.ts), so that
 * the lean path and Yoga count the same way: `arrive` starts the request's span, `operation`
 * the operation's (the cost stage, when it is known), `statements` is the observer of the
 * statements sent under the request's time limit, and `depart` counts the answer and ends
 * its spans. Either part may be off; with both off the pipeline has no telemetry at all.
 */
export interface Telemetry {
  arrive(request: Request, state: RequestState): void;
  operation(state: RequestState): void;
  statements(state: RequestState): StatementObserver | undefined;
  depart(request: Request, response: Response, state: RequestState): void;
}

/** The path of a request's URL, without parsing all of it (`new URL` costs a microsecond). */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start < 0) return '/';
  const end = url.slice(start).search(/[?#]/);
  return end < 0 ? url.slice(start) : url.slice(start, start + end);
}

export function createTelemetry(metrics: Metrics | null, tracing: Tracing | null): Telemetry | null {
  if (!metrics && !tracing) return null;
  return {
    arrive(request, state) {
      if (!tracing) return;
      const path = pathOf(request.url);
      state.spans = {
        request: tracing.startRequest(request, `${request.method} ${path}`, {
          'http.request.method': request.method,
          'url.path': path,
          'memstore.request_id': state.id,
        }),
      };
    },
    operation(state) {
      if (!tracing || !state.spans || state.spans.operation) return;
      const type = state.operationType ?? 'query';
      state.spans.operation = tracing.startChild(state.spans.request, state.operationName ? `${type} ${state.operationName}` : type, 'internal', {
        'graphql.operation.type': type,
        ...(state.operationName ? { 'graphql.operation.name': state.operationName } : {}),
      });
    },
    statements(state) {
      const parent = state.spans?.operation ?? state.spans?.request;
      if (!tracing || !parent) return metrics?.statement;
      return (text) => {
        const command = statementCommand(text);
        const span = tracing.startChild(parent, command.toUpperCase(), 'client', {
          'db.system.name': 'postgresql',
          'db.operation.name': command.toUpperCase(),
          'db.query.text': text.length > TRACED_STATEMENT_MAX_CHARACTERS ? text.slice(0, TRACED_STATEMENT_MAX_CHARACTERS) : text,
        });
        const timed = metrics?.statement(text);
        return (error) => {
          timed?.(error);
          if (error !== undefined) tracing.fail(span, error instanceof Error ? error.name : 'statement failed');
          span.end();
        };
      };
    },
    depart(request, response, state) {
      const path = pathOf(request.url);
      const outcome = state.errorCode ?? (response.status < 400 ? 'ok' : 'error');
      if (metrics) {
        metrics.httpResponse(path, response.status);
        if (path === '/graphql') {
          metrics.graphqlRequest({
            operationName: state.operationName,
            operationType: state.operationType,
            outcome,
            seconds: (performance.now() - state.startedAt) / 1000,
          });
        }
        if (state.errorCode === RATE_LIMITED) metrics.rateLimitRefused();
      }
      const spans = state.spans;
      if (tracing && spans) {
        if (spans.operation) {
          if (state.errorCode) tracing.fail(spans.operation, state.errorCode);
          spans.operation.end();
        }
        spans.request.setAttribute('http.response.status_code', response.status);
        if (state.viewer) {
          spans.request.setAttribute('memstore.workspace_id', state.viewer.workspaceId);
          spans.request.setAttribute('memstore.api_key_id', state.viewer.apiKeyId);
        }
        if (response.status >= 500) tracing.fail(spans.request, state.errorCode ?? String(response.status));
        spans.request.end();
        state.spans = undefined;
      }
    },
  };
}
