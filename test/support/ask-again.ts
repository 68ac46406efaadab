import type { Database } from '../../src/db/client.js';
import { CHANGE_MARK_UNSETTLED, readWorkspaceChangeMark } from '../../src/domain/events.js';

/**
 * Asks (`ask`) until the answer no longer calls for asking again (`again`), at most `times`
 * more times, `everyMs` apart, and resolves with the last answer: what a client does that
 * polls for something it knows will come (a tag withheld while a workspace's change mark is
 * unsettled, a session that appears once its first statement runs).
 */
export async function askAgain<T>(ask: () => Promise<T>, again: (answer: T) => boolean, { times = 50, everyMs = 100 } = {}): Promise<T> {
  let answer = await ask();
  for (let attempt = 0; attempt < times && again(answer); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    answer = await ask();
  }
  return answer;
}

/**
 * A workspace's change mark once it has settled. A transaction of another database that ends
 * between the mark's snapshot and its look at pg_stat_activity still holds the horizon
 * (drizzle/0010), so on a busy server the mark may read `unsettled` for a moment: asked
 * again, as a polling client does.
 */
export const settledMark = (db: Database, workspaceId: string) => askAgain(() => readWorkspaceChangeMark(db, workspaceId), (mark) => mark === CHANGE_MARK_UNSETTLED);
