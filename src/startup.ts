import fs from 'node:fs';
import path from 'node:path';
import { IN_MEMORY_DATA_DIR, type Config } from './config.js';
import type { Database } from './db/client.js';
import { authenticate, createDevelopmentKey, ensureAdminKey, hasNoApiKeys } from './domain/api-keys.js';
import type { Logger } from './logger.js';

/** Where the development key is kept for GraphiQL and for the developer to copy. */
export function developmentKeyFile(config: Pick<Config, 'dataDir'>): string | null {
  return config.dataDir === IN_MEMORY_DATA_DIR ? null : path.join(config.dataDir, 'dev-api-key');
}

/**
 * Makes sure the server can be used: the MEMSTORE_BOOTSTRAP_KEYS exist, or — on a brand-new
 * database without that variable — workspace `default` gets one ADMIN key, printed once and
 * written to `<data dir>/dev-api-key`. Runs under the migration lock.
 */
export async function ensureApiKeys(db: Database, config: Pick<Config, 'bootstrapKeys' | 'dataDir'>, logger: Logger): Promise<void> {
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

/** The development key for GraphiQL, if it is on disk and still valid. */
export async function readDevelopmentKey(db: Database, config: Pick<Config, 'dataDir' | 'bootstrapKeys'>): Promise<string | null> {
  const file = developmentKeyFile(config);
  if (!file || config.bootstrapKeys || !fs.existsSync(file)) return null;
  const token = fs.readFileSync(file, 'utf8').trim();
  return (await authenticate(db, token)) ? token : null;
}
