import { GraphQLError } from 'graphql';
import { PermissionError } from '../domain/errors.js';

/** A top-level request error (bad arguments that are not part of a mutation's input). */
export function invalidRequest(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'INVALID_REQUEST' } });
}

/**
 * The `errors` option of a mutation field: the domain errors it may return, and its result
 * union `<Mutation>Result` holding the success type directly beside them.
 */
export function mutationResult<Types extends (new (...args: never[]) => Error)[]>(mutation: string, types: [...Types]) {
  const name = `${mutation.charAt(0).toUpperCase()}${mutation.slice(1)}Result`;
  return {
    // Every mutation may answer PermissionError: IDENTITY keys may call only a few (access.ts).
    types: [...types, PermissionError],
    directResult: true as const,
    union: { name, description: `What ${mutation} returns: the success type or an error type.` },
  };
}
