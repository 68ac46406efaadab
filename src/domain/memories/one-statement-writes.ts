import { getTableColumns, sql, type Query, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { writeEnded } from '../../db/announcements.js';
import { rowsOf, type Database } from '../../db/client.js';
import { memories, memoryVersions } from '../../db/schema.js';
import { recordEventsOf } from '../events.js';
import { newId } from '../ids.js';
import { actorColumns, MEMORY_STATE_IN_VERSION, versionValuesFor, writtenVersion, type MemoryOperation } from '../versions.js';
import type { Writer } from '../viewer.js';
import { memoryRecordOfRow, sha256Hex, type MemoryRecord, type WrittenMemory } from './records.js';

/**
 * The common writes in one statement. A new memory, and new content for a memory (with or
 * without expectedContentSha256), are what agents send all day. Each is tried first as one
 * statement that takes the same locks in the same order as the transactions of
 * locked-writes.ts — the store's row, then the memory's, whose newest version FOR UPDATE
 * reads after any wait — and writes memory, version and counters together, atomically.
 * When that statement writes nothing (no such memory or store, an archived store, a taken
 * path, a failed or already-met precondition, a memory changed in the future of this
 * request's clock), the transaction runs and answers exactly. Each statement commits (or
 * fails) by itself, so it announces its end (db/announcements.ts) as a transaction does.
 *
 * Counters are computed from the store row the statement locks (FOR UPDATE returns its
 * newest version after any wait), never from the target row as the statement's snapshot
 * saw it: PostgreSQL checks constraints on the row computed from the snapshot before its
 * read-committed recheck, so a snapshot total plus a freshly locked size could go negative
 * and fail a valid write (test/write-counters-race.test.ts).
 */

const memoryColumns = getTableColumns(memories);
const versionColumns = getTableColumns(memoryVersions);

/** A value of the write, given when it runs (the statements are built once). */
const value = sql.placeholder;

/**
 * `insert into memory_versions (…) select … from <source>`: a version of each memory row of
 * `source`, copying the columns MEMORY_STATE_IN_VERSION names (as versionValuesFor does). Its
 * id and author are the write's values `versionId`, `apiKeyId` and `sessionId`
 * (actorColumns).
 */
function insertVersionsOf(source: string, version: { operation: MemoryOperation; sequence: SQL; createdAt: SQL }): SQL {
  const copied = MEMORY_STATE_IN_VERSION.map(([target, from]) => [versionColumns[target].name, `${source}.${memoryColumns[from].name}`] as const);
  const names = [
    ...copied.map(([name]) => name),
    versionColumns.id.name,
    versionColumns.operation.name,
    versionColumns.sequence.name,
    versionColumns.createdByApiKeyId.name,
    versionColumns.createdBySessionId.name,
    versionColumns.createdAt.name,
  ];
  return sql`insert into memory_versions (${sql.raw(names.join(', '))})
    select ${sql.raw(copied.map(([, expression]) => expression).join(', '))}, ${value('versionId')}, ${version.operation}::memory_operation,
      ${version.sequence}, ${value('apiKeyId')}::text, ${value('sessionId')}::text, ${version.createdAt} from ${sql.raw(source)}`;
}

/**
 * A one-statement write, built by drizzle once, on first use, with placeholders for the
 * write's values (building it again for every write cost more server time than the rest of
 * the statement's handling). Each run fills them in, sends the same text (prepared on
 * PostgreSQL, db/client.ts) and announces its end, whether it wrote, wrote nothing or failed.
 * It runs as `db.execute` runs a statement (drizzle-orm 0.45, pinned by the lockfile):
 * through the session of `db`, a transaction's own when `db` is one, with the same logger.
 */
function oneStatementWrite<Values extends Record<string, unknown>>(build: () => SQL) {
  let query: Query | undefined;
  return async (db: Database, values: Values): Promise<Record<string, unknown>[]> => {
    query ??= new PgDialect().sqlToQuery(build());
    try {
      return rowsOf(await db._.session.prepareQuery(query, undefined, undefined, false).execute(values));
    } finally {
      writeEnded(db);
    }
  };
}

/**
 * The columns of a memory row as memoryRecordOfRow reads them, but its content: the write
 * sent that, and it is not sent back (up to MAX_CONTENT_BYTES a row, decoded for nothing).
 */
const RECORD_COLUMNS = (alias: string) =>
  sql.raw(
    `${alias}.workspace_id, ${alias}.id, ${alias}.memory_store_id, ${alias}.path, ${alias}.content_size_bytes, ` +
      `${alias}.content_sha256, ${alias}.metadata::text as metadata, ${alias}.version_sequence, ` +
      `(extract(epoch from ${alias}.created_at) * 1000)::float8 as created_at, (extract(epoch from ${alias}.updated_at) * 1000)::float8 as updated_at`,
  );

/** The values both writes take for the content they write and the version they make. */
type ContentValues = {
  workspaceId: string;
  content: string;
  contentSizeBytes: number;
  contentSha256: string;
  at: string;
  versionId: string;
  apiKeyId: string | null;
  sessionId: string | null;
};

function contentValues(writer: Writer, content: string, now: Date): ContentValues {
  return {
    workspaceId: writer.workspaceId,
    content,
    contentSizeBytes: Buffer.byteLength(content, 'utf8'),
    contentSha256: sha256Hex(content),
    at: now.toISOString(),
    versionId: newId('memoryVersion', now.getTime()),
    ...actorColumns(writer.actor),
  };
}

const CREATE = oneStatementWrite<ContentValues & { memoryStoreId: string; memoryId: string; path: string; metadata: string }>(
  () => sql`
    with store as (
      select s.id, s.entry_count, s.total_size from memory_stores s
      where s.workspace_id = ${value('workspaceId')} and s.id = ${value('memoryStoreId')} and s.status = 'active' for update),
    inserted as (
      insert into memories (workspace_id, id, memory_store_id, path, content, content_size_bytes, content_sha256, metadata, version_sequence, created_at, updated_at)
      select ${value('workspaceId')}, ${value('memoryId')}, store.id, ${value('path')}::text, ${value('content')}::text, ${value('contentSizeBytes')}::int,
        ${value('contentSha256')}::text, ${value('metadata')}::jsonb, 1, ${value('at')}::timestamptz, ${value('at')}::timestamptz from store
      on conflict (workspace_id, memory_store_id, path) do nothing
      returning *),
    version as (${insertVersionsOf('inserted', { operation: 'created', sequence: sql`1`, createdAt: sql.raw('inserted.created_at') })}),
    event as (${recordEventsOf('inserted', 'memory_created', value('versionId'), sql.raw('inserted.created_at'))}),
    counters as (
      update memory_stores s set entry_count = store.entry_count + 1, total_size = store.total_size + inserted.content_size_bytes
      from inserted, store where s.workspace_id = inserted.workspace_id and s.id = inserted.memory_store_id)
    select ${RECORD_COLUMNS('inserted')} from inserted`,
);

/** A new memory and its CREATED version, or null when the transaction must answer. */
export async function createMemoryInOneStatement(
  db: Database,
  writer: Writer,
  input: { memoryStoreId: string; path: string; content: string },
  metadata: Record<string, string>,
  now: Date,
): Promise<WrittenMemory | null> {
  const values = contentValues(writer, input.content, now);
  const [row] = await CREATE(db, {
    ...values,
    memoryStoreId: input.memoryStoreId,
    memoryId: newId('memory', now.getTime()),
    path: input.path,
    metadata: JSON.stringify(metadata),
  });
  if (!row) return null;
  const memory = memoryRecordOfRow({ ...row, content: input.content });
  // The statement's version copies what versionValuesFor copies (insertVersionsOf).
  return { memory, version: writtenVersion(versionValuesFor(memory, 'created', 1, writer, memory.createdAt, values.versionId)) };
}

// The content is sent once (input), however often the statement reads it.
const UPDATE_CONTENT = oneStatementWrite<ContentValues & { id: string; expected: string | null }>(
  () => sql`
    with input as (select ${value('content')}::text as content),
    store as (
      select s.id, s.total_size from memory_stores s
      where s.workspace_id = ${value('workspaceId')} and s.status = 'active'
        and s.id = (select m.memory_store_id from memories m where m.workspace_id = ${value('workspaceId')} and m.id = ${value('id')})
      for update),
    previous as (
      select m.* from memories m join store on store.id = m.memory_store_id
      where m.workspace_id = ${value('workspaceId')} and m.id = ${value('id')}
      for update of m),
    updated as (
      update memories m set content = input.content, content_size_bytes = ${value('contentSizeBytes')}::int,
        content_sha256 = ${value('contentSha256')}::text, version_sequence = previous.version_sequence + 1, updated_at = ${value('at')}::timestamptz
      from previous, input
      where m.workspace_id = previous.workspace_id and m.id = previous.id and previous.updated_at <= ${value('at')}::timestamptz
        and (${value('expected')}::text is null or previous.content_sha256 = ${value('expected')}::text)
        and previous.content <> input.content
      returning m.*, previous.content_size_bytes as previous_size),
    version as (${insertVersionsOf('updated', { operation: 'updated', sequence: sql.raw('updated.version_sequence'), createdAt: sql.raw('updated.updated_at') })}),
    event as (${recordEventsOf('updated', 'memory_updated', value('versionId'), sql.raw('updated.updated_at'))}),
    counters as (
      update memory_stores s set total_size = store.total_size + updated.content_size_bytes - updated.previous_size
      from updated, store where s.workspace_id = updated.workspace_id and s.id = updated.memory_store_id)
    select ${RECORD_COLUMNS('updated')} from updated`,
);

/** New content for a memory and its UPDATED version, or null when the transaction must answer. */
export async function updateContentInOneStatement(db: Database, writer: Writer, id: string, content: string, expected: string | undefined, now: Date): Promise<WrittenMemory | null> {
  const values = contentValues(writer, content, now);
  const [row] = await UPDATE_CONTENT(db, { ...values, id, expected: expected ?? null });
  if (!row) return null;
  const memory = memoryRecordOfRow({ ...row, content });
  return { memory, version: writtenVersion(versionValuesFor(memory, 'updated', memory.versionSequence, writer, memory.updatedAt, values.versionId)) };
}
