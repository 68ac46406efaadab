import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DatabaseHandle } from '../src/db/client.js';
import { apiKeys } from '../src/db/schema.js';
import { authenticate } from '../src/domain/api-keys.js';
import { createLogger, silentLogger } from '../src/logger.js';
import { ensureApiKeys, readDevelopmentKey } from '../src/startup.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';

/** Startup works on an empty database, so this file has its own (not the worker's shared one). */
let database: DatabaseHandle;
let dropScratch: (() => Promise<void>) | undefined;
const dataDirs: string[] = [];

beforeAll(async () => {
  if (postgresUrl) {
    const scratch = await createScratchPostgresDatabase();
    dropScratch = scratch.drop;
    database = await createDb({ databaseUrl: scratch.url, dataDir: 'memory://' });
  } else {
    database = await createDb({ databaseUrl: undefined, dataDir: 'memory://' });
  }
});

afterAll(async () => {
  await database.close();
  await dropScratch?.();
  for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-startup-'));
  dataDirs.push(dir);
  return dir;
}

const token = (letter: string) => `msk_${letter.repeat(40)}`;

describe('API keys at startup', () => {
  // The order matters: the first test needs the database without any key.
  it('creates workspace "default" with one ADMIN key on an empty database and saves it for GraphiQL', async () => {
    const dir = dataDir();
    await ensureApiKeys(database.db, { bootstrapKeys: undefined, dataDir: dir }, silentLogger);
    const saved = fs.readFileSync(path.join(dir, 'dev-api-key'), 'utf8').trim();
    expect(saved).toMatch(/^msk_[A-Za-z0-9]{40}$/);
    expect(fs.statSync(path.join(dir, 'dev-api-key')).mode & 0o777).toBe(0o600);
    expect(await authenticate(database.db, saved)).toMatchObject({ workspaceId: 'default', kind: 'admin' });
    expect(await readDevelopmentKey(database.db, { bootstrapKeys: undefined, dataDir: dir })).toBe(saved);

    // Once any key exists, no other development key is made.
    await ensureApiKeys(database.db, { bootstrapKeys: undefined, dataDir: dataDir() }, silentLogger);
    expect(await database.db.select().from(apiKeys)).toHaveLength(1);
  });

  it('stores only the SHA-256 of a token', async () => {
    const rows = await database.db.select().from(apiKeys);
    for (const row of rows) {
      expect(row.tokenSha256).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(row)).not.toMatch(/msk_/);
    }
  });

  it('ensures MEMSTORE_BOOTSTRAP_KEYS idempotently, one ADMIN key per entry', async () => {
    const bootstrapKeys = [
      { workspaceId: 'alpha', token: token('a') },
      { workspaceId: 'beta', token: token('b') },
      { workspaceId: 'alpha', token: token('c') },
    ];
    const dir = dataDir();
    await ensureApiKeys(database.db, { bootstrapKeys, dataDir: dir }, silentLogger);
    await ensureApiKeys(database.db, { bootstrapKeys, dataDir: dir }, silentLogger);
    expect(await authenticate(database.db, token('a'))).toMatchObject({ workspaceId: 'alpha', kind: 'admin' });
    expect(await authenticate(database.db, token('b'))).toMatchObject({ workspaceId: 'beta', kind: 'admin' });
    expect(await authenticate(database.db, token('c'))).toMatchObject({ workspaceId: 'alpha', kind: 'admin' });
    expect(await database.db.select().from(apiKeys)).toHaveLength(4);
    expect(fs.existsSync(path.join(dir, 'dev-api-key'))).toBe(false);
  });

  it('skips, with a warning, a bootstrap token that already belongs to another workspace: the other entries are ensured and nothing moves', async () => {
    const lines: string[] = [];
    const logger = createLogger('warn', (line) => lines.push(line));
    await ensureApiKeys(database.db, { bootstrapKeys: [{ workspaceId: 'gamma', token: token('a') }, { workspaceId: 'delta', token: token('d') }], dataDir: dataDir() }, logger);
    expect(await authenticate(database.db, token('a'))).toMatchObject({ workspaceId: 'alpha' });
    expect(await authenticate(database.db, token('d'))).toMatchObject({ workspaceId: 'delta', kind: 'admin' });
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'bootstrap key skipped: it belongs to another workspace', workspaceId: 'gamma' }),
    ]);
    expect(lines.join('')).not.toContain(token('a'));
  });

  it('does not pre-fill GraphiQL with a saved key that no longer works', async () => {
    const dir = dataDir();
    fs.writeFileSync(path.join(dir, 'dev-api-key'), `${token('z')}\n`);
    expect(await readDevelopmentKey(database.db, { bootstrapKeys: undefined, dataDir: dir })).toBeNull();
  });
});

describe('bootstrap keys that were revoked', () => {
  it('stay revoked, and the start goes on for every other workspace with a warning that names theirs', async () => {
    const revoked = token('r');
    await ensureApiKeys(database.db, { bootstrapKeys: [{ workspaceId: 'revoked-ws', token: revoked }], dataDir: dataDir() }, silentLogger);
    await database.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.workspaceId, 'revoked-ws'));
    const lines: string[] = [];
    const bootstrapKeys = [{ workspaceId: 'revoked-ws', token: revoked }, { workspaceId: 'still-fine', token: token('f') }];
    await ensureApiKeys(database.db, { bootstrapKeys, dataDir: dataDir() }, createLogger('warn', (line) => lines.push(line)));
    expect(await authenticate(database.db, revoked)).toBeNull();
    expect(await authenticate(database.db, token('f'))).toMatchObject({ workspaceId: 'still-fine', kind: 'admin' });
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'bootstrap key skipped: it has been revoked; remove it from MEMSTORE_BOOTSTRAP_KEYS', workspaceId: 'revoked-ws' }),
    ]);
  });
});
