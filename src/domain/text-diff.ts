import { structuredPatch, type StructuredPatchHunk } from 'diff';
import { DIFF_DEFAULT_CONTEXT_LINES, DIFF_MAX_CONTEXT_LINES, DIFF_MAX_EDIT_LINES } from './limits.js';
import { InvalidRequestError } from './errors.js';

/**
 * Line diffs between two texts (MemoryVersion.diff), computed by the `diff` library
 * (Myers' algorithm). Lines end at "\n"; a "\r" before it belongs to the line, so a change
 * of line endings shows as a change of the lines. A text that does not end in "\n" has a
 * last line without one, marked in the unified text as `\ No newline at end of file`.
 */

export type DiffLineKind = 'CONTEXT' | 'ADDED' | 'REMOVED';

export interface DiffLine {
  kind: DiffLineKind;
  /** The line without its "\n". */
  text: string;
  oldNumber: number | null;
  newNumber: number | null;
}

export interface DiffHunk {
  /** As in the hunk header `@@ -oldStart,oldLines +newStart,newLines @@`: a side with no lines starts at the line before. */
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

/** One side of a diff: its text, and the name the unified text gives it (null: the side does not exist, `/dev/null`). */
export interface DiffSide {
  text: string;
  path: string | null;
}

export interface TextDiff {
  additions: number;
  deletions: number;
  hunks: DiffHunk[];
  /** The unified diff with `context` lines around each change: what `patch` and `git apply` read. */
  unified(context?: number): string;
}

const NO_NEWLINE = '\\ No newline at end of file';

function hunksOf(older: DiffSide, newer: DiffSide, context: number): StructuredPatchHunk[] {
  const patch = structuredPatch('', '', older.text, newer.text, undefined, undefined, { context, maxEditLength: DIFF_MAX_EDIT_LINES });
  if (patch) return patch.hunks;
  // Too many differing lines to align: one hunk replaces every line, which is still exact.
  const removed = linesOf(older.text);
  const added = linesOf(newer.text);
  return [
    {
      oldStart: 1,
      oldLines: removed.count,
      newStart: 1,
      newLines: added.count,
      lines: [...removed.lines.map((line) => (line === NO_NEWLINE ? line : `-${line}`)), ...added.lines.map((line) => (line === NO_NEWLINE ? line : `+${line}`))],
    },
  ];
}

/** A text's lines as a hunk writes them (without "\n"), with the marker after a last line that has none. */
function linesOf(text: string): { lines: string[]; count: number } {
  if (text === '') return { lines: [], count: 0 };
  const lines = text.split('\n');
  if (lines.at(-1) === '') {
    lines.pop();
    return { lines, count: lines.length };
  }
  return { lines: [...lines, NO_NEWLINE], count: lines.length };
}

/** The header's start of a side: the standard writes the line before when the side is empty. */
const headerStart = (start: number, lines: number) => (lines === 0 ? start - 1 : start);

function toHunk(hunk: StructuredPatchHunk): DiffHunk {
  let oldNumber = hunk.oldStart;
  let newNumber = hunk.newStart;
  const lines: DiffLine[] = [];
  for (const line of hunk.lines) {
    const marker = line[0];
    const text = line.slice(1);
    if (marker === '\\') continue;
    if (marker === '+') lines.push({ kind: 'ADDED', text, oldNumber: null, newNumber: newNumber++ });
    else if (marker === '-') lines.push({ kind: 'REMOVED', text, oldNumber: oldNumber++, newNumber: null });
    else lines.push({ kind: 'CONTEXT', text, oldNumber: oldNumber++, newNumber: newNumber++ });
  }
  return {
    oldStart: headerStart(hunk.oldStart, hunk.oldLines),
    oldLines: hunk.oldLines,
    newStart: headerStart(hunk.newStart, hunk.newLines),
    newLines: hunk.newLines,
    lines,
  };
}

function unifiedText(older: DiffSide, newer: DiffSide, hunks: StructuredPatchHunk[]): string {
  if (hunks.length === 0) return '';
  const out = [`--- ${older.path === null ? '/dev/null' : `a/${older.path}`}`, `+++ ${newer.path === null ? '/dev/null' : `b/${newer.path}`}`];
  for (const hunk of hunks) {
    out.push(`@@ -${headerStart(hunk.oldStart, hunk.oldLines)},${hunk.oldLines} +${headerStart(hunk.newStart, hunk.newLines)},${hunk.newLines} @@`);
    for (const line of hunk.lines) out.push(line.startsWith('\\') ? NO_NEWLINE : line);
  }
  return `${out.join('\n')}\n`;
}

export function checkContextLines(context: number): void {
  if (!Number.isInteger(context) || context < 0 || context > DIFF_MAX_CONTEXT_LINES) {
    const message = `"context" must be between 0 and ${DIFF_MAX_CONTEXT_LINES} (got ${context}).`;
    throw new InvalidRequestError([{ field: ['context'], message }], message);
  }
}

/** The line diff from `older` to `newer`. */
export function diffTexts(older: DiffSide, newer: DiffSide): TextDiff {
  const hunks = hunksOf(older, newer, DIFF_DEFAULT_CONTEXT_LINES);
  let additions = 0;
  let deletions = 0;
  for (const hunk of hunks) {
    for (const line of hunk.lines) {
      if (line[0] === '+') additions += 1;
      else if (line[0] === '-') deletions += 1;
    }
  }
  return {
    additions,
    deletions,
    hunks: hunks.map(toHunk),
    unified: (context = DIFF_DEFAULT_CONTEXT_LINES) => {
      checkContextLines(context);
      return unifiedText(older, newer, context === DIFF_DEFAULT_CONTEXT_LINES ? hunks : hunksOf(older, newer, context));
    },
  };
}
