import { createHash } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';
import { useReadRoute } from './read-route.js';

/** The path the published schema is served at, whatever the introspection setting. */
export const SCHEMA_FILE_PATH = '/schema.graphql';

/**
 * `GET /schema.graphql`: the schema's SDL, exactly the repository's schema.graphql, for
 * clients that generate code while introspection is off. No key needed: the schema is
 * public; nothing in it belongs to a workspace.
 */
export function useSchemaFile(sdl: string): Plugin {
  const etag = `"${createHash('sha256').update(sdl).digest('base64url')}"`;
  return useReadRoute(SCHEMA_FILE_PATH, (request, Response) => {
    const headers = { 'content-type': 'text/plain; charset=utf-8', etag, 'cache-control': 'no-cache' };
    if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers });
    return new Response(sdl, { headers });
  });
}
