import type { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * A request the server cannot run (it does not parse or validate, its parameters are
 * wrong) is HTTP 400 under every response type. GraphQL over HTTP lets an
 * `application/json` answer be 200 for those, and Yoga marks them so (`http.spec`); here
 * the status does not depend on the Accept header, as it does not for the limits.
 */
export function useRequestErrorStatus(): Plugin {
  return {
    onResultProcess({ result }) {
      for (const single of Array.isArray(result) ? result : [result]) {
        for (const error of ((single as { errors?: readonly GraphQLError[] }).errors ?? [])) {
          const http = error.extensions?.http as { spec?: boolean } | undefined;
          if (http?.spec) http.spec = false;
        }
      }
    },
  };
}
