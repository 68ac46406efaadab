import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function runCli(databaseUrl: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/apikey-cli.ts', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
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
