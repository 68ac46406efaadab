/**
 * The tables of the whole contract. Every tenant table starts its primary, unique and
 * foreign keys with `workspace_id`, and every statement filters by it: a query cannot reach
 * another workspace by accident, and PostgreSQL distributed by workspace (Citus) can shard
 * these tables unchanged. `workspaces` and `api_keys` form the directory that resolves a
 * token to its workspace (reference tables in a distributed setup).
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  customType,
  foreignKey,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

/** Text compared byte by byte (code-point order) on every server, whatever its default collation. */
const byteOrderedText = customType<{ data: string }>({
  dataType: () => 'text COLLATE "C"',
});

/** Keys are compared in byte order too: keyset pagination then agrees with JavaScript's ordering of ids. */
const keyText = (name: string) => byteOrderedText(name);

const moment = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });

export const memoryStoreStatus = pgEnum('memory_store_status', ['active', 'archived']);
export const memoryOperation = pgEnum('memory_operation', ['created', 'updated', 'deleted']);
export const mountAccess = pgEnum('mount_access', ['read_write', 'read_only']);
export const environmentType = pgEnum('environment_type', ['managed', 'self_hosted']);
export const apiKeyKind = pgEnum('api_key_kind', ['admin', 'identity']);

export const workspaces = pgTable('workspaces', {
  id: keyText('id').primaryKey(),
  createdAt: moment('created_at').notNull().defaultNow(),
});

export const apiKeys = pgTable(
  'api_keys',
  {
    workspaceId: keyText('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: keyText('id').notNull(),
    name: text('name').notNull(),
    kind: apiKeyKind('kind').notNull(),
    /** Set for IDENTITY keys only: the identity the key acts for. */
    identityId: text('identity_id'),
    /** Lower-case hex SHA-256 of the token; the token itself is never stored. */
    tokenSha256: text('token_sha256').notNull(),
    createdAt: moment('created_at').notNull(),
    revokedAt: moment('revoked_at'),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.id] }),
    // Authentication looks a token up before it knows the workspace.
    uniqueIndex('api_keys_token_sha256_key').on(table.tokenSha256),
    check('api_keys_identity_matches_kind', sql`(${table.kind} = 'identity') = (${table.identityId} is not null)`),
  ],
);

export const memoryStores = pgTable(
  'memory_stores',
  {
    workspaceId: keyText('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: keyText('id').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull(),
    status: memoryStoreStatus('status').notNull(),
    entryCount: integer('entry_count').notNull().default(0),
    totalSize: bigint('total_size', { mode: 'number' }).notNull().default(0),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull(),
    systemManaged: boolean('system_managed').notNull(),
    /** The owner of a system-managed default store; null for user-created stores. */
    identityId: text('identity_id'),
    /** The template of a system-managed default store's (identity, template) pair. */
    templateId: text('template_id'),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
    archivedAt: moment('archived_at'),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.id] }),
    // memoryStores: newest first, keyset on (created_at, id). Indexes are ascending: a
    // backward scan serves the descending orders (drizzle's .desc() would add NULLS LAST,
    // which ORDER BY … DESC cannot use).
    index('memory_stores_created_idx').on(table.workspaceId, table.createdAt, table.id),
    // At most one active default store per (identity, template) pair.
    uniqueIndex('memory_stores_default_per_pair_key')
      .on(table.workspaceId, table.identityId, table.templateId)
      .where(sql`${table.systemManaged} and ${table.status} = 'active'`),
    check('memory_stores_counters_non_negative', sql`${table.entryCount} >= 0 and ${table.totalSize} >= 0`),
    check('memory_stores_archived_at_matches_status', sql`(${table.status} = 'archived') = (${table.archivedAt} is not null)`),
  ],
);

export const memories = pgTable(
  'memories',
  {
    workspaceId: keyText('workspace_id').notNull(),
    id: keyText('id').notNull(),
    memoryStoreId: keyText('memory_store_id').notNull(),
    path: byteOrderedText('path').notNull(),
    content: text('content').notNull(),
    contentSizeBytes: integer('content_size_bytes').notNull(),
    contentSha256: text('content_sha256').notNull(),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull(),
    /** The sequence number of its newest version (1 for a new memory). */
    versionSequence: integer('version_sequence').notNull(),
    createdAt: moment('created_at').notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.id] }),
    foreignKey({
      name: 'memories_store_fk',
      columns: [table.workspaceId, table.memoryStoreId],
      foreignColumns: [memoryStores.workspaceId, memoryStores.id],
    }).onDelete('cascade'),
    // One live memory per path; also the PATH_ASC / PATH_DESC and pathPrefix index.
    uniqueIndex('memories_store_path_key').on(table.workspaceId, table.memoryStoreId, table.path),
    index('memories_store_updated_idx').on(table.workspaceId, table.memoryStoreId, table.updatedAt, table.id),
    index('memories_store_created_idx').on(table.workspaceId, table.memoryStoreId, table.createdAt, table.id),
  ],
);

/** The column of `memories` that holds the folder a memory lies directly in (see memoryFolders below). */
export const MEMORY_FOLDER_COLUMN = 'folder';

/**
 * One row per folder of a store that holds memories (a path prefix ending in "/", at any
 * depth): how many live memories lie below it, their bytes and their newest updatedAt.
 * Kept by a trigger on `memories` (drizzle/0003_memory_folders.sql), in the transaction of
 * every memory write, so MemoryStore.entries reads a folder level from an index. The
 * trigger also fills `memories.folder` (the path up to its last "/"), a generated column
 * declared only in that migration: drizzle never selects it.
 */
export const memoryFolders = pgTable(
  'memory_folders',
  {
    workspaceId: keyText('workspace_id').notNull(),
    memoryStoreId: keyText('memory_store_id').notNull(),
    /** Ends with "/". */
    path: byteOrderedText('path').notNull(),
    /** The folder holding it: "" at the store's root. */
    parent: byteOrderedText('parent').notNull(),
    /** Its last segment, without "/". */
    name: byteOrderedText('name').notNull(),
    memoryCount: integer('memory_count').notNull(),
    totalSize: bigint('total_size', { mode: 'number' }).notNull(),
    updatedAt: moment('updated_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.memoryStoreId, table.path] }),
    foreignKey({
      name: 'memory_folders_store_fk',
      columns: [table.workspaceId, table.memoryStoreId],
      foreignColumns: [memoryStores.workspaceId, memoryStores.id],
    }).onDelete('cascade'),
    // One folder level, by name.
    index('memory_folders_parent_idx').on(table.workspaceId, table.memoryStoreId, table.parent, table.name),
    check('memory_folders_counters_positive', sql`${table.memoryCount} > 0 and ${table.totalSize} >= 0`),
  ],
);

export const memoryVersions = pgTable(
  'memory_versions',
  {
    workspaceId: keyText('workspace_id').notNull(),
    id: keyText('id').notNull(),
    memoryStoreId: keyText('memory_store_id').notNull(),
    /** No foreign key: versions outlive their memory. */
    memoryId: keyText('memory_id').notNull(),
    path: byteOrderedText('path').notNull(),
    /** Null only once redacted: the bytes are gone from the row. */
    content: text('content'),
    contentSizeBytes: integer('content_size_bytes').notNull(),
    contentSha256: text('content_sha256').notNull(),
    operation: memoryOperation('operation').notNull(),
    /**
     * 1, 2, 3, … per memory, in commit order: "newest" is decided by this number, never by a
     * clock (two writers' clocks can disagree with the order their writes committed in).
     */
    sequence: integer('sequence').notNull(),
    createdByApiKeyId: text('created_by_api_key_id'),
    createdBySessionId: text('created_by_session_id'),
    createdAt: moment('created_at').notNull(),
    /** The version whose content restoreMemoryVersion brought back with this one; null on every other version. */
    restoredFromVersionId: keyText('restored_from_version_id'),
    redactedAt: moment('redacted_at'),
    redactedByApiKeyId: text('redacted_by_api_key_id'),
    redactedBySessionId: text('redacted_by_session_id'),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.id] }),
    foreignKey({
      name: 'memory_versions_store_fk',
      columns: [table.workspaceId, table.memoryStoreId],
      foreignColumns: [memoryStores.workspaceId, memoryStores.id],
    }).onDelete('cascade'),
    index('memory_versions_store_idx').on(table.workspaceId, table.memoryStoreId, table.createdAt, table.id),
    uniqueIndex('memory_versions_memory_sequence_key').on(table.workspaceId, table.memoryId, table.sequence),
    index('memory_versions_api_key_idx')
      .on(table.workspaceId, table.createdByApiKeyId, table.createdAt, table.id)
      .where(sql`${table.createdByApiKeyId} is not null`),
    index('memory_versions_session_idx')
      .on(table.workspaceId, table.createdBySessionId, table.createdAt, table.id)
      .where(sql`${table.createdBySessionId} is not null`),
    check('memory_versions_one_creator', sql`num_nonnulls(${table.createdByApiKeyId}, ${table.createdBySessionId}) = 1`),
    check('memory_versions_redaction_clears_content', sql`${table.redactedAt} is null or ${table.content} is null`),
  ],
);

export const memoryStoreMounts = pgTable(
  'memory_store_mounts',
  {
    workspaceId: keyText('workspace_id').notNull(),
    identityId: text('identity_id').notNull(),
    templateId: text('template_id').notNull(),
    memoryStoreId: keyText('memory_store_id').notNull(),
    access: mountAccess('access').notNull(),
    /** True for the pair's default slot (its system-managed store, READ_WRITE). */
    systemManaged: boolean('system_managed').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.identityId, table.templateId, table.memoryStoreId] }),
    foreignKey({
      name: 'memory_store_mounts_store_fk',
      columns: [table.workspaceId, table.memoryStoreId],
      foreignColumns: [memoryStores.workspaceId, memoryStores.id],
    }).onDelete('cascade'),
    // MemoryStore.mounts, bindingInfo and the archive / delete guards.
    index('memory_store_mounts_store_idx').on(table.workspaceId, table.memoryStoreId, table.createdAt),
    // One default slot per pair.
    uniqueIndex('memory_store_mounts_default_slot_key')
      .on(table.workspaceId, table.identityId, table.templateId)
      .where(sql`${table.systemManaged}`),
  ],
);

export const sessions = pgTable(
  'sessions',
  {
    workspaceId: keyText('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    id: keyText('id').notNull(),
    identityId: text('identity_id').notNull(),
    templateId: text('template_id').notNull(),
    environment: environmentType('environment').notNull(),
    defaultMemoryStoreId: keyText('default_memory_store_id').notNull(),
    memoryInjected: boolean('memory_injected').notNull(),
    /** The mounts injected at creation, in list order (a snapshot: later mounts do not change it). */
    injectedMounts: jsonb('injected_mounts')
      .$type<{ memoryStoreId: string; access: 'read_write' | 'read_only'; systemManaged: boolean; createdAt: string }[]>()
      .notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.id] }),
    index('sessions_pair_idx').on(table.workspaceId, table.identityId, table.templateId, table.createdAt),
  ],
);

export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    workspaceId: keyText('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** The mutation the key was used with: keys are scoped per mutation. */
    operation: text('operation').notNull(),
    key: text('key').notNull(),
    /** SHA-256 of the normalized input: the same key with another input is a CONFLICT. */
    requestSha256: text('request_sha256').notNull(),
    /** The id of what the first request created. */
    resultId: text('result_id').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.operation, table.key] })],
);

/**
 * The first answer to a write of the Forward REST API that carried an `Idempotency-Key`:
 * a retry with the same key and the same request gets these bytes again; the same key with
 * another request is refused. Rows older than IDEMPOTENCY_KEY_TTL_MS are swept as new
 * keys are claimed (domain/replays.ts).
 */
export const requestReplays = pgTable(
  'request_replays',
  {
    workspaceId: keyText('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    /** SHA-256 of the method, route, path parameters and body: the same key with another request is refused. */
    requestSha256: text('request_sha256').notNull(),
    /** The JSON text of the first answer (HTTP 200). */
    responseBody: text('response_body').notNull(),
    createdAt: moment('created_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspaceId, table.key] }), index('request_replays_created_idx').on(table.workspaceId, table.createdAt)],
);

/** PostgreSQL's 64-bit transaction id (never wraps around). */
const transactionId = customType<{ data: string; driverData: string }>({
  dataType: () => 'xid8',
});

export const memoryEventKind = pgEnum('memory_event_kind', [
  'memory_created',
  'memory_updated',
  'memory_deleted',
  'version_redacted',
  'store_created',
  'store_updated',
  'store_archived',
  'store_deleted',
]);

/**
 * The outbox of live updates: one row per committed change, written in the change's own
 * transaction (domain/events.ts), so that an event exists exactly when its change does.
 * No foreign key to the store: a store's events outlive it (STORE_DELETED among them).
 * Streams read it in (`xid`, `id`) order, and only below the oldest transaction still
 * running (domain/events.ts explains why that order loses nothing).
 */
export const memoryEvents = pgTable(
  'memory_events',
  {
    workspaceId: keyText('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** Taken when the row is inserted: unique, but not in commit order. */
    id: bigint('id', { mode: 'number' }).notNull().generatedAlwaysAsIdentity(),
    /** The writing transaction's id, taken at its first write (the lock on the store). */
    xid: transactionId('xid').notNull().default(sql`pg_current_xact_id()`),
    kind: memoryEventKind('kind').notNull(),
    memoryStoreId: keyText('memory_store_id').notNull(),
    memoryId: keyText('memory_id'),
    memoryVersionId: keyText('memory_version_id'),
    /** The memory's path after the change (memory events). */
    path: byteOrderedText('path'),
    /** The memory's path before a rename, when it changed. */
    previousPath: byteOrderedText('previous_path'),
    occurredAt: moment('occurred_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.workspaceId, table.id] }),
    // Delivery reads every workspace's new events in one statement per batch (the poller of
    // each server instance): this index, unlike the tenant keys, is not led by workspace_id.
    index('memory_events_position_idx').on(table.xid, table.id),
    // A workspace's newest event, for the change mark of conditional reads (domain/events.ts),
    // and a workspace's events in delivery order for a stream that resumes.
    index('memory_events_workspace_position_idx').on(table.workspaceId, table.xid, table.id),
    // The retention sweep.
    index('memory_events_occurred_idx').on(table.occurredAt),
  ],
);

/**
 * How far the retention sweep has deleted each workspace's events: the latest position
 * (`xid`, `id`) of an event it deleted. Written in the same statement as each deletion
 * (domain/events.ts deleteExpiredEvents), so that a replay reading its page in one snapshot
 * knows whether any event after its position is gone: it then ends with CURSOR_EXPIRED
 * instead of passing over what was deleted. One row per workspace whose events were swept.
 */
export const memoryEventSweeps = pgTable('memory_event_sweeps', {
  workspaceId: keyText('workspace_id')
    .primaryKey()
    .references(() => workspaces.id, { onDelete: 'cascade' }),
  xid: transactionId('xid').notNull(),
  id: bigint('id', { mode: 'number' }).notNull(),
});
