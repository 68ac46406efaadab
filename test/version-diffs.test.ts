import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONTENT_MAX_BYTES, DIFF_MAX_CONTEXT_LINES, DIFF_MAX_EDIT_LINES } from '../src/domain/limits.js';
import { createMemory, createStore, deleteMemory, updateMemory, versionRows } from './support/builders.js';
import { useTestServer, type TestClient } from './support/server.js';

const server = useTestServer();

const DIFF_FIELDS = `additions deletions unified hunks { oldStart oldLines newStart newLines lines { kind text oldNumber newNumber } }`;

/** The memory's versions, oldest first, each with its number and its default diff. */
async function historyOf(client: TestClient, storeId: string, memoryId: string) {
  const response = await client.send({
    query: `query ($store: ID!, $memory: ID!) { memoryStore(id: $store) { versions(memoryId: $memory, first: 100) { edges { node { id number operation diff { ${DIFF_FIELDS} } } } } } }`,
    variables: { store: storeId, memory: memoryId },
  });
  expect(response.errors).toBeUndefined();
  return (response.data.memoryStore.versions.edges as { node: any }[]).map((edge) => edge.node).reverse();
}

async function diffOf(client: TestClient, versionId: string, against?: string | null, context?: number) {
  const response = await client.send({
    query: `query ($id: ID!, $against: ID, $context: Int!) { memoryVersion(id: $id) { diff(against: $against) { ${DIFF_FIELDS} unifiedWith: unified(context: $context) } } }`,
    variables: { id: versionId, against: against ?? null, context: context ?? 3 },
  });
  return response;
}

/** Applies `unified` to a file holding `older` with `git apply` (or `patch`), and returns the file's text afterwards. */
function applyPatch(tool: 'git' | 'patch', filePath: string, older: string | null, unified: string, options: { zeroContext?: boolean } = {}): string | null {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-diff-'));
  try {
    const target = path.join(directory, filePath);
    if (older !== null) {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, older, 'utf8');
    }
    fs.writeFileSync(path.join(directory, 'change.patch'), unified, 'utf8');
    const args =
      tool === 'git'
        ? ['apply', '--whitespace=nowarn', ...(options.zeroContext ? ['--unidiff-zero'] : []), 'change.patch']
        : ['-p1', '--binary', '-s', '-i', 'change.patch'];
    execFileSync(tool, args, { cwd: directory, stdio: 'pipe' });
    return fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : null;
  } finally {
    fs.rmSync(directory, { recursive: true, force: true });
  }
}

async function newStore() {
  const client = await server.newWorkspace();
  const store = await createStore(client);
  return { client, storeId: store.id };
}

describe('version numbers', () => {
  it('number the versions of a memory 1, 2, 3 … in commit order, stored with each version', async () => {
    const { client, storeId } = await newStore();
    const memory = await createMemory(client, storeId, { path: 'n.md', content: 'one\n' });
    await updateMemory(client, { id: memory.id, content: 'two\n' });
    await updateMemory(client, { id: memory.id, metadata: { k: 'v' } });
    await deleteMemory(client, memory.id);
    const history = await historyOf(client, storeId, memory.id);
    expect(history.map((version) => [version.number, version.operation])).toEqual([
      [1, 'CREATED'],
      [2, 'UPDATED'],
      [3, 'UPDATED'],
      [4, 'DELETED'],
    ]);
    const rows = await versionRows(server.db, client.workspaceId, storeId, memory.id);
    expect(rows.map((row) => [row.id, row.sequence])).toEqual(history.map((version) => [version.id, version.number]));
  });
});

describe('MemoryVersion.diff', () => {
  it('diffs a CREATED version against nothing: every line added, from /dev/null', async () => {
    const { client, storeId } = await newStore();
    const memory = await createMemory(client, storeId, { path: 'notes/a.md', content: 'alpha\nbeta\n' });
    const [created] = await historyOf(client, storeId, memory.id);
    expect(created.diff).toEqual({
      additions: 2,
      deletions: 0,
      unified: '--- /dev/null\n+++ b/notes/a.md\n@@ -0,0 +1,2 @@\n+alpha\n+beta\n',
      hunks: [
        {
          oldStart: 0,
          oldLines: 0,
          newStart: 1,
          newLines: 2,
          lines: [
            { kind: 'ADDED', text: 'alpha', oldNumber: null, newNumber: 1 },
            { kind: 'ADDED', text: 'beta', oldNumber: null, newNumber: 2 },
          ],
        },
      ],
    });
    // git apply creates the file from that.
    expect(applyPatch('git', 'notes/a.md', null, created.diff.unified)).toBe('alpha\nbeta\n');
  });

  it('diffs an UPDATED version against the previous one with numbered context, removed and added lines', async () => {
    const { client, storeId } = await newStore();
    const older = 'l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\n';
    const newer = 'l1\nl2\nl3\nl4 changed\nl5\nl6\nl7\nl8\nl9\n';
    const memory = await createMemory(client, storeId, { path: 'lines.md', content: older });
    await updateMemory(client, { id: memory.id, content: newer });
    const [, updated] = await historyOf(client, storeId, memory.id);
    expect(updated.diff.additions).toBe(2);
    expect(updated.diff.deletions).toBe(1);
    expect(updated.diff.hunks).toEqual([
      {
        oldStart: 1,
        oldLines: 8,
        newStart: 1,
        newLines: 9,
        lines: [
          { kind: 'CONTEXT', text: 'l1', oldNumber: 1, newNumber: 1 },
          { kind: 'CONTEXT', text: 'l2', oldNumber: 2, newNumber: 2 },
          { kind: 'CONTEXT', text: 'l3', oldNumber: 3, newNumber: 3 },
          { kind: 'REMOVED', text: 'l4', oldNumber: 4, newNumber: null },
          { kind: 'ADDED', text: 'l4 changed', oldNumber: null, newNumber: 4 },
          { kind: 'CONTEXT', text: 'l5', oldNumber: 5, newNumber: 5 },
          { kind: 'CONTEXT', text: 'l6', oldNumber: 6, newNumber: 6 },
          { kind: 'CONTEXT', text: 'l7', oldNumber: 7, newNumber: 7 },
          { kind: 'CONTEXT', text: 'l8', oldNumber: 8, newNumber: 8 },
          { kind: 'ADDED', text: 'l9', oldNumber: null, newNumber: 9 },
        ],
      },
    ]);
    expect(updated.diff.unified.startsWith('--- a/lines.md\n+++ b/lines.md\n@@ -1,8 +1,9 @@\n')).toBe(true);
    // Zero lines of context: two hunks, still applicable.
    const zero = (await diffOf(client, updated.id, null, 0)).data.memoryVersion.diff.unifiedWith;
    expect(zero).toBe('--- a/lines.md\n+++ b/lines.md\n@@ -4,1 +4,1 @@\n-l4\n+l4 changed\n@@ -8,0 +9,1 @@\n+l9\n');
    expect(applyPatch('patch', 'lines.md', older, zero)).toBe(newer);
    expect(applyPatch('git', 'lines.md', older, zero, { zeroContext: true })).toBe(newer);
  });

  it('diffs a DELETED version as the file going away: every line removed, to /dev/null', async () => {
    const { client, storeId } = await newStore();
    const memory = await createMemory(client, storeId, { path: 'gone.md', content: 'x\ny' });
    await deleteMemory(client, memory.id);
    const [, deleted] = await historyOf(client, storeId, memory.id);
    expect(deleted.operation).toBe('DELETED');
    expect(deleted.diff.additions).toBe(0);
    expect(deleted.diff.deletions).toBe(2);
    expect(deleted.diff.unified).toBe('--- a/gone.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n\\ No newline at end of file\n');
    expect(applyPatch('git', 'gone.md', 'x\ny', deleted.diff.unified)).toBeNull();
  });

  it('diffs across two memories with `against`, naming each side by its own path', async () => {
    const { client, storeId } = await newStore();
    const left = await createMemory(client, storeId, { path: 'left.md', content: 'same\nleft\n' });
    const right = await createMemory(client, storeId, { path: 'right.md', content: 'same\nright\n' });
    const [leftVersion] = await historyOf(client, storeId, left.id);
    const [rightVersion] = await historyOf(client, storeId, right.id);
    const response = await diffOf(client, rightVersion.id, leftVersion.id);
    expect(response.errors).toBeUndefined();
    const diff = response.data.memoryVersion.diff;
    expect(diff.unified).toBe('--- a/left.md\n+++ b/right.md\n@@ -1,2 +1,2 @@\n same\n-left\n+right\n');
    expect([diff.additions, diff.deletions]).toEqual([1, 1]);
    // Against itself: nothing changes.
    const itself = (await diffOf(client, rightVersion.id, rightVersion.id)).data.memoryVersion.diff;
    expect(itself).toMatchObject({ additions: 0, deletions: 0, unified: '', hunks: [] });
  });

  it('keeps CRLF line endings and a missing final newline, and git apply reproduces the newer text', async () => {
    const { client, storeId } = await newStore();
    const older = 'one\r\ntwo\r\nthree';
    const newer = 'one\r\nTWO\r\nthree\r\nfour';
    const memory = await createMemory(client, storeId, { path: 'crlf.txt', content: older });
    await updateMemory(client, { id: memory.id, content: newer });
    const [, updated] = await historyOf(client, storeId, memory.id);
    expect(updated.diff.hunks[0].lines).toEqual([
      { kind: 'CONTEXT', text: 'one\r', oldNumber: 1, newNumber: 1 },
      { kind: 'REMOVED', text: 'two\r', oldNumber: 2, newNumber: null },
      { kind: 'REMOVED', text: 'three', oldNumber: 3, newNumber: null },
      { kind: 'ADDED', text: 'TWO\r', oldNumber: null, newNumber: 2 },
      { kind: 'ADDED', text: 'three\r', oldNumber: null, newNumber: 3 },
      { kind: 'ADDED', text: 'four', oldNumber: null, newNumber: 4 },
    ]);
    expect(updated.diff.unified).toContain('-three\n\\ No newline at end of file\n');
    expect(updated.diff.unified.endsWith('+four\n\\ No newline at end of file\n')).toBe(true);
    expect(applyPatch('git', 'crlf.txt', older, updated.diff.unified)).toBe(newer);
    expect(applyPatch('patch', 'crlf.txt', older, updated.diff.unified)).toBe(newer);
  });

  it('diffs 100 KiB contents, near and far apart, exactly', async () => {
    const { client, storeId } = await newStore();
    const lines = (count: number, label: (index: number) => string) => Array.from({ length: count }, (_, index) => label(index)).join('\n');
    // 100 KiB of 20-byte lines; then every 50th line changed; then every line changed.
    const base = `${lines(5120, (index) => `line ${String(index).padStart(14, '0')}`)}\n`;
    const near = base.replace(/line (\d+)50\n/g, 'LINE $150\n');
    const far = base.replaceAll('line', 'LINE');
    expect(Buffer.byteLength(base)).toBe(CONTENT_MAX_BYTES);
    const memory = await createMemory(client, storeId, { path: 'big.txt', content: base });
    await updateMemory(client, { id: memory.id, content: near });
    await updateMemory(client, { id: memory.id, content: far });
    const started = Date.now();
    const [, nearVersion, farVersion] = await historyOf(client, storeId, memory.id);
    expect(Date.now() - started).toBeLessThan(5_000);
    const changedLines = base.split('\n').filter((line) => line.endsWith('50')).length;
    expect([nearVersion.diff.additions, nearVersion.diff.deletions]).toEqual([changedLines, changedLines]);
    expect(applyPatch('git', 'big.txt', base, nearVersion.diff.unified)).toBe(near);
    // More than DIFF_MAX_EDIT_LINES apart: one hunk replacing every line, still exact.
    expect(2 * 5120).toBeGreaterThan(DIFF_MAX_EDIT_LINES);
    expect(farVersion.diff.hunks).toHaveLength(1);
    expect([farVersion.diff.additions, farVersion.diff.deletions]).toEqual([5120, 5120]);
    expect(applyPatch('git', 'big.txt', near, farVersion.diff.unified)).toBe(far);
  });

  it('is null when either side is redacted or `against` is not a visible version; a bad context is INVALID_REQUEST', async () => {
    const { client, storeId } = await newStore();
    const memory = await createMemory(client, storeId, { path: 'r.md', content: 'a\n' });
    await updateMemory(client, { id: memory.id, content: 'b\n' });
    await updateMemory(client, { id: memory.id, content: 'c\n' });
    const [first, second, third] = await historyOf(client, storeId, memory.id);
    const redact = await client.send({ query: 'mutation ($id: ID!) { redactMemoryVersion(input: { id: $id }) { __typename } }', variables: { id: second.id } });
    expect(redact.data.redactMemoryVersion.__typename).toBe('RedactMemoryVersionSuccess');
    expect((await diffOf(client, second.id)).data.memoryVersion.diff).toBeNull();
    expect((await diffOf(client, third.id)).data.memoryVersion.diff).toBeNull();
    expect((await diffOf(client, third.id, first.id)).data.memoryVersion.diff.unified).toBe('--- a/r.md\n+++ b/r.md\n@@ -1,1 +1,1 @@\n-a\n+c\n');

    const other = await newStore();
    const foreign = await createMemory(other.client, other.storeId, { path: 'r.md', content: 'secret\n' });
    const [foreignVersion] = await historyOf(other.client, other.storeId, foreign.id);
    for (const against of [foreignVersion.id, 'memver_00000000000000000000', 'not-an-id', memory.id]) {
      const response = await diffOf(client, third.id, against);
      expect(response.errors, against).toBeUndefined();
      expect(response.data.memoryVersion.diff, against).toBeNull();
    }
    for (const context of [-1, DIFF_MAX_CONTEXT_LINES + 1]) {
      const response = await diffOf(client, third.id, first.id, context);
      expect(response.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
    }
  });

  it('patches the older text into the newer one for random text pairs, with git apply and patch (property)', async () => {
    const { client, storeId } = await newStore();
    const line = fc.array(fc.constantFrom('a', 'b', 'c', ' ', 'é', '😀', '\t'), { maxLength: 6 }).map((characters) => characters.join(''));
    const text = fc
      .tuple(fc.array(fc.tuple(line, fc.constantFrom('\n', '\r\n')), { maxLength: 12 }), fc.option(line, { nil: undefined }))
      .map(([body, last]) => body.map(([content, end]) => content + end).join('') + (last ?? ''));
    let counter = 0;
    await fc.assert(
      fc.asyncProperty(text, text, fc.constantFrom(0, 1, 3), async (older, newer, context) => {
        fc.pre(older !== newer);
        counter += 1;
        const memory = await createMemory(client, storeId, { path: `prop/${counter}.txt`, content: older });
        await updateMemory(client, { id: memory.id, content: newer });
        const [, updated] = await historyOf(client, storeId, memory.id);
        const unified = (await diffOf(client, updated.id, null, context)).data.memoryVersion.diff.unifiedWith;
        expect(applyPatch('patch', `prop/${counter}.txt`, older, unified)).toBe(newer);
        expect(applyPatch('git', `prop/${counter}.txt`, older, unified, { zeroContext: context === 0 })).toBe(newer);
      }),
      { numRuns: 60, seed: 15 },
    );
  });
});
