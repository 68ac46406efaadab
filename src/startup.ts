import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import { IN_MEMORY_DATA_DIR, type Database } from './db/client.js';
import { databaseTarget } from './db/open-errors.js';
import { authenticate, createDevelopmentKey, ensureAdminKey, hasNoApiKeys } from './domain/api-keys.js';
import type { Logger } from './logger.js';

/** Which database the server opened, as far as the development key file is concerned. */
type KeyFileConfig = Pick<Config, 'dataDir'> & { databaseUrl?: string | undefined };

/** A file name's part for a host, port or database name: anything but [A-Za-z0-9._-] becomes "_". */
function fileNamePart(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]/g, '_');
}

/**
 * Where the development key is kept for GraphiQL and for the developer to copy: one file
 * per database, so that a key made on one never replaces another's. PGlite's is
 * `<data dir>/dev-api-key`; a PostgreSQL database's is named after its host, port and
 * database, e.g. `<data dir>/dev-api-key.postgres-127.0.0.1-5432-memstore`.
 */
export function developmentKeyFile(config: KeyFileConfig): string | null {
  if (config.dataDir === IN_MEMORY_DATA_DIR) return null;
  if (config.databaseUrl === undefined) return path.join(config.dataDir, 'dev-api-key');
  const { host, port, database } = databaseTarget(config.databaseUrl);
  return path.join(config.dataDir, `dev-api-key.postgres-${fileNamePart(host)}-${fileNamePart(port)}-${fileNamePart(database)}`);
}

/**
 * Makes sure the server can be used: the MEMSTORE_BOOTSTRAP_KEYS exist, or — on a brand-new
 * database without that variable — workspace `default` gets one ADMIN key, printed once and
 * written to `<data dir>/dev-api-key`. Runs under the migration lock.
 */
export async function ensureApiKeys(db: Database, config: Pick<Config, 'bootstrapKeys'> & KeyFileConfig, logger: Logger): Promise<void> {
  const now = new Date();
  if (config.bootstrapKeys) {
    // One entry never stops the start for the others: a key revoked through the API stays
    // revoked (a workspace's ADMIN must be able to revoke a leaked key), and the server says so.
    const ensured = new Set<string>();
    for (const { workspaceId, token } of config.bootstrapKeys) {
      const outcome = await ensureAdminKey(db, workspaceId, token, now, 'bootstrap key');
      if (outcome === 'ensured') ensured.add(workspaceId);
      else if (outcome === 'revoked') logger.warn('bootstrap key skipped: it has been revoked; remove it from MEMSTORE_BOOTSTRAP_KEYS', { workspaceId });
      else logger.warn('bootstrap key skipped: it belongs to another workspace', { workspaceId });
    }
    logger.info('bootstrap keys ensured', { workspaces: [...ensured] });
    return;
  }
  if (!(await hasNoApiKeys(db))) return;
  const token = await createDevelopmentKey(db, now);
  const file = developmentKeyFile(config);
  if (file) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
  }
  // The one time the key is shown: on the console for a person, not in the JSON log.
  process.stdout.write(
    `\nCreated workspace "default" with an ADMIN API key (shown once):\n\n  ${token}\n\n` +
      (file ? `It is saved in ${file}. ` : '') +
      'Send it as "Authorization: Bearer <key>"; GraphiQL has it pre-filled outside production.\n\n',
  );
}

/**
 * The development key file of the opened database and what it holds: `valid` (its key
 * authenticates), `invalid` (it does not: revoked, or made for another database), or
 * `missing`. Null with bootstrap keys or without a data dir (no development key then).
 */
export async function checkDevelopmentKey(
  db: Database,
  config: Pick<Config, 'bootstrapKeys'> & KeyFileConfig,
): Promise<{ file: string; state: 'valid' | 'invalid' | 'missing'; token: string | null } | null> {
  const file = developmentKeyFile(config);
  if (!file || config.bootstrapKeys) return null;
  if (!fs.existsSync(file)) return { file, state: 'missing', token: null };
  const token = fs.readFileSync(file, 'utf8').trim();
  return (await authenticate(db, token)) ? { file, state: 'valid', token } : { file, state: 'invalid', token: null };
}

/** The development key for GraphiQL, if it is on disk and still valid. */
export async function readDevelopmentKey(db: Database, config: Pick<Config, 'bootstrapKeys'> & KeyFileConfig): Promise<string | null> {
  return (await checkDevelopmentKey(db, config))?.token ?? null;
}

/** How the opened database is named in messages: never with a password. */
export function databaseLabel(config: Pick<Config, 'dataDir'> & KeyFileConfig): string {
  if (config.databaseUrl === undefined) return config.dataDir === IN_MEMORY_DATA_DIR ? 'PGlite in memory' : `PGlite in ${path.join(config.dataDir, 'pglite')}`;
  const { host, port, database } = databaseTarget(config.databaseUrl);
  return `PostgreSQL database ${database} on ${host}:${port}`;
}

/**
 * Says at startup which key file belongs to the opened database, and warns when its key
 * does not authenticate: in the log, and for a person on the console.
 */
export function reportDevelopmentKey(check: Awaited<ReturnType<typeof checkDevelopmentKey>>, database: string, logger: Logger): void {
  if (check === null) return;
  if (check.state === 'valid') {
    logger.info('development key', { file: check.file, database });
    process.stdout.write(`The development key of the ${database} is in ${check.file}.\n`);
  } else if (check.state === 'invalid') {
    process.stdout.write(
      `Warning: the key saved in ${check.file} does not authenticate against the ${database}; GraphiQL opens without it.\n` +
        '  Make a new one with: npm run apikey -- create --workspace default --name development\n',
    );
    logger.warn('the saved development key does not authenticate against this database: GraphiQL opens without it', {
      file: check.file,
      database,
      fix: 'make a new key with: npm run apikey -- create --workspace default --name development',
    });
  } else {
    logger.info('no development key is saved for this database (its keys were made elsewhere)', { file: check.file, database });
  }
}
