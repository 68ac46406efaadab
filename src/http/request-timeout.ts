import { GraphQLError, type ExecutionResult } from 'graphql';
import { StatementScope } from '../db/deadline.js';
import type { StatementObserver } from '../db/statement-observer.js';
import { requestTimeoutError } from '../graphql/error-masking.js';

/**
 * A request's time limit, running from the moment it is started. Work that outlives it ends:
 * the client gets a top-level REQUEST_TIMEOUT (HTTP 503), and the work sends no further
 * statement. Statements already sent to PostgreSQL are ended by its `statement_timeout` (set
 * to the same limit); a write's transaction either commits whole or rolls back whole. A
 * client that disconnects ends its request's work the same way.
 */
export interface Deadline {
  /**
   * The request's statement scope: its statements are sent under it (the pipeline's
   * request state hands it to the request's database handle), and none once the time is up.
   */
  readonly scope: StatementScope;
  /**
   * Runs the work under the limit: once the time is up the database sends none of the
   * request's statements, so the work ends at its next one. Resolves with the work's result, or with
   * the REQUEST_TIMEOUT result when the time runs out first — also when the work ends after
   * the limit but before the timer could fire (PGlite holds the thread while a statement
   * runs); the work is not waited for then.
   */
  within<T>(work: () => Promise<T>): Promise<T | ExecutionResult>;
  /** Stops the timer once the request is answered. */
  clear(): void;
}

/** Starts the limit of a request that has already used `elapsedMs` of its `timeoutMs`; `observer` is told of its statements. */
export function startDeadline(timeoutMs: number, elapsedMs: number, clientGone?: AbortSignal, observer?: StatementObserver): Deadline {
  const remainingMs = timeoutMs - elapsedMs;
  const scope = new StatementScope(performance.now() + remainingMs, timeoutMs, observer);
  // Made only when the time is up: building an error (and its stack) on every request costs.
  let error: GraphQLError | undefined;
  const timedOutResult = (): ExecutionResult => ({ errors: [(error ??= requestTimeoutError(timeoutMs))] });
  let expire!: () => void;
  const timedOut = new Promise<ExecutionResult>((resolve) => {
    expire = () => {
      const result = timedOutResult();
      scope.stop(result.errors![0]!);
      resolve(result);
    };
  });
  // Out of time before execution (a slow authentication): nothing runs at all.
  if (remainingMs <= 0) expire();
  const timer = remainingMs > 0 ? setTimeout(expire, remainingMs) : undefined;
  // A client that went away needs no answer: its work stops at its next statement.
  clientGone?.addEventListener('abort', () => scope.stop((error ??= requestTimeoutError(timeoutMs))), { once: true });
  const late = <T>(result: T): T | ExecutionResult => {
    if (performance.now() <= scope.at) return result;
    expire();
    return timedOutResult();
  };
  return {
    scope,
    within: (work) => (remainingMs <= 0 ? timedOut : Promise.race([work().then(late), timedOut])),
    clear: () => clearTimeout(timer),
  };
}
