import { createHash, randomInt } from 'node:crypto';
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { apiKeys, workspaces } from '../db/schema.js';
import { newId } from './ids.js';
import type { Viewer } from './viewer.js';

const TOKEN_PREFIX = 'msk_';
const TOKEN_BODY_CHARACTERS = 40;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TOKEN_PATTERN = /^msk_[0-9A-Za-z]{40}$/;

/** The workspace the server creates when it starts with no keys at all. */
export const DEVELOPMENT_WORKSPACE_ID = 'default';

/** A new plaintext token: `msk_` + 40 random base62 characters (about 238 bits). */
export function generateToken(): string {
  let body = '';
  for (let index = 0; index < TOKEN_BODY_CHARACTERS; index += 1) body += BASE62[randomInt(BASE62.length)];
  return TOKEN_PREFIX + body;
}

/** Tokens are stored only as this lower-case hex SHA-256. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The viewer behind a token, or null when the token is malformed, unknown or revoked. */
export async function authenticate(db: Database, token: string): Promise<Viewer | null> {
  if (!TOKEN_PATTERN.test(token)) return null;
  const [key] = await db
    .select({ workspaceId: apiKeys.workspaceId, id: apiKeys.id, kind: apiKeys.kind, identityId: apiKeys.identityId })
    .from(apiKeys)
    .where(and(eq(apiKeys.tokenSha256, hashToken(token)), isNull(apiKeys.revokedAt)))
    .limit(1);
  return key ? { workspaceId: key.workspaceId, apiKeyId: key.id, kind: key.kind, identityId: key.identityId } : null;
}

export class BootstrapKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BootstrapKeyError';
  }
}

/**
 * Makes sure the workspace and an ADMIN key with this token exist (MEMSTORE_BOOTSTRAP_KEYS).
 * Idempotent; a token already registered to another workspace is an error.
 */
export async function ensureAdminKey(db: Database, workspaceId: string, token: string, now: Date, name: string): Promise<void> {
  const tokenSha256 = hashToken(token);
  await db.insert(workspaces).values({ id: workspaceId, createdAt: now }).onConflictDoNothing();
  await db
    .insert(apiKeys)
    .values({ workspaceId, id: newId('apiKey', now.getTime()), name, kind: 'admin', tokenSha256, createdAt: now })
    .onConflictDoNothing();
  const [existing] = await db
    .select({ workspaceId: apiKeys.workspaceId, revokedAt: apiKeys.revokedAt })
    .from(apiKeys)
    .where(eq(apiKeys.tokenSha256, tokenSha256));
  if (!existing || existing.workspaceId !== workspaceId) {
    throw new BootstrapKeyError(`A bootstrap key for workspace "${workspaceId}" is already registered to another workspace.`);
  }
  if (existing.revokedAt !== null) {
    throw new BootstrapKeyError(`A bootstrap key for workspace "${workspaceId}" has been revoked; remove it from MEMSTORE_BOOTSTRAP_KEYS.`);
  }
}

/** True when the database holds no API key at all (a brand-new installation). */
export async function hasNoApiKeys(db: Database): Promise<boolean> {
  const rows = await db.select({ one: sql<number>`1` }).from(apiKeys).limit(1);
  return rows.length === 0;
}

/** Creates workspace `default` with one ADMIN key and returns its token (shown once). */
export async function createDevelopmentKey(db: Database, now: Date): Promise<string> {
  const token = generateToken();
  await ensureAdminKey(db, DEVELOPMENT_WORKSPACE_ID, token, now, 'development key');
  return token;
}
