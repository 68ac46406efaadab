/**
 * API keys for operators: `npm run apikey -- <command>` against the configured database
 * (DATABASE_URL, or the PGlite data dir when no server holds it).
 *
 *   create --workspace <id> --name <name> [--identity idn_…]   prints the token once
 *   list   --workspace <id>
 *   revoke --workspace <id> --id key_…
 *   --help
 */
import { parseArgs } from 'node:util';
import { eq, sql } from 'drizzle-orm';
import { ConfigError, loadConfig } from './config.js';
import { createDb } from './db/client.js';
import { DataDirInUseError } from './db/data-dir-lock.js';
import { describeDatabaseOpenFailure } from './db/open-errors.js';
import { workspaces } from './db/schema.js';
import { createApiKey, isWellFormedWorkspaceId, listApiKeys, revokeApiKey, WORKSPACE_ID_RULE } from './domain/api-keys.js';
import { DomainError, InvalidRequestError } from './domain/errors.js';
import type { Viewer } from './domain/viewer.js';

const USAGE = `Usage: npm run apikey -- <command> [options]

Manages the API keys of a workspace in the configured database: PostgreSQL when
DATABASE_URL is set, else the PGlite data dir MEMSTORE_DATA_DIR (default .data; stop the
server that holds it first).

Commands:
  create --workspace <id> --name <name> [--identity idn_…]   an ADMIN key, or an IDENTITY key with --identity;
                                                             makes the workspace if it does not exist yet
  list   --workspace <id>                                    the workspace's keys (never their secrets)
  revoke --workspace <id> --id key_…                         revoke a key
  help, --help, -h                                           this text

The token of a new key is printed once; only its SHA-256 is stored.`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

function parseCommandLine() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: { workspace: { type: 'string' }, name: { type: 'string' }, identity: { type: 'string' }, id: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    // node:util's messages ("Unknown option '--x'…") are clear; its stack is not for operators.
    fail(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
  }
}

async function main(): Promise<void> {
  const { positionals, values } = parseCommandLine();
  const [command] = positionals;
  if (values.help || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!command) fail(USAGE);
  if (!['create', 'list', 'revoke'].includes(command)) fail(`Unknown command "${command}".\n\n${USAGE}`);
  if (positionals.length > 1) fail(`Unexpected argument "${positionals[1]}".\n\n${USAGE}`);
  if (!values.workspace || !isWellFormedWorkspaceId(values.workspace)) fail(`--workspace must be ${WORKSPACE_ID_RULE}\n\n${USAGE}`);

  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }
  if (command === 'create' && !values.name) fail(`create needs --name\n\n${USAGE}`);
  if (command === 'revoke' && !values.id) fail(`revoke needs --id\n\n${USAGE}`);

  let database;
  try {
    database = await createDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  } catch (error) {
    if (error instanceof DataDirInUseError) fail(`${error.message}\nWith PGlite, stop the server first, or use the createApiKey mutation.`);
    const reason = describeDatabaseOpenFailure(error, config.databaseUrl);
    if (reason !== null) fail(reason);
    throw error;
  }
  // The operator acts as an ADMIN of the workspace.
  const operator: Viewer = { workspaceId: values.workspace, apiKeyId: 'operator', kind: 'admin', identityId: null };
  const now = new Date();
  // What went wrong, said once the database is closed (process.exit would skip the close).
  let failure: string | null = null;
  try {
    // Only create makes a workspace: listing or revoking in one that does not exist is a typo.
    const [workspace] = await database.db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.id, values.workspace)).limit(1);
    if (!workspace && command !== 'create') {
      failure = `No workspace "${values.workspace}" in this database. Workspaces are made by create: npm run apikey -- create --workspace ${values.workspace} --name <name>`;
    } else if (command === 'create') {
      // One transaction: a refused key leaves no new, empty workspace behind.
      const { apiKey, token } = await database.db.transaction(async (tx) => {
        await tx.execute(sql`insert into workspaces (id, created_at) values (${values.workspace}, ${now.toISOString()}::timestamptz) on conflict do nothing`);
        return createApiKey(tx, operator, { name: values.name!, kind: values.identity ? 'identity' : 'admin', identityId: values.identity ?? null }, now);
      });
      process.stdout.write(
        `${workspace ? '' : `Created workspace ${values.workspace}.\n`}` +
          `Created ${apiKey.kind.toUpperCase()} key ${apiKey.id} in workspace ${values.workspace}${apiKey.identityId ? ` for ${apiKey.identityId}` : ''}.\nToken (shown once):\n${token}\n`,
      );
    } else if (command === 'list') {
      const page = await listApiKeys(database.db, operator, {}, { size: 100, backward: false, after: null, before: null });
      for (const key of page.rows) {
        process.stdout.write(
          `${key.id}  ${key.kind.padEnd(8)}  ${(key.identityId ?? '-').padEnd(24)}  ${key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active'}  ${key.name}\n`,
        );
      }
      if (page.hasNextPage) process.stdout.write('(first 100 keys shown)\n');
    } else {
      const key = await revokeApiKey(database.db, operator, values.id!, now);
      process.stdout.write(`Revoked ${key.id}.\n`);
    }
  } catch (error) {
    if (error instanceof InvalidRequestError) failure = error.issues.map((issue) => `${issue.field.join('.') || 'input'}: ${issue.message}`).join('\n');
    else if (error instanceof DomainError) failure = error.message;
    else throw error;
  } finally {
    await database.close();
  }
  if (failure !== null) fail(failure);
}

await main();
