import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

export const CSRF_HEADER = 'x-graphql-yoga-csrf';
export const CSRF_HEADER_REQUIRED = 'CSRF_HEADER_REQUIRED';

/**
 * Yoga's CSRF prevention: a request a browser may send cross-site without a CORS preflight
 * (a GET, or a POST of a form or plain text) must carry the CSRF_HEADER (any value). The
 * refusal gets a code of ours, so that clients can tell it apart.
 */
export function useCsrfPrevention(): Plugin {
  const prevention = useCSRFPrevention({ requestHeaders: [CSRF_HEADER] });
  return {
    onRequestParse(payload) {
      try {
        prevention.onRequestParse!(payload as never);
      } catch {
        throw new GraphQLError(
          `This request could be forged by another web site: send the header "${CSRF_HEADER}: 1" with GET requests, or POST JSON.`,
          { extensions: { code: CSRF_HEADER_REQUIRED, http: { status: 403 } } },
        );
      }
    },
  };
}
