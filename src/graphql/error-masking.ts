import { GraphQLError } from 'graphql';
import { DeadlineExceededError } from '../db/deadline.js';
import { isDatabaseUnavailable } from '../db/failures.js';
import { DomainError } from '../domain/errors.js';
import { DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS } from '../domain/limits.js';

/**
 * What clients may see of a failure. Expected errors (GraphQLErrors we raise on purpose)
 * pass; a domain error outside a mutation's result union (a query's bad argument) becomes a
 * top-level error with its code; a database that cannot be reached becomes 503 DATABASE_UNAVAILABLE with
 * Retry-After; anything else becomes INTERNAL_SERVER_ERROR, its original kept for the log
 * line only.
 */
export const INTERNAL_ERROR_CODE = 'INTERNAL_SERVER_ERROR';
export const DATABASE_UNAVAILABLE = 'DATABASE_UNAVAILABLE';
export const REQUEST_TIMEOUT = 'REQUEST_TIMEOUT';

/** The answer to a request that ran past its time limit: HTTP 503. */
export function requestTimeoutError(timeoutMs: number): GraphQLError {
  return new GraphQLError(
    `The request took longer than ${timeoutMs} ms, the limit, and was stopped. A write it made either completed whole or not at all: read before retrying.`,
    { extensions: { code: REQUEST_TIMEOUT, timeoutMs, http: { status: 503 } } },
  );
}

/** The DeadlineExceededError behind an error (drizzle may wrap it), if any. */
function deadlineExceeded(error: unknown): DeadlineExceededError | null {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    if (current instanceof DeadlineExceededError) return current;
  }
  return null;
}

/** Whether an error is one we mean clients to see (a GraphQLError not caused by an unexpected throw). */
export function isExpectedError(error: unknown): error is GraphQLError {
  return error instanceof GraphQLError && (error.originalError == null || error.originalError instanceof GraphQLError);
}

export function maskError(error: unknown, message = 'Unexpected error.'): GraphQLError {
  if (isExpectedError(error)) return error;
  const original = error instanceof GraphQLError ? (error.originalError ?? error) : error;
  const nodes = error instanceof GraphQLError ? error.nodes : undefined;
  const path = error instanceof GraphQLError ? error.path : undefined;
  if (original instanceof DomainError) return new GraphQLError(original.message, { nodes, path, extensions: { code: original.code } });
  const originalError = original instanceof Error ? original : new Error(String(original));
  // A statement refused because its request ran out of time: the request's own timeout.
  const deadline = deadlineExceeded(original);
  if (deadline) {
    const timedOut = requestTimeoutError(deadline.timeoutMs);
    return new GraphQLError(timedOut.message, { nodes, path, originalError, extensions: timedOut.extensions });
  }
  if (isDatabaseUnavailable(original)) {
    return new GraphQLError('The database is unavailable right now; retry shortly.', {
      nodes,
      path,
      originalError,
      extensions: {
        code: DATABASE_UNAVAILABLE,
        http: { status: 503, headers: { 'Retry-After': String(DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS) } },
      },
    });
  }
  return new GraphQLError(message, { nodes, path, originalError, extensions: { code: INTERNAL_ERROR_CODE } });
}
