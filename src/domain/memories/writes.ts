import type { Database } from '../../db/client.js';
import { assertCan } from '../access.js';
import { NotFoundError } from '../errors.js';
import { isIdOfKind } from '../ids.js';
import { MEMORY_METADATA_MAX_KEYS } from '../limits.js';
import { checkContent, checkMetadata, checkPath, checkSha256, IssueList } from '../validation.js';
import { writerOf, type Viewer, type Writer } from '../viewer.js';
import {
  deleteMemoryLocked,
  insertMemoryLocked,
  lockActiveStore,
  lockMemory,
  memoryAtPathLocked,
  preconditionFailed,
  updateMemoryLocked,
} from './locked-writes.js';
import { createMemoryInOneStatement, updateContentInOneStatement } from './one-statement-writes.js';
import { memoryNotFound, storeNotFound, type DeletedMemory, type MemoryRecord, type WrittenMemory } from './records.js';

/**
 * The memory writes every transport calls: validation, the access policy, then the write.
 * createMemory and updateMemory (new content only) try one statement first
 * (one-statement-writes.ts) and fall back to the transaction (locked-writes.ts), which
 * answers every case exactly; `singleStatement: false` goes straight to the transaction
 * (tests run every write both ways).
 */
export interface MemoryWriteOptions {
  singleStatement: boolean;
}

export const DEFAULT_MEMORY_WRITES: MemoryWriteOptions = { singleStatement: true };

const WRITE_MEMORIES = { type: 'memories.write' } as const;

function checkMemoryMetadata(issues: IssueList, metadata: Record<string, unknown>): void {
  checkMetadata(issues, ['metadata'], metadata, { maxKeys: MEMORY_METADATA_MAX_KEYS });
}

const nullRefused = 'must not be null: leave the field out instead';

export interface CreateMemoryInput {
  memoryStoreId: string;
  path: string;
  content: string;
  metadata?: Record<string, unknown> | null;
}

export async function createMemory(db: Database, viewer: Viewer, input: CreateMemoryInput, now: Date, options = DEFAULT_MEMORY_WRITES): Promise<WrittenMemory> {
  assertCan(viewer, WRITE_MEMORIES);
  const writer = writerOf(viewer);
  const issues = new IssueList();
  checkPath(issues, ['path'], input.path);
  checkContent(issues, ['content'], input.content);
  if (input.metadata != null) checkMemoryMetadata(issues, input.metadata);
  issues.throwIfAny();
  if (!isIdOfKind(input.memoryStoreId, 'memoryStore')) throw storeNotFound(input.memoryStoreId);

  const metadata = (input.metadata ?? {}) as Record<string, string>;
  const created = options.singleStatement ? await createMemoryInOneStatement(db, writer, input, metadata, now) : null;
  if (created) return created;
  return db.transaction(async (tx) => {
    await lockActiveStore(tx, writer.workspaceId, input.memoryStoreId);
    return insertMemoryLocked(tx, writer, input.memoryStoreId, { path: input.path, content: input.content, metadata }, now);
  });
}

export interface UpdateMemoryInput {
  id: string;
  /** undefined: keep; null: refused. */
  content?: string | null;
  metadata?: Record<string, unknown> | null;
  path?: string | null;
  expectedContentSha256?: string | null;
}

export async function updateMemory(db: Database, viewer: Viewer, input: UpdateMemoryInput, now: Date, options = DEFAULT_MEMORY_WRITES): Promise<WrittenMemory> {
  assertCan(viewer, WRITE_MEMORIES);
  const writer = writerOf(viewer);
  const issues = new IssueList();
  const fields = ['content', 'metadata', 'path'] as const;
  if (fields.every((field) => input[field] === undefined)) issues.add([], 'Give at least one of content, metadata, path.');
  for (const field of [...fields, 'expectedContentSha256'] as const) {
    if (input[field] === null) issues.add([field], nullRefused);
  }
  if (typeof input.path === 'string') checkPath(issues, ['path'], input.path);
  if (typeof input.content === 'string') checkContent(issues, ['content'], input.content);
  if (input.metadata) checkMemoryMetadata(issues, input.metadata);
  if (typeof input.expectedContentSha256 === 'string') checkSha256(issues, ['expectedContentSha256'], input.expectedContentSha256);
  issues.throwIfAny();
  if (!isIdOfKind(input.id, 'memory')) throw memoryNotFound(input.id);

  if (options.singleStatement && typeof input.content === 'string' && input.path === undefined && input.metadata === undefined) {
    const updated = await updateContentInOneStatement(db, writer, input.id, input.content, input.expectedContentSha256?.toLowerCase(), now);
    if (updated) return updated;
  }
  return db.transaction(async (tx) => {
    const current = await lockMemory(tx, writer.workspaceId, input.id);
    const changes = {
      content: input.content ?? undefined,
      path: input.path ?? undefined,
      metadata: (input.metadata ?? undefined) as Record<string, string> | undefined,
    };
    return updateMemoryLocked(tx, writer, current, changes, input.expectedContentSha256?.toLowerCase(), now);
  });
}

export interface DeleteMemoryInput {
  id: string;
  expectedContentSha256?: string | null;
}

function checkExpectedSha(issues: IssueList, expectedContentSha256: string | null | undefined): void {
  if (expectedContentSha256 === null) issues.add(['expectedContentSha256'], nullRefused);
  if (typeof expectedContentSha256 === 'string') checkSha256(issues, ['expectedContentSha256'], expectedContentSha256);
}

export async function deleteMemory(db: Database, viewer: Viewer, input: DeleteMemoryInput, now: Date): Promise<DeletedMemory> {
  assertCan(viewer, WRITE_MEMORIES);
  const writer = writerOf(viewer);
  const issues = new IssueList();
  checkExpectedSha(issues, input.expectedContentSha256);
  issues.throwIfAny();
  if (!isIdOfKind(input.id, 'memory')) throw memoryNotFound(input.id);

  return db.transaction(async (tx) => {
    const current = await lockMemory(tx, writer.workspaceId, input.id);
    return deleteMemoryLocked(tx, writer, current, input.expectedContentSha256?.toLowerCase(), now);
  });
}

// ---------------------------------------------------------------------------------------
// Writes by path (an agent's writes into its session's default store: sessions.ts checks
// the session and names the writer)

export interface WriteMemoryAtPathInput {
  memoryStoreId: string;
  path: string;
  content: string;
  /** Replaces the memory's metadata on every write. */
  metadata: Record<string, string>;
  expectedContentSha256?: string | null;
}

/**
 * Creates or updates the memory at `path`. With `expectedContentSha256` and no memory at
 * the path, the precondition fails with currentContentSha256 "" (there is no content).
 */
export async function writeMemoryAtPath(db: Database, writer: Writer, input: WriteMemoryAtPathInput, now: Date): Promise<MemoryRecord> {
  const issues = new IssueList();
  checkPath(issues, ['path'], input.path);
  checkContent(issues, ['content'], input.content);
  checkExpectedSha(issues, input.expectedContentSha256);
  issues.throwIfAny();
  const expected = input.expectedContentSha256?.toLowerCase();

  const { memory } = await db.transaction(async (tx) => {
    await lockActiveStore(tx, writer.workspaceId, input.memoryStoreId);
    const current = await memoryAtPathLocked(tx, writer.workspaceId, input.memoryStoreId, input.path);
    if (!current) {
      if (expected !== undefined) throw preconditionFailed('');
      return insertMemoryLocked(tx, writer, input.memoryStoreId, input, now);
    }
    return updateMemoryLocked(tx, writer, current, { content: input.content, metadata: input.metadata }, expected, now);
  });
  return memory;
}

export async function deleteMemoryAtPath(
  db: Database,
  writer: Writer,
  input: { memoryStoreId: string; path: string; expectedContentSha256?: string | null },
  now: Date,
): Promise<DeletedMemory> {
  const issues = new IssueList();
  checkPath(issues, ['path'], input.path);
  checkExpectedSha(issues, input.expectedContentSha256);
  issues.throwIfAny();

  return db.transaction(async (tx) => {
    await lockActiveStore(tx, writer.workspaceId, input.memoryStoreId);
    const current = await memoryAtPathLocked(tx, writer.workspaceId, input.memoryStoreId, input.path);
    if (!current) throw new NotFoundError(`No memory at path "${input.path}".`);
    return deleteMemoryLocked(tx, writer, current, input.expectedContentSha256?.toLowerCase(), now);
  });
}
