import { createHash, randomBytes } from 'node:crypto';
import { asc, eq } from 'drizzle-orm';
import { expect } from 'vitest';
import type { DatabaseHandle } from '../../src/db/client.js';
import { memories, memoryVersions } from '../../src/db/schema.js';
import { invariantViolations } from './invariants.js';

/**
 * Concurrent writers over HTTP against a real server process, with a log of every request
 * they sent and what became of it, held against the database after each interruption
 * (test/crash-safety.test.ts kills the server; test/connection-drops.test.ts cuts its
 * database connections). API.md §6: every acknowledged write is present, every write whose
 * answer never came (or came as DATABASE_UNAVAILABLE) is whole or absent and stays so, and
 * the invariants hold.
 */

export const WRITERS = 6;
/** One memory at this path in each store is updated by every writer, so that they race on expectedContentSha256. */
const SHARED_PATH = 'shared/hot.md';

export type Outcome = 'pending' | 'acknowledged' | 'rejected' | 'cut off';

/** One request a writer sent, and what became of it as far as the client knows. */
export interface Write {
  operation: 'create' | 'update' | 'delete';
  cycle: number;
  memoryStoreId: string;
  path: string;
  /** Unknown for a create until it is acknowledged (or, when cut off, found in the database). */
  memoryId: string | null;
  /** Update and delete: the sha the request was conditional on. */
  expectedSha256: string | null;
  /** Create and update: the sha of the content sent (every content is unique). */
  contentSha256: string | null;
  outcome: Outcome;
  /** A cut-off write: whether the first check after its kill found it applied. */
  applied?: boolean;
}

export interface LiveMemory {
  id: string;
  memoryStoreId: string;
  path: string;
  contentSha256: string;
  contentSizeBytes: number;
}

export interface CycleReport {
  acknowledged: number;
  rejected: number;
  cutOff: number;
  cutOffApplied: number;
  /** Of the cut-off writes: those answered 503 DATABASE_UNAVAILABLE (connection drops). */
  unavailable: number;
}

/** What interrupts the writers once they are under way: a kill of the server, or a cut of its database connections. */
export type Interruption =
  | { kind: 'kill'; begin(): void; settled(): Promise<unknown> }
  | { kind: 'drop'; begin(): Promise<void>; settled?: () => Promise<unknown>; recoveredAfter: number };

const CREATE = `mutation ($input: CreateMemoryInput!) {
  createMemory(input: $input) { __typename ... on CreateMemorySuccess { memory { id contentSha256 } } ... on Error { code } }
}`;
const UPDATE = `mutation ($input: UpdateMemoryInput!) {
  updateMemory(input: $input) { __typename ... on UpdateMemorySuccess { memory { id contentSha256 } } ... on PreconditionFailedError { currentContentSha256 } ... on Error { code } }
}`;
const DELETE = `mutation ($input: DeleteMemoryInput!) {
  deleteMemory(input: $input) { __typename ... on DeleteMemorySuccess { deletedMemoryId } ... on Error { code } }
}`;
const CREATE_STORE = `mutation ($name: String!) {
  createMemoryStore(input: { name: $name }) { __typename ... on CreateMemoryStoreSuccess { memoryStore { id } } }
}`;
const STORE_CONTENTS = `query ($id: ID!, $after: String) {
  memoryStore(id: $id) {
    entryCount
    totalSize
    memories(first: 100, after: $after) {
      pageInfo { hasNextPage endCursor }
      edges { node { id path contentSha256 contentSizeBytes latestVersion { contentSha256 operation } } }
    }
  }
}`;

async function post(url: string, token: string, query: string, variables: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  // Reading the whole body is part of the acknowledgement: a body cut short by the kill throws.
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) };
}

function sha256(content: string): string {
  return createHash('sha256').update(content, 'utf8').digest('hex');
}

function randomInteger(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1));
}

/** Unique content: mostly small, one in eight between 40 and 95 KB, with some multi-byte characters. */
function uniqueContent(label: string): string {
  const size = Math.random() < 0.125 ? randomInteger(40_000, 95_000) : randomInteger(50, 3_000);
  const head = `${label} ${randomBytes(8).toString('hex')} — ünïcødé ✓ 🧠\n`;
  return head + 'crash-safety line\n'.repeat(Math.ceil(size / 18)).slice(0, size);
}

/** Everything the test keeps between cycles: the request log and the state it last verified. */
export class WriteStory {
  readonly log: Write[] = [];
  readonly reports: CycleReport[] = [];
  storeIds: string[] = [];
  live: LiveMemory[] = [];

  constructor(
    readonly workspaceId: string,
    readonly token: string,
    readonly directDatabase: () => Promise<{ handle: DatabaseHandle; done: () => Promise<void> }>,
  ) {}

  /** Creates the two stores and their shared memories (acknowledged before any kill). */
  async seed(url: string): Promise<void> {
    for (const name of ['crash store one', 'crash store two']) {
      const created = await post(url, this.token, CREATE_STORE, { name });
      expect(created.body.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
      this.storeIds.push(created.body.data.createMemoryStore.memoryStore.id);
    }
    for (const memoryStoreId of this.storeIds) {
      const content = uniqueContent('shared seed');
      const write: Write = { operation: 'create', cycle: 0, memoryStoreId, path: SHARED_PATH, memoryId: null, expectedSha256: null, contentSha256: sha256(content), outcome: 'pending' };
      this.log.push(write);
      const created = await post(url, this.token, CREATE, { input: { memoryStoreId, path: SHARED_PATH, content } });
      expect(created.body.data.createMemory.__typename).toBe('CreateMemorySuccess');
      write.outcome = 'acknowledged';
      write.memoryId = created.body.data.createMemory.memory.id;
      this.live.push({ id: write.memoryId!, memoryStoreId, path: SHARED_PATH, contentSha256: write.contentSha256!, contentSizeBytes: Buffer.byteLength(content) });
    }
  }

  /**
   * Runs the writers until `interruptAfter` writes are acknowledged while at least three
   * requests are in flight, then interrupts the server a moment later (a few milliseconds of
   * jitter, so that it meets requests at different stages: parsed, inside the transaction,
   * committed but not yet answered) while the writers keep going.
   *
   * - `kill`: the server is gone; each writer stops at its first failed request.
   * - `drop`: the server's database connections are cut; the server must live on. Requests
   *   may be answered 503 DATABASE_UNAVAILABLE (their writes are then whole or absent, like
   *   those cut off by a kill); every other answer must be the usual one, and the writers go
   *   on until `recoveredAfter` more writes are acknowledged: the server recovered by itself.
   */
  async writeUntilInterrupted(url: string, cycle: number, interruption: Interruption): Promise<CycleReport> {
    const interruptAfter = randomInteger(10, 35);
    const report: CycleReport = { acknowledged: 0, rejected: 0, cutOff: 0, cutOffApplied: 0, unavailable: 0 };
    let inFlight = 0;
    let scheduled = false;
    let interrupted = false;
    let acknowledgedSince = 0;
    let interruptionDone: Promise<void> = Promise.resolve();
    const interrupt = () => {
      if (interrupted) return;
      interrupted = true;
      interruptionDone = Promise.resolve(interruption.begin());
    };
    const schedule = () => {
      scheduled = true;
      setTimeout(interrupt, randomInteger(0, 15));
    };
    const stop = () => (interruption.kind === 'kill' ? interrupted : interrupted && acknowledgedSince >= interruption.recoveredAfter);

    const writer = async (index: number) => {
      const prefix = `writer-${index}/`;
      type Target = Omit<LiveMemory, 'contentSizeBytes'>;
      const targets = (memories: LiveMemory[]) => new Map<string, Target>(memories.map(({ contentSizeBytes: _, ...target }) => [target.id, target]));
      // Each writer creates, updates and deletes its own memories, one request at a time.
      const own = targets(this.live.filter((memory) => memory.path.startsWith(prefix)));
      // The shared memories are updated by every writer. This writer's idea of their shas: it
      // learns newer ones from its successes and from PRECONDITION_FAILED.
      const shared = targets(this.live.filter((memory) => memory.path === SHARED_PATH));
      for (let sequence = 0; !stop(); sequence += 1) {
        const label = `cycle ${cycle} writer ${index} write ${sequence}`;
        const dice = Math.random();
        let write: Write;
        let request: { query: string; input: Record<string, unknown> };
        if (own.size < 3 || dice < 0.3) {
          const memoryStoreId = this.storeIds[randomInteger(0, this.storeIds.length - 1)]!;
          const content = uniqueContent(label);
          const memoryPath = `${prefix}cycle-${cycle}/note-${sequence}.md`;
          write = { operation: 'create', cycle, memoryStoreId, path: memoryPath, memoryId: null, expectedSha256: null, contentSha256: sha256(content), outcome: 'pending' };
          request = { query: CREATE, input: { memoryStoreId, path: memoryPath, content } };
        } else {
          const pool = dice < 0.5 ? shared : own;
          const target = [...pool.values()][randomInteger(0, pool.size - 1)]!;
          if (pool === own && dice > 0.85) {
            write = { operation: 'delete', cycle, memoryStoreId: target.memoryStoreId, path: target.path, memoryId: target.id, expectedSha256: target.contentSha256, contentSha256: null, outcome: 'pending' };
            request = { query: DELETE, input: { id: target.id, expectedContentSha256: target.contentSha256 } };
          } else if (pool === own && dice > 0.75) {
            // A rename (and new content) goes through a transaction of several statements.
            const content = uniqueContent(label);
            const renamed = `${prefix}cycle-${cycle}/renamed-${sequence}.md`;
            write = { operation: 'update', cycle, memoryStoreId: target.memoryStoreId, path: renamed, memoryId: target.id, expectedSha256: target.contentSha256, contentSha256: sha256(content), outcome: 'pending' };
            request = { query: UPDATE, input: { id: target.id, content, path: renamed, expectedContentSha256: target.contentSha256 } };
          } else {
            const content = uniqueContent(label);
            write = { operation: 'update', cycle, memoryStoreId: target.memoryStoreId, path: target.path, memoryId: target.id, expectedSha256: target.contentSha256, contentSha256: sha256(content), outcome: 'pending' };
            request = { query: UPDATE, input: { id: target.id, content, expectedContentSha256: target.contentSha256 } };
          }
        }
        this.log.push(write);
        inFlight += 1;
        let response: { status: number; body: any };
        try {
          response = await post(url, this.token, request.query, { input: request.input });
        } catch (error) {
          inFlight -= 1;
          // A failed request is what a kill is after; otherwise the server died, or hung up: a bug.
          if (interruption.kind !== 'kill' || !interrupted) throw new Error(`${label}: request failed`, { cause: error });
          write.outcome = 'cut off';
          report.cutOff += 1;
          return;
        }
        inFlight -= 1;
        const result = response.body.data?.createMemory ?? response.body.data?.updateMemory ?? response.body.data?.deleteMemory;
        const target = write.memoryId === null ? undefined : (own.get(write.memoryId) ?? shared.get(write.memoryId));
        const code = response.body.errors?.[0]?.extensions?.code;
        if (interruption.kind === 'drop' && response.status === 503 && code === 'DATABASE_UNAVAILABLE') {
          // The database went away under the request: it may or may not have committed. The
          // writer forgets the memory (its sha is no longer known) and goes on.
          expect(response.body.data ?? null, label).toBeNull();
          write.outcome = 'cut off';
          report.cutOff += 1;
          report.unavailable += 1;
          if (write.memoryId !== null) own.delete(write.memoryId);
          continue;
        }
        if (result?.__typename === 'CreateMemorySuccess') {
          write.memoryId = result.memory.id;
          expect(result.memory.contentSha256, label).toBe(write.contentSha256);
          own.set(result.memory.id, { id: result.memory.id, memoryStoreId: write.memoryStoreId, path: write.path, contentSha256: result.memory.contentSha256 });
        } else if (result?.__typename === 'UpdateMemorySuccess') {
          expect(result.memory.contentSha256, label).toBe(write.contentSha256);
          target!.contentSha256 = result.memory.contentSha256;
          target!.path = write.path;
        } else if (result?.__typename === 'DeleteMemorySuccess') {
          own.delete(write.memoryId!);
        } else if (result?.__typename === 'PreconditionFailedError' && shared.has(write.memoryId!)) {
          // Lost a race on a shared memory: expected, and nothing may have been written.
          target!.contentSha256 = result.currentContentSha256;
        } else if (code === 'RATE_LIMITED') {
          // Refused before it ran; nothing may have been written.
        } else {
          throw new Error(`${label}: unexpected answer ${response.status} ${JSON.stringify(response.body).slice(0, 500)}`);
        }
        write.outcome = result?.__typename?.endsWith('Success') ? 'acknowledged' : 'rejected';
        report[write.outcome === 'acknowledged' ? 'acknowledged' : 'rejected'] += 1;
        if (interrupted && write.outcome === 'acknowledged') acknowledgedSince += 1;
        // Normally in flight: the other writers' requests. The second clause only ends a cycle that never gets there.
        if (!scheduled && report.acknowledged >= interruptAfter && (inFlight >= 3 || report.acknowledged >= interruptAfter + 50)) schedule();
      }
    };

    const writers = Array.from({ length: WRITERS }, (_, index) => writer(index));
    try {
      await Promise.all(writers);
    } finally {
      interrupt();
      await interruptionDone;
      await interruption.settled?.();
    }
    return report;
  }

  /**
   * Opens the database directly after a kill and returns what is wrong: the §6 invariants,
   * and every memory's version history against the request log. Adopts the verified state.
   */
  async verifyAfterKill(cycle: number): Promise<string[]> {
    const { handle, done } = await this.directDatabase();
    try {
      const problems = await invariantViolations(handle.db, this.workspaceId);
      const versions = await handle.db
        .select({
          memoryId: memoryVersions.memoryId,
          memoryStoreId: memoryVersions.memoryStoreId,
          path: memoryVersions.path,
          operation: memoryVersions.operation,
          sequence: memoryVersions.sequence,
          contentSha256: memoryVersions.contentSha256,
        })
        .from(memoryVersions)
        .where(eq(memoryVersions.workspaceId, this.workspaceId))
        .orderBy(asc(memoryVersions.memoryId), asc(memoryVersions.sequence));
      problems.push(...this.historyProblems(versions, cycle));
      this.live = await handle.db
        .select({
          id: memories.id,
          memoryStoreId: memories.memoryStoreId,
          path: memories.path,
          contentSha256: memories.contentSha256,
          contentSizeBytes: memories.contentSizeBytes,
        })
        .from(memories)
        .where(eq(memories.workspaceId, this.workspaceId));
      return problems;
    } finally {
      await done();
    }
  }

  /**
   * Every version was written by a request that was sent and not refused, each request wrote
   * at most one version, every acknowledged request wrote one, and every version after a
   * memory's newest acknowledged one comes from a request whose answer never arrived.
   */
  private historyProblems(versions: { memoryId: string; memoryStoreId: string; path: string; operation: string; sequence: number; contentSha256: string }[], cycle: number): string[] {
    const problems: string[] = [];
    const writesBySha = new Map(this.log.filter((write) => write.contentSha256 !== null).map((write) => [write.contentSha256!, write]));
    const deletesByMemory = new Map<string, Write[]>();
    for (const write of this.log.filter((write) => write.operation === 'delete')) {
      deletesByMemory.set(write.memoryId!, [...(deletesByMemory.get(write.memoryId!) ?? []), write]);
    }
    const histories = new Map<string, typeof versions>();
    for (const version of versions) histories.set(version.memoryId, [...(histories.get(version.memoryId) ?? []), version]);

    const matched = new Set<Write>();
    for (const [memoryId, history] of histories) {
      const sources: Write[] = [];
      history.forEach((version, index) => {
        const previous = history[index - 1];
        const name = `${memoryId} (${version.path}) version ${version.sequence} ${version.operation}`;
        let write: Write | undefined;
        if (version.operation === 'created') {
          const candidate = writesBySha.get(version.contentSha256);
          const fits = candidate?.operation === 'create' && index === 0 && candidate.memoryStoreId === version.memoryStoreId && candidate.path === version.path;
          if (fits && (candidate.memoryId === null || candidate.memoryId === memoryId)) write = candidate;
        } else if (version.operation === 'updated') {
          const candidate = writesBySha.get(version.contentSha256);
          if (candidate?.operation === 'update' && candidate.memoryId === memoryId && candidate.expectedSha256 === previous?.contentSha256) write = candidate;
        } else {
          // Deletes carry no content of their own: after a cut-off delete that did not apply,
          // the next one sends the same sha. The acknowledged one is the one that applied.
          const candidates = (deletesByMemory.get(memoryId) ?? []).filter((candidate) => candidate.expectedSha256 === version.contentSha256);
          write =
            candidates.find((candidate) => candidate.outcome === 'acknowledged') ??
            candidates.find((candidate) => candidate.outcome === 'cut off' && candidate.applied !== false) ??
            candidates[0];
          if (index !== history.length - 1) problems.push(`${name}: versions follow a DELETED version`);
        }
        if (!write) problems.push(`${name}: written by no request the writers sent`);
        else if (write.outcome === 'rejected') problems.push(`${name}: written by a request that was answered with an error`);
        else if (write.outcome === 'pending') problems.push(`${name}: written by a request that was never settled`);
        else if (matched.has(write)) problems.push(`${name}: a request wrote more than one version`);
        else {
          matched.add(write);
          if (write.memoryId === null) write.memoryId = memoryId;
        }
        if (write) sources.push(write);
      });
      const lastAcknowledged = sources.map((write) => write.outcome).lastIndexOf('acknowledged');
      for (const write of sources.slice(lastAcknowledged + 1)) {
        if (write.outcome !== 'cut off') problems.push(`${memoryId}: its newest acknowledged write is followed by a ${write.outcome} ${write.operation}`);
      }
    }

    for (const write of this.log) {
      const applied = matched.has(write);
      const name = `${write.outcome} ${write.operation} of ${write.path} in cycle ${write.cycle}`;
      if (write.outcome === 'acknowledged' && !applied) problems.push(`${name}: lost`);
      if (write.outcome !== 'cut off') continue;
      if (write.applied === undefined) {
        write.applied = applied;
        if (write.cycle === cycle && applied) this.reports[cycle - 1]!.cutOffApplied += 1;
      } else if (write.applied !== applied) {
        problems.push(`${name}: ${applied ? 'appeared' : 'disappeared'} after it was first checked`);
      }
    }
    return problems;
  }

  /** What the restarted server answers equals what the last check found in the database. */
  async verifyThroughServer(url: string): Promise<void> {
    for (const memoryStoreId of this.storeIds) {
      const expected = this.live.filter((memory) => memory.memoryStoreId === memoryStoreId).sort((a, b) => a.id.localeCompare(b.id));
      const seen: LiveMemory[] = [];
      let store: { entryCount: number; totalSize: number } | undefined;
      for (let after: string | null = null; ; ) {
        const { body } = await post(url, this.token, STORE_CONTENTS, { id: memoryStoreId, after });
        expect(body.errors).toBeUndefined();
        store = body.data.memoryStore;
        for (const { node } of body.data.memoryStore.memories.edges) {
          expect(node.latestVersion.contentSha256).toBe(node.contentSha256);
          expect(node.latestVersion.operation).not.toBe('DELETED');
          seen.push({ id: node.id, memoryStoreId, path: node.path, contentSha256: node.contentSha256, contentSizeBytes: node.contentSizeBytes });
        }
        const pageInfo = body.data.memoryStore.memories.pageInfo;
        if (!pageInfo.hasNextPage) break;
        after = pageInfo.endCursor;
      }
      expect(seen.sort((a, b) => a.id.localeCompare(b.id))).toEqual(expected);
      expect(store).toMatchObject({ entryCount: expected.length, totalSize: expected.reduce((sum, memory) => sum + memory.contentSizeBytes, 0) });
    }
  }
}
