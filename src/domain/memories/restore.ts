import { and, eq, max } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { memories, memoryVersions } from '../../db/schema.js';
import { assertCan } from '../access.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { recordEvent } from '../events.js';
import { isIdOfKind } from '../ids.js';
import { checkSha256, IssueList } from '../validation.js';
import { versionValuesFor, type MemoryVersionRecord } from '../versions.js';
import { writerOf, type Viewer } from '../viewer.js';
import { adjustStoreCounters, lockActiveStore, memoryAtPathLocked, preconditionFailed, together, updateMemoryLocked, versionTime } from './locked-writes.js';
import type { MemoryRecord } from './records.js';

export interface RestoreMemoryVersionInput {
  id: string;
  expectedContentSha256?: string | null;
}

/** What a restore leaves: the memory as it is now, and the version holding that state. */
export interface RestoredMemory {
  memory: MemoryRecord;
  version: MemoryVersionRecord;
}

const versionNotFound = (id: string) => new NotFoundError(`No memory version with id "${id}".`);

/**
 * Brings a version's content back (API.md §10), as one memory write: in one transaction
 * that first locks the store, as every memory write does, so a restore and any other write
 * of the store run one after the other and the counters stay exact.
 * - Its memory is live: the content becomes the memory's (path and metadata stay), an
 *   UPDATED version; content already equal writes nothing; `expectedContentSha256` works
 *   as in updateMemory.
 * - Its memory was deleted: the memory comes back under its original id (and its first
 *   creation time) at the version's path, with that content and empty metadata: a CREATED
 *   version numbered after the DELETED one. The path held by another live memory is a
 *   CONFLICT; `expectedContentSha256` fails (a deleted memory has no content: "").
 * - A redacted version or an archived store is a CONFLICT.
 * The written version names its source in `restoredFromVersionId`.
 */
export async function restoreMemoryVersion(db: Database, viewer: Viewer, input: RestoreMemoryVersionInput, now: Date): Promise<RestoredMemory> {
  assertCan(viewer, { type: 'memories.write' });
  const writer = writerOf(viewer);
  const issues = new IssueList();
  if (input.expectedContentSha256 === null) issues.add(['expectedContentSha256'], 'must not be null: leave the field out instead');
  if (typeof input.expectedContentSha256 === 'string') checkSha256(issues, ['expectedContentSha256'], input.expectedContentSha256);
  issues.throwIfAny();
  const expected = input.expectedContentSha256?.toLowerCase();
  if (!isIdOfKind(input.id, 'memoryVersion')) throw versionNotFound(input.id);
  const workspaceId = writer.workspaceId;
  const versionById = and(eq(memoryVersions.workspaceId, workspaceId), eq(memoryVersions.id, input.id));

  return db.transaction(async (tx) => {
    // A version never changes stores: its store is known before the lock.
    const [located] = await tx.select({ memoryStoreId: memoryVersions.memoryStoreId }).from(memoryVersions).where(versionById);
    if (!located) throw versionNotFound(input.id);
    await lockActiveStore(tx, workspaceId, located.memoryStoreId);
    // Read under the row's lock: a redaction committing meanwhile is seen (it cannot start after).
    const [source] = await tx.select().from(memoryVersions).where(versionById).for('update');
    if (!source) throw versionNotFound(input.id);
    if (source.redactedAt !== null || source.content === null) throw new ConflictError('The memory version is redacted: its content cannot be restored.', 'already_redacted');

    const [current] = await tx
      .select()
      .from(memories)
      .where(and(eq(memories.workspaceId, workspaceId), eq(memories.id, source.memoryId)));
    if (current) {
      const { memory, version } = await updateMemoryLocked(tx, writer, current, { content: source.content }, expected, now, source.id);
      if (version) return { memory, version: { ...version, content: source.content } };
      // The memory holds that content already: nothing is written, and its newest version answers.
      const [newest] = await tx
        .select()
        .from(memoryVersions)
        .where(and(eq(memoryVersions.workspaceId, workspaceId), eq(memoryVersions.memoryId, memory.id), eq(memoryVersions.sequence, memory.versionSequence)));
      return { memory, version: newest! };
    }

    if (expected !== undefined) throw preconditionFailed('');
    const taken = await memoryAtPathLocked(tx, workspaceId, source.memoryStoreId, source.path);
    if (taken) throw new ConflictError(`Another memory lives at path "${source.path}" now: move or delete it first.`, 'path_conflict');
    const [history] = await tx
      .select({ newest: max(memoryVersions.sequence), newestAt: max(memoryVersions.createdAt) })
      .from(memoryVersions)
      .where(and(eq(memoryVersions.workspaceId, workspaceId), eq(memoryVersions.memoryId, source.memoryId)));
    const [first] = await tx
      .select({ createdAt: memoryVersions.createdAt })
      .from(memoryVersions)
      .where(and(eq(memoryVersions.workspaceId, workspaceId), eq(memoryVersions.memoryId, source.memoryId), eq(memoryVersions.sequence, 1)));
    const restoredAt = versionTime(now, history?.newestAt ?? undefined);
    const sequence = (history?.newest ?? 0) + 1;
    const row = {
      workspaceId,
      id: source.memoryId,
      memoryStoreId: source.memoryStoreId,
      path: source.path,
      content: source.content,
      contentSizeBytes: source.contentSizeBytes,
      contentSha256: source.contentSha256,
      metadata: {},
      versionSequence: sequence,
      createdAt: first?.createdAt ?? restoredAt,
      updatedAt: restoredAt,
    };
    const versionRow = { ...versionValuesFor(row, 'created', sequence, writer, restoredAt), restoredFromVersionId: source.id };
    const [[memory], [version]] = await together([
      tx.insert(memories).values(row).returning(),
      tx.insert(memoryVersions).values(versionRow).returning(),
      adjustStoreCounters(tx, workspaceId, source.memoryStoreId, 1, source.contentSizeBytes),
      // Back under its original id: to a stream, the memory is created again.
      recordEvent(tx, { workspaceId, kind: 'memory_created', memoryStoreId: source.memoryStoreId, memoryId: row.id, memoryVersionId: versionRow.id, path: row.path, occurredAt: restoredAt }),
    ] as const);
    return { memory: memory!, version: version! };
  });
}
