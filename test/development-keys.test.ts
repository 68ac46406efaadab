import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { developmentKeyFile } from '../src/startup.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';
import { startServerProcess, type ServerProcess } from './support/process.js';

/**
 * One development key file per database: a developer who tries PostgreSQL once with the
 * same data dir keeps the embedded database's key (GraphiQL pre-filled, the README's curl),
 * and the server says at startup which file belongs to the database it opened.
 */

const running: ServerProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

afterAll(async () => {
  for (const server of running.splice(0)) if (server.child.exitCode === null) server.child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function started(env: Record<string, string>): Promise<{ server: ServerProcess; url: string }> {
  const server = startServerProcess(env);
  running.push(server);
  return { server, url: await server.ready };
}

async function stopped(server: ServerProcess): Promise<void> {
  server.child.kill('SIGTERM');
  expect(await server.exited).toBe(0);
}

/**
 * GraphiQL's page as a browser's navigation (or curl) gets it: with node:http, since
 * fetch() sends `Sec-Fetch-Mode: cors`, which a script's request has and a navigation not.
 */
function graphiqlPage(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { accept: 'text/html', 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => (response.statusCode === 200 ? resolve(text) : reject(new Error(`GraphiQL answered ${response.statusCode}`))));
      })
      .on('error', reject);
  });
}

/** The Authorization header GraphiQL's page pre-fills, if any. */
async function prefilledKey(url: string): Promise<string | null> {
  return /Bearer (msk_[A-Za-z0-9]{40})/.exec(await graphiqlPage(url))?.[1] ?? null;
}

/** What `curl -H "Authorization: Bearer $(cat <file>)"` gets. */
async function storeCount(url: string, token: string): Promise<{ status: number; count: number | undefined }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }),
  });
  const body = (await response.json()) as { data?: { memoryStores: { totalCount: number } } };
  return { status: response.status, count: body.data?.memoryStores.totalCount };
}

const readKey = (file: string) => fs.readFileSync(file, 'utf8').trim();

describe.runIf(postgresUrl)('development keys, one file per database', { timeout: 180_000 }, () => {
  it('PGlite, then PostgreSQL, then PGlite again on one data dir: the first key still works in GraphiQL and with curl', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-keys-'));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const scratch = await createScratchPostgresDatabase();
    cleanups.push(() => scratch.drop());
    const pgliteFile = path.join(dataDir, 'dev-api-key');
    const postgresFile = path.join(dataDir, `dev-api-key.postgres-127.0.0.1-5432-${scratch.name}`);
    expect(developmentKeyFile({ dataDir, databaseUrl: scratch.url })).toBe(postgresFile);

    // 1. PGlite: a key is made and saved in dev-api-key.
    const first = await started({ MEMSTORE_DATA_DIR: dataDir });
    const pgliteKey = readKey(pgliteFile);
    expect(first.server.stdout()).toContain(`The development key of the PGlite in ${path.join(dataDir, 'pglite')} is in ${pgliteFile}.`);
    expect(await prefilledKey(first.url)).toBe(pgliteKey);
    expect((await storeCount(first.url, pgliteKey)).status).toBe(200);
    await stopped(first.server);

    // 2. PostgreSQL with the same data dir: its own key, in its own file; PGlite's is untouched.
    const second = await started({ MEMSTORE_DATA_DIR: dataDir, DATABASE_URL: scratch.url });
    const postgresKey = readKey(postgresFile);
    expect(postgresKey).not.toBe(pgliteKey);
    expect(readKey(pgliteFile)).toBe(pgliteKey);
    expect(second.server.stdout()).toContain(`It is saved in ${postgresFile}.`);
    expect(second.server.stdout()).toContain(`The development key of the PostgreSQL database ${scratch.name} on 127.0.0.1:5432 is in ${postgresFile}.`);
    expect(await prefilledKey(second.url)).toBe(postgresKey);
    expect(await storeCount(second.url, postgresKey)).toEqual({ status: 200, count: 0 });
    expect((await storeCount(second.url, pgliteKey)).status).toBe(401);
    const sql = postgres(scratch.url, { max: 1, onnotice: () => {} });
    try {
      const keys = await sql`select workspace_id, kind from api_keys`;
      expect(keys.map((key) => ({ ...key }))).toEqual([{ workspace_id: 'default', kind: 'admin' }]);
    } finally {
      await sql.end();
    }
    await stopped(second.server);

    // 3. PGlite again: GraphiQL is pre-filled with the first key, and curl with the file works.
    const third = await started({ MEMSTORE_DATA_DIR: dataDir });
    expect(third.server.stdout()).not.toMatch(/Created workspace|Warning/);
    expect(third.server.stdout()).toContain(`is in ${pgliteFile}.`);
    expect(await prefilledKey(third.url)).toBe(pgliteKey);
    expect(await storeCount(third.url, readKey(pgliteFile))).toEqual({ status: 200, count: 0 });
    await stopped(third.server);
    expect(fs.readdirSync(dataDir).filter((name) => name.startsWith('dev-api-key')).sort()).toEqual([path.basename(pgliteFile), path.basename(postgresFile)]);
  });

  it('warns at startup when the saved key of the opened database does not authenticate, and GraphiQL opens without it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-keys-'));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const scratch = await createScratchPostgresDatabase();
    cleanups.push(() => scratch.drop());
    const env = { MEMSTORE_DATA_DIR: dataDir, DATABASE_URL: scratch.url };
    const file = developmentKeyFile({ dataDir, databaseUrl: scratch.url })!;

    await stopped((await started(env)).server);
    const stale = `msk_${'q'.repeat(40)}`;
    fs.writeFileSync(file, `${stale}\n`);

    const again = await started(env);
    const stdout = again.server.stdout();
    expect(stdout).toContain(`Warning: the key saved in ${file} does not authenticate against the PostgreSQL database ${scratch.name} on 127.0.0.1:5432; GraphiQL opens without it.`);
    const warning = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((entry) => entry.level === 'warn');
    expect(warning).toMatchObject({ msg: expect.stringContaining('does not authenticate'), file });
    expect(await graphiqlPage(again.url)).toContain('renderYogaGraphiQL');
    expect(await prefilledKey(again.url)).toBeNull();
    // The file is left as it was: the server never overwrites a key file of a database that has keys.
    expect(readKey(file)).toBe(stale);
    await stopped(again.server);
  });
});
