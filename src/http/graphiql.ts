import { createHash } from 'node:crypto';
import type { GraphiQLOptions, Plugin } from 'graphql-yoga';
import { withoutCorsHeaders } from './cors.js';

/**
 * GraphiQL served entirely by this server: Yoga's default page loads its scripts from a
 * CDN, which fails on machines without internet access. The page itself is a few hundred
 * bytes; the bundle (from @graphql-yoga/render-graphiql, about 9 MB) is served once per
 * version under a content-addressed path that browsers may cache for good. It is loaded
 * on the first request for the page, not at startup.
 */
const ASSET_ROOT = '/graphiql/';

interface Asset {
  body: string;
  contentType: string;
}

interface Assets {
  version: string;
  files: Map<string, Asset>;
  favicon: string;
}

let loading: Promise<Assets> | undefined;

function loadAssets(): Promise<Assets> {
  loading ??= import('@graphql-yoga/render-graphiql/graphiql').then((bundle) => {
    const files = new Map<string, Asset>([
      ['yoga-graphiql.js', { body: bundle.js, contentType: 'text/javascript; charset=utf-8' }],
      ['graphiql.css', { body: bundle.css, contentType: 'text/css; charset=utf-8' }],
      ['editor.worker.js', { body: bundle.editorWorkerService, contentType: 'text/javascript; charset=utf-8' }],
      ['json.worker.js', { body: bundle.jsonWorker, contentType: 'text/javascript; charset=utf-8' }],
      ['graphql.worker.js', { body: bundle.graphqlWorker, contentType: 'text/javascript; charset=utf-8' }],
    ]);
    const hash = createHash('sha256');
    for (const file of files.values()) hash.update(file.body);
    return { version: hash.digest('hex').slice(0, 16), files, favicon: bundle.favicon };
  });
  return loading;
}

/** JSON for an inline <script>: `<` escaped so that no value can close the script element. */
function inlineJson(value: unknown): string {
  return JSON.stringify(value ?? {}).replace(/</g, '\\u003c');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

export async function renderGraphiQL(options?: GraphiQLOptions): Promise<string> {
  const assets = await loadAssets();
  const base = `${ASSET_ROOT}${assets.version}/`;
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(options?.title ?? 'GraphiQL')}</title>
    <link rel="icon" href="${escapeHtml(assets.favicon)}" />
    <link rel="stylesheet" href="${base}graphiql.css" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>You need to enable JavaScript to run GraphiQL.</noscript>
    <div id="root"></div>
    <script>
      const workerUrls = {
        editorWorkerService: '${base}editor.worker.js',
        json: '${base}json.worker.js',
        graphql: '${base}graphql.worker.js',
      };
      self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_moduleId, label) => workerUrls[label] };
    </script>
    <script src="${base}yoga-graphiql.js"></script>
    <script>
      YogaGraphiQL.renderYogaGraphiQL(document.querySelector('#root'), ${inlineJson(options)});
    </script>
  </body>
</html>`;
}

/** Host names of this machine only: a page reached through any other name may be another site's (DNS rebinding). */
const LOOPBACK_HOST = /^(?:localhost|[a-z0-9-]+\.localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Whether the GraphiQL page may carry the development key for this request: a navigation
 * of this very origin, or one typed into the address bar (Sec-Fetch-Site same-origin or
 * none; a client sending no fetch metadata, such as curl, counts as that), on a loopback
 * host name. Another site, another port of this site (same-site), a script's fetch, or a
 * host name that is not this machine's gets the page without it. Browsers read nothing of
 * the page for other origins anyway (no CORS headers); this keeps the key out of it too.
 */
export function mayHoldDevelopmentKey(request: Request): boolean {
  const site = request.headers.get('sec-fetch-site');
  const mode = request.headers.get('sec-fetch-mode');
  return (
    LOOPBACK_HOST.test(new URL(request.url).hostname) &&
    (site === null || site === 'same-origin' || site === 'none') &&
    (mode === null || mode === 'navigate')
  );
}

/** What the GraphiQL page is sent with: never cached, framed or read by another origin. */
const PAGE_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  vary: 'Sec-Fetch-Site, Sec-Fetch-Mode, Host',
};

/** Serves the GraphiQL bundle under /graphiql/<version>/<file>, and sends the page with PAGE_HEADERS. */
export function useGraphiQLAssets(): Plugin {
  return {
    onResponse({ request, response }) {
      if (request.method !== 'GET' || !(response.headers.get('content-type') ?? '').startsWith('text/html')) return;
      for (const [name, value] of Object.entries(PAGE_HEADERS)) response.headers.set(name, value);
      withoutCorsHeaders(response);
    },
    async onRequest({ url, endResponse, fetchAPI }) {
      if (!url.pathname.startsWith(ASSET_ROOT)) return;
      const [version, name] = url.pathname.slice(ASSET_ROOT.length).split('/');
      const assets = await loadAssets();
      const asset = version === assets.version && name !== undefined ? assets.files.get(name) : undefined;
      endResponse(
        asset
          ? new fetchAPI.Response(asset.body, {
              headers: { 'content-type': asset.contentType, 'cache-control': 'public, max-age=31536000, immutable' },
            })
          : new fetchAPI.Response('Not found', { status: 404 }),
      );
    },
  };
}

const FIRST_QUERY = `# Welcome to memstore. The Authorization header below holds your development key.
mutation CreateStore {
  createMemoryStore(input: { name: "project-alpha-memory", description: "Agent knowledge base", metadata: { team: "backend" } }) {
    __typename
    ... on CreateMemoryStoreSuccess { memoryStore { id name status metadata createdAt } }
    ... on Error { code message }
    ... on InvalidRequestError { issues { field message } }
  }
}

query Stores {
  memoryStores(first: 10) {
    totalCount
    edges { node { id name status entryCount totalSize createdAt } }
  }
}
`;

/**
 * Yoga's GraphiQL setting: off, or the page with a first query to run and — outside
 * production, for a navigation that may hold it — the development key pre-filled.
 */
export function graphiqlSetting(enabled: boolean, developmentKey: string | null | undefined, production: boolean) {
  if (!enabled) return false as const;
  return (request: Request) => ({
    title: 'memstore',
    defaultQuery: FIRST_QUERY,
    headers:
      developmentKey && !production && mayHoldDevelopmentKey(request) ? JSON.stringify({ Authorization: `Bearer ${developmentKey}` }, null, 2) : undefined,
  });
}
