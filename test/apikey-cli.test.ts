import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI against PostgreSQL (a URL) or a PGlite data dir ({ dataDir }). */
function runCli(database: string | { dataDir: string }, ...args: string[]): Promise<CliResult> {
  return run([process.execPath, '--import', 'tsx', 'src/apikey-cli.ts', ...args], database);
}

function run([program, ...args]: string[], database: string | { dataDir: string }): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(program!, args, {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        LOG_LEVEL: 'silent',
        npm_config_update_notifier: 'false',
        ...(typeof database === 'string' ? { DATABASE_URL: database } : { MEMSTORE_DATA_DIR: database.dataDir }),
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.runIf(postgresUrl)('npm run apikey (against PostgreSQL)', { timeout: 120_000 }, () => {
  let scratch: Awaited<ReturnType<typeof createScratchPostgresDatabase>>;
  beforeAll(async () => {
    scratch = await createScratchPostgresDatabase();
  });
  afterAll(async () => {
    await scratch?.drop();
  });

  it('creates ADMIN and IDENTITY keys, lists them without secrets, and revokes one', async () => {
    const admin = await runCli(scratch.url, 'create', '--workspace', 'acme', '--name', 'ci bot');
    expect(admin.code).toBe(0);
    const token = /msk_[A-Za-z0-9]{40}/.exec(admin.stdout)?.[0];
    expect(token).toBeDefined();
    const identity = await runCli(scratch.url, 'create', '--workspace', 'acme', '--name', 'agent', '--identity', 'idn_42');
    expect(identity.code).toBe(0);
    const identityKeyId = /key_[0-9a-z]{20}/.exec(identity.stdout)?.[0];

    const listed = await runCli(scratch.url, 'list', '--workspace', 'acme');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/admin .* active .*ci bot/);
    expect(listed.stdout).toMatch(/identity .*idn_42 .* active .*agent/);
    expect(listed.stdout).not.toContain('msk_');

    const revoked = await runCli(scratch.url, 'revoke', '--workspace', 'acme', '--id', identityKeyId!);
    expect(revoked.code).toBe(0);
    expect((await runCli(scratch.url, 'list', '--workspace', 'acme')).stdout).toMatch(/identity .*revoked/);
  });

  it('refuses bad input with a message and a non-zero exit', async () => {
    const missingName = await runCli(scratch.url, 'create', '--workspace', 'acme');
    expect(missingName.code).toBe(1);
    expect(missingName.stderr).toMatch(/--name/);
    const badIdentity = await runCli(scratch.url, 'create', '--workspace', 'acme', '--name', 'x', '--identity', 'user-1');
    expect(badIdentity.code).toBe(1);
    expect(badIdentity.stderr).toMatch(/identityId: must be "idn_"/);
    const unknown = await runCli(scratch.url, 'revoke', '--workspace', 'acme', '--id', 'key_00000000000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No API key/);
  });
});

/** A stack trace line, which an operator should never see for a mistake of theirs. */
const STACK_LINE = /^\s+at /m;

describe('npm run apikey: usage and mistakes', { timeout: 120_000 }, () => {
  const nowhere = { dataDir: path.join(os.tmpdir(), 'memstore-apikey-never-opened') };

  it('npm run apikey -- --help prints the usage on stdout and exits 0, without opening a database', async () => {
    const result = await run(['npm', 'run', '--silent', 'apikey', '--', '--help'], nowhere);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^Usage: npm run apikey -- <command> \[options\]/);
    for (const command of ['create --workspace', 'list   --workspace', 'revoke --workspace', 'help, --help, -h']) expect(result.stdout).toContain(command);
    expect(fs.existsSync(nowhere.dataDir)).toBe(false);
    expect((await runCli(nowhere, '-h')).stdout).toBe(result.stdout);
    expect((await runCli(nowhere, 'help')).stdout).toBe(result.stdout);
  });

  it('refuses an unknown option, an unknown command and a missing argument with a message and the usage, exit 1, no stack', async () => {
    const cases: [string[], RegExp][] = [
      [['list', '--workspace', 'acme', '--bogus'], /^Unknown option '--bogus'/],
      [['rotate', '--workspace', 'acme'], /^Unknown command "rotate"\./],
      [['list', 'acme'], /^Unexpected argument "acme"\./],
      [['list'], /^--workspace must be /],
      [['create', '--workspace', 'acme'], /^create needs --name/],
      [['revoke', '--workspace', 'acme'], /^revoke needs --id/],
      [[], /^Usage: /],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(nowhere, ...args);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).toContain('Usage: npm run apikey');
      expect(result.stderr).not.toMatch(STACK_LINE);
      expect(result.stdout).toBe('');
    }
    expect(fs.existsSync(nowhere.dataDir)).toBe(false);
  });

  it('says a connection refused in one line, without a stack', async () => {
    const result = await runCli('postgres://postgres@127.0.0.1:1/memstore', 'list', '--workspace', 'acme');
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe('Cannot connect to PostgreSQL on 127.0.0.1:1: connection refused. Is PostgreSQL running and listening there? Check the host and port of DATABASE_URL.');
  });
});

describe(`npm run apikey: an unknown workspace (${postgresUrl ? 'PostgreSQL' : 'PGlite'})`, { timeout: 180_000 }, () => {
  let database: string | { dataDir: string };
  let workspaceIds: () => Promise<string[]>;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    if (postgresUrl) {
      const scratch = await createScratchPostgresDatabase();
      cleanups.push(() => scratch.drop());
      database = scratch.url;
      workspaceIds = async () => {
        const sql = postgres(scratch.url, { max: 1, onnotice: () => {} });
        try {
          return (await sql`select id from workspaces order by id`).map((row) => row.id as string);
        } finally {
          await sql.end();
        }
      };
    } else {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-apikey-'));
      cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
      database = { dataDir };
      // The CLI's own list is the reader here: PGlite's data dir is this file's to open only between runs.
      workspaceIds = async () => {
        const { createDb } = await import('../src/db/client.js');
        const handle = await createDb({ databaseUrl: undefined, dataDir });
        try {
          const { workspaces } = await import('../src/db/schema.js');
          return (await handle.db.select({ id: workspaces.id }).from(workspaces).orderBy(workspaces.id)).map((row) => row.id);
        } finally {
          await handle.close();
        }
      };
    }
  });
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('list and revoke in a workspace that does not exist fail with a clear error and create nothing', async () => {
    for (const args of [['list', '--workspace', 'acme-typo'], ['revoke', '--workspace', 'acme-typo', '--id', 'key_00000000000000000000']]) {
      const result = await runCli(database, ...args);
      expect(result.code, args.join(' ')).toBe(1);
      expect(result.stderr.trim()).toBe('No workspace "acme-typo" in this database. Workspaces are made by create: npm run apikey -- create --workspace acme-typo --name <name>');
      expect(result.stdout).toBe('');
    }
    expect(await workspaceIds()).toEqual([]);
  });

  it('a refused create leaves no new workspace behind; a good one makes the workspace and says so', async () => {
    const refused = await runCli(database, 'create', '--workspace', 'fresh', '--name', 'agent', '--identity', 'user-1');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/identityId: must be "idn_"/);
    expect(await workspaceIds()).toEqual([]);

    const created = await runCli(database, 'create', '--workspace', 'fresh', '--name', 'ci bot');
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Created workspace fresh\.\nCreated ADMIN key key_[0-9a-z]{20} in workspace fresh\./);
    const second = await runCli(database, 'create', '--workspace', 'fresh', '--name', 'second');
    expect(second.stdout).toMatch(/^Created ADMIN key/);
    expect(await workspaceIds()).toEqual(['fresh']);
    const listed = await runCli(database, 'list', '--workspace', 'fresh');
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(2);
  });
});
