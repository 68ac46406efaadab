import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from './support/process.js';

/**
 * A real browser (Chromium, when the machine has it) on a page of another site tries to take
 * over a development server: to read its GraphiQL page (which holds the development key for
 * its own origin), to query it, and to frame it. It gets nothing; the same page opened from
 * the address bar does have the key.
 */

const CHROMIUM = '/usr/bin/chromium';

describe.skipIf(!fs.existsSync(CHROMIUM))('a page of another site in a real browser', { timeout: 90_000 }, () => {
  let server: ServerProcess;
  let dataDir: string;
  let target: string;
  let attacker: http.Server;
  let attackerOrigin: string;
  let browser: Browser;
  let developmentKey: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-browser-'));
    server = startServerProcess({ MEMSTORE_DATA_DIR: dataDir, HOST: '127.0.0.1' });
    const url = new URL(await server.ready);
    target = `http://127.0.0.1:${url.port}`;
    developmentKey = fs.readFileSync(path.join(dataDir, 'dev-api-key'), 'utf8').trim();
    // The other site: localhost is another site than 127.0.0.1 to a browser.
    attacker = http.createServer((_request, response) => {
      response.setHeader('content-type', 'text/html');
      response.end('<!doctype html><title>attacker</title><body></body>');
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    attackerOrigin = `http://localhost:${(attacker.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => attacker?.close(resolve));
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('cannot read the GraphiQL page, query the API, or frame the page; opened from the address bar, the page has the key', async () => {
    const page = await browser.newPage();
    await page.goto(`${attackerOrigin}/`);
    const attempts = await page.evaluate(async ({ target, key }) => {
      const outcome = async (attempt: () => Promise<string>) => {
        try {
          return await attempt();
        } catch (error) {
          return `refused: ${(error as Error).name}`;
        }
      };
      return {
        readPage: await outcome(async () => {
          const response = await fetch(`${target}/graphql`, { headers: { accept: 'text/html' } });
          return (await response.text()).includes('msk_') ? 'read the key' : 'read the page';
        }),
        readPageWithCredentials: await outcome(async () => {
          const response = await fetch(`${target}/graphql`, { headers: { accept: 'text/html' }, credentials: 'include' });
          return (await response.text()).includes('msk_') ? 'read the key' : 'read the page';
        }),
        opaquePage: await outcome(async () => {
          const response = await fetch(`${target}/graphql`, { mode: 'no-cors' });
          return `${response.type} ${(await response.text()).length}`;
        }),
        query: await outcome(async () => {
          const response = await fetch(`${target}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
            body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }),
          });
          return `read ${response.status}`;
        }),
        formPost: await outcome(async () => {
          const response = await fetch(`${target}/graphql`, {
            method: 'POST',
            mode: 'no-cors',
            headers: { 'content-type': 'text/plain' },
            body: JSON.stringify({ query: 'mutation { createMemoryStore(input: { name: "forged" }) { __typename } }' }),
          });
          return response.type;
        }),
        frame: await new Promise<string>((resolve) => {
          const frame = document.createElement('iframe');
          frame.src = `${target}/graphql`;
          frame.onload = () => {
            try {
              resolve(frame.contentDocument?.body?.innerHTML.includes('msk_') ? 'read the key' : 'framed, unreadable');
            } catch {
              resolve('framed, unreadable');
            }
          };
          document.body.appendChild(frame);
          setTimeout(() => resolve('no load'), 5_000);
        }),
      };
    }, { target, key: developmentKey });

    expect(attempts.readPage).toBe('refused: TypeError');
    expect(attempts.readPageWithCredentials).toBe('refused: TypeError');
    expect(attempts.opaquePage).toBe('opaque 0');
    // The key itself is what the attacker lacks; even with it, the browser refuses the answer.
    expect(attempts.query).toBe('refused: TypeError');
    expect(attempts.formPost).toBe('opaque');
    expect(attempts.frame).not.toBe('read the key');
    // Nothing was written by the forged form post (415) or the query.
    const stores = await fetch(`${target}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${developmentKey}` },
      body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }),
    });
    expect(((await stores.json()) as { data: unknown }).data).toEqual({ memoryStores: { totalCount: 0 } });
    const frameResponse = (await page.frames()).find((frame) => frame.url().startsWith(target));
    if (frameResponse) expect(await frameResponse.content().catch(() => '')).not.toContain(developmentKey);

    // The same page, typed into the address bar: GraphiQL with the key in its headers.
    const own = await browser.newPage();
    const response = await own.goto(`${target}/graphql`);
    expect(await response!.text()).toContain(`Bearer ${developmentKey}`);
    await own.close();
    await page.close();
  });
});
