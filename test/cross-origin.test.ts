import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { askAgain } from './support/ask-again.js';
import { useTestServer } from './support/server.js';

/**
 * Other web origins get nothing a browser would hand them: no CORS headers at all (none is
 * configured), and the GraphiQL page holds the development key only when it is opened by
 * a navigation of this very origin (or typed into the address bar) on a loopback address.
 */

const server = useTestServer();
const DEVELOPMENT_KEY = 'msk_0123456789abcdefghijABCDEFGHIJ0123456789';
const PAGE_URL = 'http://localhost:4000/graphql';

function developmentApp() {
  return createApp({ config: { nodeEnv: 'development', graphiql: true }, database: server.database.handle, developmentKey: DEVELOPMENT_KEY });
}

async function openPage(headers: Record<string, string>, url = PAGE_URL) {
  const response = await developmentApp().fetch(url, { headers: { accept: 'text/html', ...headers } });
  return { response, html: await response.text() };
}

const CORS_HEADERS = ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-allow-methods', 'access-control-allow-headers'];

describe('requests from other web origins', () => {
  it('a query sent from another origin gets an answer without any CORS header, so the browser hands the page nothing', async () => {
    const client = await server.newWorkspace();
    const response = await server.app.fetch('http://localhost:4000/graphql', {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json', authorization: `Bearer ${client.token}` },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(response.status).toBe(200);
    for (const header of CORS_HEADERS) expect(response.headers.get(header), header).toBeNull();
  });

  it('a preflight from another origin is not granted', async () => {
    const response = await server.app.fetch('http://localhost:4000/graphql', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    for (const header of CORS_HEADERS) expect(response.headers.get(header), header).toBeNull();
  });

  it('the GraphiQL page opened from another site, another port of this site, or by a script holds no key and no CORS header', async () => {
    for (const headers of [
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' },
      { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate' },
      { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' },
    ] as Record<string, string>[]) {
      const { response, html } = await openPage(headers);
      expect(response.status, JSON.stringify(headers)).toBe(200);
      expect(html, JSON.stringify(headers)).toContain('YogaGraphiQL');
      expect(html, JSON.stringify(headers)).not.toContain(DEVELOPMENT_KEY);
      for (const header of CORS_HEADERS) expect(response.headers.get(header), header).toBeNull();
    }
  });

  it('the GraphiQL page reached through a name that is not a loopback address (DNS rebinding) holds no key', async () => {
    const { html } = await openPage({ 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' }, 'http://attacker.example:4000/graphql');
    expect(html).toContain('YogaGraphiQL');
    expect(html).not.toContain(DEVELOPMENT_KEY);
  });

  it('the GraphiQL page typed into the address bar, or opened from this origin, on a loopback address holds the key, and may not be framed, cached or read by other origins', async () => {
    for (const [headers, url] of [
      [{ 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }, PAGE_URL],
      [{ 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' }, 'http://127.0.0.1:4000/graphql'],
      // A client that sends no fetch metadata at all (curl, an old browser): the host check still applies.
      [{}, 'http://[::1]:4000/graphql'],
    ] as const) {
      const { response, html } = await openPage(headers, url);
      expect(html, url).toContain(`Bearer ${DEVELOPMENT_KEY}`);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(response.headers.get('cross-origin-resource-policy')).toBe('same-origin');
      expect(response.headers.get('cross-origin-opener-policy')).toBe('same-origin');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
      expect(response.headers.get('vary')?.toLowerCase()).toContain('sec-fetch-site');
      for (const header of CORS_HEADERS) expect(response.headers.get(header), header).toBeNull();
    }
  });

  it('the GraphiQL page never holds a key in production', async () => {
    const app = createApp({ config: { nodeEnv: 'production', graphiql: true }, database: server.database.handle, developmentKey: DEVELOPMENT_KEY });
    const response = await app.fetch(PAGE_URL, { headers: { accept: 'text/html', 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' } });
    expect(await response.text()).not.toContain(DEVELOPMENT_KEY);
  });
});

describe('MEMSTORE_CORS_ORIGINS', () => {
  const DASHBOARD = 'https://dashboard.example.com';

  function corsApp(corsOrigins: readonly string[] | '*', leanPath = true) {
    return createApp({
      config: { nodeEnv: 'development', graphiql: true, corsOrigins, rateLimit: { perSecond: 10, burst: 10 } },
      database: server.database.handle,
      developmentKey: DEVELOPMENT_KEY,
      leanPath,
    });
  }

  async function query(app: ReturnType<typeof createApp>, origin: string, token: string) {
    return app.fetch('http://localhost:4000/graphql', {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }),
    });
  }

  it.each([true, false])('lets a listed origin read answers and the headers it needs (lean path: %s)', async (leanPath) => {
    const client = await server.newWorkspace();
    const response = await query(corsApp([DASHBOARD, 'http://localhost:5173'], leanPath), DASHBOARD, client.token!);
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(response.headers.get('access-control-allow-credentials')).toBe('true');
    expect(response.headers.get('vary')).toMatch(/Origin/);
    const exposed = response.headers.get('access-control-expose-headers')!.split(', ');
    expect(exposed).toEqual(expect.arrayContaining(['x-request-id', 'ratelimit-remaining', 'retry-after']));
    expect(((await response.json()) as { data: unknown }).data).toEqual({ memoryStores: { totalCount: 0 } });
  });

  it('varies a tagged answer and its 304 by Origin, and still by Authorization and Accept', async () => {
    const client = await server.newWorkspace();
    const app = corsApp([DASHBOARD]);
    // The tag is withheld for an instant while the workspace's change mark is unsettled.
    const tagged = await askAgain(() => query(app, DASHBOARD, client.token!), (response) => response.headers.get('etag') === null);
    expect([tagged.status, tagged.headers.get('vary')]).toEqual([200, 'Origin, Authorization, Accept']);
    const unchanged = await app.fetch('http://localhost:4000/graphql', {
      method: 'POST',
      headers: { origin: DASHBOARD, 'content-type': 'application/json', authorization: `Bearer ${client.token}`, 'if-none-match': tagged.headers.get('etag')! },
      body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }),
    });
    expect([unchanged.status, unchanged.headers.get('vary'), unchanged.headers.get('access-control-allow-origin')]).toEqual([304, 'Origin, Authorization, Accept', DASHBOARD]);
  });

  it('gives an origin not on the list no CORS header at all', async () => {
    const client = await server.newWorkspace();
    const response = await query(corsApp([DASHBOARD]), 'https://evil.example', client.token!);
    expect(response.status).toBe(200);
    for (const header of CORS_HEADERS) expect(response.headers.get(header), header).toBeNull();
  });

  it('grants the preflight of a listed origin only', async () => {
    const app = corsApp([DASHBOARD]);
    const preflight = (origin: string) =>
      app.fetch('http://localhost:4000/graphql', {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
    const granted = await preflight(DASHBOARD);
    expect(granted.status).toBe(204);
    expect(granted.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(granted.headers.get('access-control-allow-methods')).toContain('POST');
    expect(granted.headers.get('access-control-allow-headers')!.split(', ')).toEqual(expect.arrayContaining(['authorization', 'content-type']));
    expect(granted.headers.get('access-control-max-age')).toBe('600');
    const refused = await preflight('https://evil.example');
    for (const header of CORS_HEADERS) expect(refused.headers.get(header), header).toBeNull();
  });

  it('with *, lets any origin read answers, without credentials', async () => {
    const client = await server.newWorkspace();
    const response = await query(corsApp('*'), 'https://anyone.example', client.token!);
    expect(response.headers.get('access-control-allow-origin')).toBe('https://anyone.example');
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('never makes the GraphiQL page readable by another origin, even with * or the origin listed', async () => {
    for (const app of [corsApp('*'), corsApp(['https://evil.example'])]) {
      const response = await app.fetch(PAGE_URL, { headers: { accept: 'text/html', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' } });
      const html = await response.text();
      expect(html).not.toContain(DEVELOPMENT_KEY);
      for (const header of CORS_HEADERS) expect(response.headers.get(header), header).toBeNull();
    }
  });
});
