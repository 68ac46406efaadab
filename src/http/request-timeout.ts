import { GraphQLError, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { withinDeadline } from '../db/deadline.js';
import { requestTimeoutError } from '../graphql/error-masking.js';

export interface RequestTimeoutOptions {
  timeoutMs: number;
  /** When the request arrived (performance.now() milliseconds): the limit counts from there. */
  startedAt(request: Request): number;
}

/** A request's time limit, running from the moment it is started. */
export interface Deadline {
  /** Aborts (with the REQUEST_TIMEOUT error as reason) when the time is up; already aborted if it was up at the start. */
  signal: AbortSignal;
  /**
   * Runs the work under the limit: the database sends none of its statements once the time
   * is up. Resolves with its result, or with the REQUEST_TIMEOUT result when the time runs
   * out first — also when the work ends after the limit but before the timer could fire
   * (PGlite holds the thread while a statement runs); the work is not waited for then.
   */
  within<T>(work: () => Promise<T>): Promise<T | ExecutionResult>;
  /** Stops the timer once the request is answered. */
  clear(): void;
}

/** Starts the limit of a request that has already used `elapsedMs` of its `timeoutMs`. */
export function startDeadline(timeoutMs: number, elapsedMs: number): Deadline {
  const remainingMs = timeoutMs - elapsedMs;
  const controller = new AbortController();
  const timedOut = new Promise<ExecutionResult>((resolve) => {
    controller.signal.addEventListener('abort', () => resolve({ errors: [controller.signal.reason as GraphQLError] }), { once: true });
  });
  const timeout = () => {
    if (!controller.signal.aborted) controller.abort(requestTimeoutError(timeoutMs));
  };
  const at = performance.now() + remainingMs;
  // Out of time before execution (a slow authentication): nothing runs at all.
  if (remainingMs <= 0) timeout();
  const timer = remainingMs > 0 ? setTimeout(timeout, remainingMs) : undefined;
  const late = <T>(result: T): T | ExecutionResult => {
    if (performance.now() <= at) return result;
    timeout();
    return { errors: [controller.signal.reason as GraphQLError] };
  };
  return {
    signal: controller.signal,
    within: (work) => (controller.signal.aborted ? timedOut : Promise.race([withinDeadline(at, timeoutMs, work).then(late), timedOut])),
    clear: () => clearTimeout(timer),
  };
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
      const deadline = startDeadline(options.timeoutMs, request ? performance.now() - options.startedAt(request) : 0);
      // Yoga's executor stops resolving further fields once this signal aborts…
      (args as { signal?: AbortSignal }).signal = request?.signal ? AbortSignal.any([deadline.signal, request.signal]) : deadline.signal;
      // …but waits for a mutation's field to settle: the answer does not wait.
      setExecuteFn((executeArgs) => deadline.within(async () => executeFn(executeArgs)) as never);
      return {
        onExecuteDone() {
          deadline.clear();
        },
      };
    },
  };
}
