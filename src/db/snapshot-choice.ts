import type { StatementScope, StatementTally } from './deadline.js';

/**
 * Reads in one snapshot only when they need one. A read of several statements must see one
 * snapshot (a read-only REPEATABLE READ transaction, DatabaseHandle.readSnapshot); a read of
 * one statement sees one anyway, and without the transaction it spends two statements and
 * two round trips less (BEGIN and COMMIT) and, on PGlite, does not hold the database for
 * its whole execution.
 *
 * Which reads those are is learned, per kind of read (for GraphQL, an operation of a cached
 * document): a read runs in a snapshot, counted, until it has once sent at most one
 * statement; from then on it runs alone, allowed one statement. Should it ask for a second
 * one (its data grew: a list that was empty now has nested lists to load), that statement
 * is refused before it is sent, the attempt's answer is thrown away whole, and the read runs
 * again in a snapshot, as that kind of read always will from then on. The answer a client
 * gets is therefore always from one snapshot; at worst, once per kind of read, one
 * statement is spent twice.
 */

/** Thrown, before it is sent, by a statement beyond the one a read running alone may send. */
export class SnapshotNeededError extends Error {
  constructor() {
    super('This read needs more than one statement: it runs again in one snapshot.');
    this.name = 'SnapshotNeededError';
  }
}

/** The statements of a read running counted, at most `limit` of them. */
class Tally implements StatementTally {
  /** Statements sent so far. */
  sent = 0;
  /** A statement beyond the limit was refused. */
  refused = false;

  constructor(readonly limit: number) {}

  count(): void {
    if (this.sent >= this.limit) {
      this.refused = true;
      throw new SnapshotNeededError();
    }
    this.sent += 1;
  }
}

/** Stops what an attempt at a read still sends once it has ended (its answer is given, or thrown away). */
export class AttemptEndedError extends Error {
  constructor() {
    super('The read this statement belongs to has ended; it is not sent.');
    this.name = 'AttemptEndedError';
  }
}

/**
 * Runs `work` under a part of `scope` of its own that counts its statements, at most `limit`
 * of them; once the work has ended, the part sends nothing more (an answer cut short by an
 * error may leave fields still resolving). A failure after a refusal is the refusal's: the
 * result is then undefined, and `refused` says why.
 */
async function tallied<T>(scope: StatementScope, limit: number, work: (scope: StatementScope) => Promise<T>): Promise<{ result: T | undefined; sent: number; refused: boolean }> {
  const tally = new Tally(limit);
  const part = scope.part(tally);
  try {
    return { result: await work(part), sent: tally.sent, refused: tally.refused };
  } catch (error) {
    if (!tally.refused) throw error;
    return { result: undefined, sent: tally.sent, refused: true };
  } finally {
    part.stop(tally.refused ? new SnapshotNeededError() : new AttemptEndedError());
  }
}

/** What is known of a kind of read: it has needed one statement at most, or more. */
type Need = 'one' | 'several';

/** What a read's answer says, besides its statements (by default: it teaches, and it does not stand). */
export interface ReadOutcome<T> {
  /**
   * Whether an answer tells how many statements its kind needs: one with errors may have
   * stopped short (bad input, a time limit), and teaches nothing.
   */
  teaches?(result: T): boolean;
  /**
   * Whether an attempt alone's answer stands although a statement was refused it: it
   * ended the request's work itself (its answer grew past the request's budget, which
   * stops every further statement), so a run in a snapshot would only fail the same way.
   */
  stands?(result: T): boolean;
}

export class SnapshotChoice<Kind extends object> {
  /** Weakly: a kind of read is known for as long as it is kept elsewhere (the document cache). */
  private readonly needs = new WeakMap<Kind, Need>();

  /**
   * Runs a read of this kind: `alone` without a snapshot, `inSnapshot` in one, each sending
   * its statements under the part of `scope` (the request's) it is given. Each is called at
   * most once, and only the answer returned is the client's (an attempt alone that asked for
   * a second statement is discarded, unless it stands).
   */
  async read<T>(
    scope: StatementScope,
    kind: Kind,
    alone: (scope: StatementScope) => Promise<T>,
    inSnapshot: (scope: StatementScope) => Promise<T>,
    outcome: ReadOutcome<T> = {},
  ): Promise<T> {
    const need = this.needs.get(kind);
    if (need === 'one') {
      const attempt = await tallied(scope, 1, alone);
      if (!attempt.refused) return attempt.result as T;
      this.needs.set(kind, 'several');
      if (attempt.result !== undefined && outcome.stands?.(attempt.result)) return attempt.result;
      return (await tallied(scope, Number.POSITIVE_INFINITY, inSnapshot)).result as T;
    }
    if (need === 'several') return (await tallied(scope, Number.POSITIVE_INFINITY, inSnapshot)).result as T;
    const counted = await tallied(scope, Number.POSITIVE_INFINITY, inSnapshot);
    const result = counted.result as T;
    // Several statements once is enough to stay in snapshots (whatever another request of
    // this kind learned meanwhile); one is learned only of a kind not known yet, from an
    // answer that tells.
    if (counted.sent > 1) this.needs.set(kind, 'several');
    else if (!this.needs.has(kind) && (outcome.teaches?.(result) ?? true)) this.needs.set(kind, 'one');
    return result;
  }

  /** What is known of a kind of read (tests). */
  needOf(kind: Kind): Need | undefined {
    return this.needs.get(kind);
  }
}
