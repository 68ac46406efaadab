import { GraphQLError } from 'graphql';

/** A top-level request error (bad arguments that are not part of a mutation's input). */
export function invalidRequest(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'INVALID_REQUEST' } });
}
