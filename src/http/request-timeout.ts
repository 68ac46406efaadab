import { GraphQLError, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';

export const REQUEST_TIMEOUT = 'REQUEST_TIMEOUT';

export function requestTimeoutError(timeoutMs: number): GraphQLError {
  return new GraphQLError(
    `The request took longer than ${timeoutMs} ms, the limit, and was stopped. A write it made either completed whole or not at all: read before retrying.`,
    { extensions: { code: REQUEST_TIMEOUT, timeoutMs, http: { status: 503 } } },
  );
}

export interface RequestTimeoutOptions {
  timeoutMs: number;
  /** When the request arrived (performance.now() milliseconds): the limit counts from there. */
  startedAt(request: Request): number;
}

/**
 * Ends execution that outlives the request's time limit: no further field is resolved and
 * the client gets a top-level REQUEST_TIMEOUT (HTTP 503). A client that disconnects ends
 * its request's execution the same way. Statements already sent to PostgreSQL are ended
 * by its `statement_timeout` (set to the same limit); a write's transaction either commits
 * whole or rolls back whole.
 */
export function useRequestTimeout(options: RequestTimeoutOptions): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const request = (args.contextValue as { request?: Request }).request;
      const remainingMs = request ? options.timeoutMs - (performance.now() - options.startedAt(request)) : options.timeoutMs;
      const controller = new AbortController();
      const timeout = () => controller.abort(requestTimeoutError(options.timeoutMs));
      // Out of time before execution (a slow authentication): nothing runs at all.
      if (remainingMs <= 0) timeout();
      const timer = remainingMs > 0 ? setTimeout(timeout, remainingMs) : undefined;
      const signals = request?.signal ? [controller.signal, request.signal] : [controller.signal];
      // Yoga's executor stops resolving further fields once this signal aborts…
      (args as { signal?: AbortSignal }).signal = signals.length === 1 ? controller.signal : AbortSignal.any(signals);
      // …but waits for a mutation's field to settle: the answer does not wait.
      const timedOut = new Promise<ExecutionResult>((resolve) => {
        controller.signal.addEventListener('abort', () => resolve({ errors: [controller.signal.reason as GraphQLError] }), { once: true });
      });
      setExecuteFn((executeArgs) => Promise.race([executeFn(executeArgs), timedOut]) as never);
      return {
        onExecuteDone() {
          clearTimeout(timer);
        },
      };
    },
  };
}
