import { createHash } from 'node:crypto';
import type { GraphiQLOptions, Plugin } from 'graphql-yoga';

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

/** Serves the GraphiQL bundle under /graphiql/<version>/<file>. */
export function useGraphiQLAssets(): Plugin {
  return {
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
