import { ConflictError, InvalidRequestError, NotFoundError, PreconditionFailedError } from '../../domain/errors.js';
import { restoreMemoryVersion, type RestoredMemory } from '../../domain/memories/restore.js';
import { DIFF_DEFAULT_CONTEXT_LINES, DIFF_FIELD_COST, DIFF_MAX_CONTEXT_LINES, DIFF_MAX_EDIT_LINES } from '../../domain/limits.js';
import { diffTexts, type DiffHunk, type DiffLine, type TextDiff } from '../../domain/text-diff.js';
import type { MemoryVersionSummary } from '../../domain/versions.js';
import type { Context } from '../../context.js';
import { builder } from '../builder.js';
import { versionNumberKey } from '../loaders.js';
import { SPENDS_OWN_BUDGET } from '../response-budget.js';
import { mutationResult } from '../errors.js';
import { MemoryRef, MemoryVersionRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// MemoryVersion.diff

const DiffLineKindEnum = builder.enumType('DiffLineKind', {
  description: 'What a line of a diff is.',
  values: {
    CONTEXT: { description: 'Unchanged: in both texts.' },
    ADDED: { description: 'Only in the newer text.' },
    REMOVED: { description: 'Only in the older text.' },
  } as const,
});

const DiffLineRef = builder.objectRef<DiffLine>('DiffLine').implement({
  description: 'One line of a hunk.',
  fields: (t) => ({
    kind: t.field({ type: DiffLineKindEnum, description: 'Unchanged, added or removed.', resolve: (line) => line.kind }),
    text: t.exposeString('text', { description: 'The line without its "\\n" (a "\\r" before it is part of the line: a change of line endings changes the line).' }),
    oldNumber: t.exposeInt('oldNumber', { nullable: true, description: 'Its number (from 1) in the older text; null for an added line.' }),
    newNumber: t.exposeInt('newNumber', { nullable: true, description: 'Its number (from 1) in the newer text; null for a removed line.' }),
  }),
});

const DiffHunkRef = builder.objectRef<DiffHunk>('DiffHunk').implement({
  description: `A run of changed lines with ${DIFF_DEFAULT_CONTEXT_LINES} unchanged lines of context around it, as in a unified diff's \`@@ -oldStart,oldLines +newStart,newLines @@\` header.`,
  fields: (t) => ({
    oldStart: t.exposeInt('oldStart', { description: 'The first line of the hunk in the older text (from 1); when the hunk has no old lines, the line after which it inserts (0: at the start).' }),
    oldLines: t.exposeInt('oldLines', { description: 'How many lines of the older text the hunk covers (context and removed lines).' }),
    newStart: t.exposeInt('newStart', { description: 'The first line of the hunk in the newer text (from 1); when the hunk has no new lines, the line after which it removed (0: at the start).' }),
    newLines: t.exposeInt('newLines', { description: 'How many lines of the newer text the hunk covers (context and added lines).' }),
    lines: t.field({ type: [DiffLineRef], description: 'Its lines in order.', resolve: (hunk) => hunk.lines }),
  }),
});

const TextDiffRef = builder.objectRef<TextDiff>('TextDiff').implement({
  description: `A line diff between two texts. Two texts differing in more than ${DIFF_MAX_EDIT_LINES} added and removed lines are diffed as one hunk that replaces every line.`,
  fields: (t) => ({
    additions: t.exposeInt('additions', { description: 'Lines added.' }),
    deletions: t.exposeInt('deletions', { description: 'Lines removed.' }),
    unified: t.string({
      description: `The diff as standard unified-diff text, which \`patch\` and \`git apply\` accept: \`--- a/<older path>\` and \`+++ b/<newer path>\` (\`/dev/null\` for a side that does not exist: before a memory's first version, after a DELETED one), then the hunks, with \`\\\\ No newline at end of file\` after a last line without one. "" when the texts are equal.`,
      args: {
        context: t.arg.int({
          defaultValue: DIFF_DEFAULT_CONTEXT_LINES,
          required: true,
          description: `Unchanged lines shown around each change: 0–${DIFF_MAX_CONTEXT_LINES}.`,
        }),
      },
      resolve: (diff, { context }) => diff.unified(context),
    }),
    hunks: t.field({ type: [DiffHunkRef], description: `The changes, with ${DIFF_DEFAULT_CONTEXT_LINES} lines of context.`, resolve: (diff) => diff.hunks }),
  }),
});

/** A version as one side of a diff: its text and path, or no file at all after a DELETED version. */
function sideOf(version: MemoryVersionSummary, content: string) {
  return version.operation === 'deleted' ? { text: '', path: null } : { text: content, path: version.path };
}

async function contentOf(version: MemoryVersionSummary, context: Context): Promise<string | null> {
  if (version.redactedAt !== null) return null;
  return version.content !== undefined ? version.content : await context.loaders.versionContent.load(version.id);
}

builder.objectFields(MemoryVersionRef, (t) => ({
  diff: t.field({
    type: TextDiffRef,
    nullable: true,
    description:
      'The line diff from `against` to this version. Without `against`: from the previous version of the same memory, or from nothing (empty text, `/dev/null`) for number 1. ' +
      'A version stands for the memory as it was after it: its content, or no file at all for a DELETED version (whose `content` still holds what was deleted), so a DELETED version\'s diff removes every line and the CREATED version of a restored memory adds every line. ' +
      `Null when either side is redacted, or \`against\` is not a version of the caller's workspace. It costs what two \`content\` selections cost (${DIFF_FIELD_COST}), and both texts count toward the bytes an answer may carry.`,
    args: {
      against: t.arg.id({ description: 'The `memver_` id of the older side: any version of the workspace (of this memory or another). Default: the previous version.' }),
    },
    complexity: DIFF_FIELD_COST,
    extensions: SPENDS_OWN_BUDGET,
    resolve: async (version, { against }, context) => {
      if (version.redactedAt !== null) return null;
      let older: MemoryVersionSummary | null = null;
      if (against != null) {
        older = await context.loaders.memoryVersion.load(against);
        if (!older) return null;
      } else if (version.sequence > 1) {
        older = await context.loaders.versionByNumber.load(versionNumberKey(version.memoryId, version.sequence - 1));
        if (!older) return null;
      }
      if (older && older.redactedAt !== null) return null;
      // Spent before loading, as `content` does: texts past the budget are never read.
      context.budget.spend(version.contentSizeBytes + (older?.contentSizeBytes ?? 0));
      const [newerText, olderText] = await Promise.all([contentOf(version, context), older ? contentOf(older, context) : '']);
      if (newerText === null || olderText === null) return null;
      return diffTexts(older ? sideOf(older, olderText) : { text: '', path: null }, sideOf(version, newerText));
    },
  }),
}));

// ---------------------------------------------------------------------------------------
// MemoryVersion.restoredFrom and restoreMemoryVersion

builder.objectFields(MemoryVersionRef, (t) => ({
  restoredFrom: t.field({
    type: MemoryVersionRef,
    nullable: true,
    description: 'The version whose content restoreMemoryVersion brought back with this one; null on every other version.',
    resolve: (version, _args, context) => (version.restoredFromVersionId === null ? null : context.loaders.memoryVersion.load(version.restoredFromVersionId)),
  }),
}));

const RestoreMemoryVersionInput = builder.inputType('RestoreMemoryVersionInput', {
  description: 'The version whose content to bring back.',
  fields: (t) => ({
    id: t.id({ required: true, description: 'The `memver_` id of the version.' }),
    expectedContentSha256: t.string({
      description:
        'Restore only if the live memory\'s content still has this SHA-256 (64 hex digits), as in updateMemory: otherwise PreconditionFailedError, unless the content already equals the version\'s. For a deleted memory it always fails, with currentContentSha256 "" (there is no content).',
    }),
  }),
});

const RestoreMemoryVersionSuccess = builder.objectRef<RestoredMemory>('RestoreMemoryVersionSuccess').implement({
  description: 'The version\'s content is the memory\'s content again.',
  fields: (t) => ({
    memory: t.field({ type: MemoryRef, description: 'The memory as it is now (under its original id).', resolve: (result) => result.memory }),
    version: t.field({
      type: MemoryVersionRef,
      description: 'The version the restore wrote (its restoredFrom is the restored version); when the content already was the version\'s, nothing is written and this is the memory\'s newest version.',
      resolve: (result) => result.version,
    }),
  }),
});

builder.mutationField('restoreMemoryVersion', (t) =>
  t.field({
    type: RestoreMemoryVersionSuccess,
    description:
      'Brings a version\'s content back. Its memory is live: the content becomes the memory\'s (path and metadata stay), writing an UPDATED version; content already equal writes nothing. ' +
      'Its memory was deleted: the memory comes back under its original id (and first creation time) at the version\'s path, with that content and empty metadata, writing a CREATED version numbered after the DELETED one; the path held by another live memory is a CONFLICT. ' +
      'A redacted version or an archived store is a CONFLICT. The store\'s entryCount and totalSize change in the same transaction.',
    args: { input: t.arg({ type: RestoreMemoryVersionInput, required: true, description: 'The version to restore.' }) },
    errors: mutationResult('restoreMemoryVersion', [InvalidRequestError, NotFoundError, ConflictError, PreconditionFailedError]),
    resolve: (_root, { input }, { db, viewer, now }) => restoreMemoryVersion(db, viewer, input, now),
  }),
);
