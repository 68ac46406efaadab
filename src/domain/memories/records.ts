import { hash } from 'node:crypto';
import { getTableColumns } from 'drizzle-orm';
import { memories } from '../../db/schema.js';
import { NotFoundError } from '../errors.js';
import { sortKey, type KeysetList } from '../pagination.js';
import type { MemoryVersionRecord, MemoryVersionSummary } from '../versions.js';

/** A memory row as the API sees it. */
export type MemoryRecord = typeof memories.$inferSelect;
/** A memory as lists load it: without its content (which `content` loads when selected). */
export type MemorySummary = Omit<MemoryRecord, 'content'> & { content?: string };

/** What deleting a memory leaves: its id, and the DELETED version holding its last state. */
export interface DeletedMemory {
  deletedMemoryId: string;
  version: MemoryVersionRecord;
}

/** A memory as a write left it, and the version the write made (null: nothing changed, no version). */
export interface WrittenMemory {
  memory: MemoryRecord;
  version: MemoryVersionSummary | null;
}

export type MemoryOrder = 'PATH_ASC' | 'PATH_DESC' | 'UPDATED_AT_DESC' | 'CREATED_AT_DESC';

const { content: _content, ...summaryColumns } = getTableColumns(memories);

const byPath = sortKey<MemorySummary>(memories.path, (memory) => memory.path);
const byId = sortKey<MemorySummary>(memories.id, (memory) => memory.id);

/** The four orders of MemoryStore.memories; each key is unique within a store. */
export const MEMORY_LISTS: Record<MemoryOrder, KeysetList<MemorySummary>> = {
  PATH_ASC: { table: memories, columns: summaryColumns, ordering: { name: 'memories:path', keys: [byPath], direction: 'asc' } },
  PATH_DESC: { table: memories, columns: summaryColumns, ordering: { name: 'memories:path-desc', keys: [byPath], direction: 'desc' } },
  UPDATED_AT_DESC: {
    table: memories,
    columns: summaryColumns,
    ordering: { name: 'memories:updated', keys: [sortKey(memories.updatedAt, (memory) => memory.updatedAt), byId], direction: 'desc' },
  },
  CREATED_AT_DESC: {
    table: memories,
    columns: summaryColumns,
    ordering: { name: 'memories:created', keys: [sortKey(memories.createdAt, (memory) => memory.createdAt), byId], direction: 'desc' },
  },
};

/** The lower-case hex SHA-256 of a text's UTF-8 bytes: a memory's contentSha256. */
export function sha256Hex(content: string): string {
  return hash('sha256', content, 'hex');
}

export function memoryNotFound(id: string): NotFoundError {
  return new NotFoundError(`No memory with id "${id}".`);
}

export function storeNotFound(id: string): NotFoundError {
  return new NotFoundError(`No memory store with id "${id}".`);
}

/**
 * A memory from a raw row of `db.execute` (column names; metadata as JSON text or an object;
 * the times as epoch milliseconds under the names `times` gives).
 */
export function memoryRecordOfRow(row: Record<string, unknown>, times = { createdAt: 'created_at', updatedAt: 'updated_at' }): MemoryRecord {
  return {
    workspaceId: row.workspace_id as string,
    id: row.id as string,
    memoryStoreId: row.memory_store_id as string,
    path: row.path as string,
    content: row.content as string,
    contentSizeBytes: Number(row.content_size_bytes),
    contentSha256: row.content_sha256 as string,
    metadata: (typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata) as Record<string, string>,
    versionSequence: Number(row.version_sequence),
    createdAt: new Date(Number(row[times.createdAt])),
    updatedAt: new Date(Number(row[times.updatedAt])),
  };
}
