import type { StatementDone, StatementObserver } from './statement-observer.js';

/** Counts a request's statements, and may refuse one (snapshot-choice.ts). */
export interface StatementTally {
  /** Called before each statement is sent: throws to refuse it. */
  count(): void;
}

/**
 * The limits of the request a statement is sent for. A request's database handle
 * (DatabaseHandle.scoped, client.ts) carries its scope and asks it before every statement,
 * so that a request past its time limit, or stopped for another reason (its answer grew past
 * its budget), sends no further statement: its work ends at its next statement instead of
 * running to its end (on PGlite, which cannot cancel a statement, the only way to end it).
 *
 * The scope is handed along explicitly (the request's state, its context, its handle), not
 * found through an AsyncLocalStorage: on Node 20 any AsyncLocalStorage in use turns on
 * promise hooks for every promise of the process, which cost 6–7 % of a one-memory read's
 * server CPU (`npm run bench`, Q2, CPU profile).
 */
export class StatementScope {
  /** Why no further statement may be sent, once one may not. */
  private stoppedBy: Error | null = null;
  /** The scope this one is part of (an attempt's: its request's), whose limits hold here too. */
  private parent: StatementScope | null = null;
  /** Told of each statement sent under this scope before it is sent (snapshot-choice.ts). */
  private tally: StatementTally | null = null;

  constructor(
    /** performance.now() milliseconds after which no statement may start. */
    readonly at: number = Number.POSITIVE_INFINITY,
    readonly timeoutMs: number = Number.POSITIVE_INFINITY,
    /** Told of each statement the request sends (metrics and traces), when they are on. */
    readonly observer?: StatementObserver,
  ) {}

  /**
   * A part of this scope (one attempt at a read: snapshot-choice.ts) with a tally and a stop
   * of its own: stopping it stops none of this scope's other statements, while this scope's
   * limits and stop hold in it too.
   */
  part(tally: StatementTally): StatementScope {
    const part = new StatementScope(this.at, this.timeoutMs, this.observer);
    part.parent = this;
    part.tally = tally;
    return part;
  }

  /** Refuses every further statement of the scope (of the request, or of one of its parts) with `reason`. */
  stop(reason: Error): void {
    this.stoppedBy ??= reason;
  }

  /** Throws when no further statement may be sent under this scope. */
  check(): void {
    if (this.stoppedBy) throw this.stoppedBy;
    this.parent?.check();
    if (performance.now() > this.at) throw new DeadlineExceededError(this.timeoutMs);
  }

  /** Before a statement is sent: the limits (check), then the tally, which may refuse it. */
  admit(): void {
    this.check();
    this.tally?.count();
  }

  /** Tells the observer (if any) that a statement is sent: call the result once it has its answer. */
  observe(text: string): StatementDone | undefined {
    return this.observer?.(text);
  }

  /** Runs a statement (`send`), the observer told of it from now until it settles. */
  async observed<T>(text: string, send: () => Promise<T>): Promise<T> {
    const done = this.observe(text);
    if (!done) return send();
    try {
      const result = await send();
      done();
      return result;
    } catch (error) {
      done(error);
      throw error;
    }
  }
}

export class DeadlineExceededError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The request ran past its limit of ${timeoutMs} ms; no further statement is sent for it.`);
    this.name = 'DeadlineExceededError';
  }
}
