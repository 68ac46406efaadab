/**
 * API keys for operators: `npm run apikey -- <command>` against the configured database
 * (DATABASE_URL, or the PGlite data dir when no server holds it).
 *
 *   create --workspace <id> --name <name> [--identity idn_…]   prints the token once
 *   list   --workspace <id>
 *   revoke --workspace <id> --id key_…
 */
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { ConfigError, loadConfig } from './config.js';
import { createDb } from './db/client.js';
import { DataDirInUseError } from './db/data-dir-lock.js';
import { createApiKey, listApiKeys, revokeApiKey } from './domain/api-keys.js';
import { DomainError, InvalidRequestError } from './domain/errors.js';
import type { Viewer } from './domain/viewer.js';

const USAGE = `Usage: npm run apikey -- <command> [options]
  create --workspace <id> --name <name> [--identity idn_…]   an ADMIN key, or an IDENTITY key with --identity
  list   --workspace <id>                                    the workspace's keys (never their secrets)
  revoke --workspace <id> --id key_…                         revoke a key`;

const WORKSPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { workspace: { type: 'string' }, name: { type: 'string' }, identity: { type: 'string' }, id: { type: 'string' } },
  });
  const [command] = positionals;
  if (!command || !['create', 'list', 'revoke'].includes(command)) fail(USAGE);
  if (!values.workspace || !WORKSPACE_PATTERN.test(values.workspace)) fail(`--workspace must be 1-63 of [A-Za-z0-9_-]\n\n${USAGE}`);

  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
  let database;
  try {
    database = await createDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  } catch (error) {
    if (error instanceof DataDirInUseError) fail(`${error.message}\nWith PGlite, stop the server first, or use the createApiKey mutation.`);
    throw error;
  }
  // The operator acts as an ADMIN of the workspace.
  const operator: Viewer = { workspaceId: values.workspace, apiKeyId: 'operator', kind: 'admin', identityId: null };
  const now = new Date();
  try {
    if (command === 'create') {
      if (!values.name) fail(`create needs --name\n\n${USAGE}`);
      await database.db.execute(sql`insert into workspaces (id, created_at) values (${values.workspace}, ${now.toISOString()}::timestamptz) on conflict do nothing`);
      const { apiKey, token } = await createApiKey(
        database.db,
        operator,
        { name: values.name, kind: values.identity ? 'identity' : 'admin', identityId: values.identity ?? null },
        now,
      );
      process.stdout.write(`Created ${apiKey.kind.toUpperCase()} key ${apiKey.id} in workspace ${values.workspace}${apiKey.identityId ? ` for ${apiKey.identityId}` : ''}.\nToken (shown once):\n${token}\n`);
    } else if (command === 'list') {
      const page = await listApiKeys(database.db, operator, {}, { size: 100, backward: false, after: null, before: null });
      for (const key of page.rows) {
        process.stdout.write(
          `${key.id}  ${key.kind.padEnd(8)}  ${(key.identityId ?? '-').padEnd(24)}  ${key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active'}  ${key.name}\n`,
        );
      }
      if (page.hasNextPage) process.stdout.write('(first 100 keys shown)\n');
    } else {
      if (!values.id) fail(`revoke needs --id\n\n${USAGE}`);
      const key = await revokeApiKey(database.db, operator, values.id, now);
      process.stdout.write(`Revoked ${key.id}.\n`);
    }
  } catch (error) {
    if (error instanceof InvalidRequestError) fail(error.issues.map((issue) => `${issue.field.join('.') || 'input'}: ${issue.message}`).join('\n'));
    if (error instanceof DomainError) fail(error.message);
    throw error;
  } finally {
    await database.close();
  }
}

await main();
