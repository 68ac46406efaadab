import { createHash } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';

/** The path the published schema is served at, whatever the introspection setting. */
export const SCHEMA_FILE_PATH = '/schema.graphql';

/**
 * `GET /schema.graphql`: the schema's SDL, exactly the repository's schema.graphql, for
 * clients that generate code while introspection is off. No key needed: the schema is
 * public; nothing in it belongs to a workspace.
 */
export function useSchemaFile(sdl: string): Plugin {
  const etag = `"${createHash('sha256').update(sdl).digest('base64url')}"`;
  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== SCHEMA_FILE_PATH) return;
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        endResponse(new fetchAPI.Response('Method not allowed', { status: 405, headers: { allow: 'GET, HEAD' } }));
        return;
      }
      const headers = { 'content-type': 'text/plain; charset=utf-8', etag, 'cache-control': 'no-cache' };
      if (request.headers.get('if-none-match') === etag) {
        endResponse(new fetchAPI.Response(null, { status: 304, headers }));
        return;
      }
      endResponse(new fetchAPI.Response(request.method === 'HEAD' ? null : sdl, { headers }));
    },
  };
}
