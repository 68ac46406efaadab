import { hash, randomInt } from 'node:crypto';
import { and, count, eq, getTableColumns, isNull, ne, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import type { StatementScope } from '../db/deadline.js';
import { apiKeys, workspaces } from '../db/schema.js';
import { ConflictError, NotFoundError } from './errors.js';
import { isIdOfKind, newId } from './ids.js';
import { API_KEY_NAME_MAX_CHARACTERS } from './limits.js';
import { fetchPage, sortKey, type KeysetList, type Page, type PageWindow } from './pagination.js';
import { assertCan } from './access.js';
import { checkExternalId, checkText, IssueList } from './validation.js';
import type { Viewer } from './viewer.js';

export type ApiKeyRecord = typeof apiKeys.$inferSelect;
/** A key as the API shows it: never its hash. */
export type ApiKeySummary = Omit<ApiKeyRecord, 'tokenSha256'>;
import type { ApiKeyKind } from './viewer.js';

const MANAGE_KEYS = { type: 'apiKeys.manage' } as const;

const TOKEN_PREFIX = 'msk_';
const TOKEN_BODY_CHARACTERS = 40;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const TOKEN_PATTERN = new RegExp(`^${TOKEN_PREFIX}[0-9A-Za-z]{${TOKEN_BODY_CHARACTERS}}$`);
/** An API key's secret, in words (for messages). */
export const TOKEN_RULE = `${TOKEN_PREFIX} followed by ${TOKEN_BODY_CHARACTERS} letters or digits`;

const WORKSPACE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
/** A workspace id, in words (for messages). */
export const WORKSPACE_ID_RULE = '1-63 characters of A-Z, a-z, 0-9, "_" and "-", starting with a letter or digit';

/** Whether a text can be a workspace id (MEMSTORE_BOOTSTRAP_KEYS, the apikey command). */
export function isWellFormedWorkspaceId(workspaceId: string): boolean {
  return WORKSPACE_ID_PATTERN.test(workspaceId);
}

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
  return hash('sha256', token, 'hex');
}

/**
 * The lookup every request makes, declared once: the unrevoked key with the token's SHA-256
 * (at most one), and the viewer its columns make. authenticate() runs it through drizzle;
 * compiled reads write the same lookup into their own statement (read-compiler/sql.ts).
 */
export const KEY_LOOKUP = {
  table: apiKeys,
  /** In this order: the viewer's columns. */
  columns: { workspaceId: apiKeys.workspaceId, apiKeyId: apiKeys.id, kind: apiKeys.kind, identityId: apiKeys.identityId },
  tokenColumn: apiKeys.tokenSha256,
  /** The key counts only while this is null. */
  revokedColumn: apiKeys.revokedAt,
} as const;

/** The viewer of a looked-up key row (its columns by KEY_LOOKUP's names). */
export function viewerOf(row: { workspaceId: string; apiKeyId: string; kind: string; identityId: string | null }): Viewer {
  return { workspaceId: row.workspaceId, apiKeyId: row.apiKeyId, kind: row.kind as Viewer['kind'], identityId: row.identityId ?? null };
}

/** The key lookup, prepared once per database handle (it runs on every request). */
const keyLookups = new WeakMap<Database, ReturnType<typeof prepareKeyLookup>>();

function prepareKeyLookup(db: Database) {
  return db
    .select(KEY_LOOKUP.columns)
    .from(KEY_LOOKUP.table)
    .where(and(eq(KEY_LOOKUP.tokenColumn, sql.placeholder('tokenSha256')), isNull(KEY_LOOKUP.revokedColumn)))
    .limit(1)
    .prepare('authenticate');
}

/** Whether a token has the form of an API key (`msk_` and 40 base62 characters). */
export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

/**
 * The key of a token, or null. For a request, `scope` is its statement scope (deadline.ts):
 * the lookup is not sent once the request may send no statement, and its observer is told
 * of it. The prepared lookup itself belongs to `db`, the handle outside requests (preparing
 * it per request would build its SQL every time), so on PGlite the scope is checked as the
 * lookup joins the line of statements, not at its turn, and its observed time includes its
 * wait in the line.
 */
export async function authenticate(db: Database, token: string, scope?: StatementScope): Promise<Viewer | null> {
  if (!isWellFormedToken(token)) return null;
  let lookup = keyLookups.get(db);
  if (!lookup) keyLookups.set(db, (lookup = prepareKeyLookup(db)));
  const lookUp = () => lookup.execute({ tokenSha256: hashToken(token) });
  scope?.admit();
  const [key] = await (scope ? scope.observed(lookup.getQuery().sql, lookUp) : lookUp());
  return key ? viewerOf(key) : null;
}

/** What became of an ADMIN key that had to exist: there and working, revoked earlier, or the token of another workspace's key. */
export type EnsuredKey = 'ensured' | 'revoked' | 'belongs to another workspace';

/**
 * Makes sure the workspace and an ADMIN key with this token exist (MEMSTORE_BOOTSTRAP_KEYS).
 * Idempotent. A key that was revoked stays revoked, and a token registered to another
 * workspace stays there: the caller hears which, and nothing changes.
 */
export async function ensureAdminKey(db: Database, workspaceId: string, token: string, now: Date, name: string): Promise<EnsuredKey> {
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
  if (!existing || existing.workspaceId !== workspaceId) return 'belongs to another workspace';
  return existing.revokedAt === null ? 'ensured' : 'revoked';
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

// ---------------------------------------------------------------------------------------
// Key management (ADMIN keys only)

const { tokenSha256: _hash, ...summaryColumns } = getTableColumns(apiKeys);

/** Newest first; the id breaks ties. */
export const API_KEY_LIST: KeysetList<ApiKeySummary> = {
  table: apiKeys,
  columns: summaryColumns,
  ordering: { name: 'api-keys', keys: [sortKey(apiKeys.createdAt, (key) => key.createdAt), sortKey(apiKeys.id, (key) => key.id)], direction: 'desc' },
};

export interface ApiKeyFilter {
  kind?: ApiKeyKind;
  /** Revoked keys are listed too unless this is false. */
  includeRevoked?: boolean;
}

function apiKeyFilter(workspaceId: string, filter: ApiKeyFilter): SQL {
  return and(
    eq(apiKeys.workspaceId, workspaceId),
    filter.kind === undefined ? undefined : eq(apiKeys.kind, filter.kind),
    filter.includeRevoked === false ? isNull(apiKeys.revokedAt) : undefined,
  )!;
}

export async function listApiKeys(db: Database, viewer: Viewer, filter: ApiKeyFilter, window: PageWindow): Promise<Page<ApiKeySummary>> {
  assertCan(viewer, MANAGE_KEYS);
  return fetchPage(db, API_KEY_LIST, window, apiKeyFilter(viewer.workspaceId, filter));
}

export async function countApiKeys(db: Database, viewer: Viewer, filter: ApiKeyFilter): Promise<number> {
  assertCan(viewer, MANAGE_KEYS);
  const [row] = await db.select({ total: count() }).from(apiKeys).where(apiKeyFilter(viewer.workspaceId, filter));
  return row?.total ?? 0;
}

export interface CreateApiKeyInput {
  name: string;
  kind: ApiKeyKind;
  identityId?: string | null;
}

/** Creates a key of the caller's workspace; the plaintext token is returned here only. */
export async function createApiKey(db: Database, viewer: Viewer, input: CreateApiKeyInput, now: Date): Promise<{ apiKey: ApiKeySummary; token: string }> {
  assertCan(viewer, MANAGE_KEYS);
  const issues = new IssueList();
  checkText(issues, ['name'], input.name, { maxCharacters: API_KEY_NAME_MAX_CHARACTERS, allowBlank: false });
  if (input.kind === 'identity') {
    if (input.identityId == null) issues.add(['identityId'], 'is required for an IDENTITY key');
    else checkExternalId(issues, ['identityId'], input.identityId, 'identity');
  } else if (input.identityId != null) {
    issues.add(['identityId'], 'must be left out for an ADMIN key (ADMIN keys act for every identity)');
  }
  issues.throwIfAny();
  const token = generateToken();
  const [created] = await db
    .insert(apiKeys)
    .values({
      workspaceId: viewer.workspaceId,
      id: newId('apiKey', now.getTime()),
      name: input.name,
      kind: input.kind,
      identityId: input.kind === 'identity' ? input.identityId! : null,
      tokenSha256: hashToken(token),
      createdAt: now,
    })
    .returning(summaryColumns);
  return { apiKey: created!, token };
}

/**
 * Revokes a key: requests with it fail from the next one on. Refuses to revoke the
 * workspace's last active ADMIN key, which would lock everyone out.
 */
export async function revokeApiKey(db: Database, viewer: Viewer, id: string, now: Date): Promise<ApiKeySummary> {
  assertCan(viewer, MANAGE_KEYS);
  const notFound = () => new NotFoundError(`No API key with id "${id}".`);
  if (!isIdOfKind(id, 'apiKey')) throw notFound();
  return db.transaction(async (tx) => {
    // Revocations of one workspace run one at a time, so two admins cannot revoke each
    // other's keys at once and leave no ADMIN key.
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`revoke\u0001${viewer.workspaceId}`}, 0))`);
    const [key] = await tx
      .select(summaryColumns)
      .from(apiKeys)
      .where(and(eq(apiKeys.workspaceId, viewer.workspaceId), eq(apiKeys.id, id)));
    if (!key) throw notFound();
    if (key.revokedAt !== null) throw new ConflictError('The API key is already revoked.', 'already_revoked');
    if (key.kind === 'admin') {
      const [others] = await tx
        .select({ total: count() })
        .from(apiKeys)
        .where(and(eq(apiKeys.workspaceId, viewer.workspaceId), eq(apiKeys.kind, 'admin'), isNull(apiKeys.revokedAt), ne(apiKeys.id, id)));
      if ((others?.total ?? 0) === 0) throw new ConflictError('This is the workspace\'s last active ADMIN key: create another one before revoking it.', 'last_admin_key');
    }
    const [revoked] = await tx
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.workspaceId, viewer.workspaceId), eq(apiKeys.id, id)))
      .returning(summaryColumns);
    return revoked!;
  });
}

/**
 * Of these keys, the ones that are revoked or gone (their open streams end): one statement
 * for any number of keys.
 */
export async function findRevokedKeys(
  db: Database,
  keys: readonly { workspaceId: string; apiKeyId: string }[],
): Promise<{ workspaceId: string; apiKeyId: string }[]> {
  if (keys.length === 0) return [];
  const active = await db
    .select({ workspaceId: apiKeys.workspaceId, apiKeyId: apiKeys.id })
    .from(apiKeys)
    .where(
      and(
        sql`(${apiKeys.workspaceId}, ${apiKeys.id}) in (select * from unnest(${sql.param(keys.map((key) => key.workspaceId))}::text[], ${sql.param(keys.map((key) => key.apiKeyId))}::text[]))`,
        isNull(apiKeys.revokedAt),
      ),
    );
  const alive = new Set(active.map((key) => `${key.workspaceId}\u0000${key.apiKeyId}`));
  return keys.filter((key) => !alive.has(`${key.workspaceId}\u0000${key.apiKeyId}`));
}
