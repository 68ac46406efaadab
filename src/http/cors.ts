/**
 * Cross-origin access, from MEMSTORE_CORS_ORIGINS: none at all unless configured; then the
 * listed origins (or any, with `*`, and then without credentials) may call the API from a
 * browser. The GraphiQL page, which may hold the development key, is never readable by
 * another origin, whatever the setting: no CORS headers on it (here), and its own headers
 * (graphiql.ts) keep it out of other origins' frames and reads.
 */

/** The configured origins: a list of exact origins, or `*` for any. */
export type CorsOrigins = readonly string[] | '*';

/** Headers a cross-origin page may send, beyond the always-allowed ones. */
const ALLOWED_HEADERS = ['authorization', 'content-type', 'x-request-id', 'idempotency-key', 'if-none-match'];

/** Headers a cross-origin page may read. */
const EXPOSED_HEADERS = ['x-request-id', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'etag'];

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/** Whether an origin (`scheme://host[:port]`) is of the form MEMSTORE_CORS_ORIGINS lists. */
export function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
  } catch {
    return false;
  }
}

/** A request for a page (GraphiQL), as Yoga tells one: a GET that accepts HTML. */
export function isPageRequest(request: Request): boolean {
  return request.method === 'GET' && (request.headers.get('accept') ?? '').includes('text/html');
}

/**
 * Yoga's `cors` setting: for an allowed origin the options that reflect it (with `Vary:
 * Origin`), for anything else false (no CORS headers: the browser shares nothing).
 */
export function corsSetting(origins: CorsOrigins | null) {
  if (origins === null) return false as const;
  const allowed = origins === '*' ? null : new Set(origins);
  return (request: Request) => {
    const origin = request.headers.get('origin');
    if (origin === null || isPageRequest(request) || (allowed !== null && !allowed.has(origin))) return false as const;
    return {
      // Checked above: Yoga reflects the request's origin and adds Vary: Origin.
      origin: ['*'],
      credentials: allowed !== null,
      methods: ['GET', 'POST', 'DELETE'],
      allowedHeaders: ALLOWED_HEADERS,
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    };
  };
}

/** Removes any CORS header from a page's response: the GraphiQL page is never shared cross-origin. */
export function withoutCorsHeaders(response: Response): void {
  for (const name of [...response.headers.keys()]) if (name.startsWith('access-control-')) response.headers.delete(name);
}
