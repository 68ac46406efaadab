import { and, asc, eq, inArray, lt } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { requestReplays } from '../db/schema.js';
import { ConflictError } from './errors.js';
import { IDEMPOTENCY_KEY_TTL_MS, REPLAY_SWEEP_BATCH } from './limits.js';
import { checkIdempotencyKey, IssueList } from './validation.js';
import type { Viewer } from './viewer.js';

/**
 * Writes that may arrive more than once (a client retrying after a lost answer) and carry a
 * key naming them: the first request with a key runs and its answer is kept; a later one
 * with the same key and the same request gets that answer again, whatever changed since,
 * and runs nothing; the same key with another request is a CONFLICT. Keys last
 * IDEMPOTENCY_KEY_TTL_MS. Requests with one key run one at a time: the claim of the key is
 * a row in the transaction that runs the write, so a concurrent request with that key waits
 * for it to commit (and then replays) or roll back (and then runs itself).
 */
export interface ReplayedAnswer {
  body: string;
  /** True when the answer was kept from an earlier request. */
  replayed: boolean;
}

export async function runOnce(
  db: Database,
  viewer: Viewer,
  request: { key: string; requestSha256: string; field: (string | number)[] },
  now: Date,
  run: (tx: Database) => Promise<string>,
): Promise<ReplayedAnswer> {
  const issues = new IssueList();
  checkIdempotencyKey(issues, request.field, request.key);
  issues.throwIfAny();
  const { workspaceId } = viewer;
  const expiredBefore = new Date(now.getTime() - IDEMPOTENCY_KEY_TTL_MS);
  return db.transaction(async (tx) => {
    // Nothing grows without bound: a claim first sweeps a batch of the workspace's expired keys (this one's included).
    const expired = tx
      .select({ key: requestReplays.key })
      .from(requestReplays)
      .where(and(eq(requestReplays.workspaceId, workspaceId), lt(requestReplays.createdAt, expiredBefore)))
      .orderBy(asc(requestReplays.createdAt))
      .limit(REPLAY_SWEEP_BATCH);
    await tx.delete(requestReplays).where(and(eq(requestReplays.workspaceId, workspaceId), inArray(requestReplays.key, expired)));
    const claimed = await tx
      .insert(requestReplays)
      .values({ workspaceId, key: request.key, requestSha256: request.requestSha256, responseBody: '', createdAt: now })
      // This key's own expired row, when the sweep left it, is claimed afresh.
      .onConflictDoUpdate({
        target: [requestReplays.workspaceId, requestReplays.key],
        set: { requestSha256: request.requestSha256, responseBody: '', createdAt: now },
        setWhere: lt(requestReplays.createdAt, expiredBefore),
      })
      .returning({ key: requestReplays.key });
    if (claimed.length > 0) {
      const body = await run(tx);
      await tx
        .update(requestReplays)
        .set({ responseBody: body })
        .where(and(eq(requestReplays.workspaceId, workspaceId), eq(requestReplays.key, request.key)));
      return { body, replayed: false };
    }
    const [previous] = await tx
      .select({ requestSha256: requestReplays.requestSha256, responseBody: requestReplays.responseBody })
      .from(requestReplays)
      .where(and(eq(requestReplays.workspaceId, workspaceId), eq(requestReplays.key, request.key)));
    if (!previous || previous.requestSha256 !== request.requestSha256) {
      throw new ConflictError('This Idempotency-Key was already used with a different request in the last 24 hours.', 'idempotency_key_reused');
    }
    return { body: previous.responseBody, replayed: true };
  });
}
