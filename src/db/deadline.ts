import { AsyncLocalStorage } from 'node:async_hooks';
import type { StatementDone, StatementObserver } from './statement-observer.js';

/**
 * The limits of the request a statement is sent for. The request pipeline runs each
 * request's work inside its scope; the database handles check it before every statement, so
 * that a request past its time limit, or stopped for another reason (its answer grew past
 * its budget), sends no further statement: its work ends at its next statement instead of
 * running to its end (on PGlite, which cannot cancel a statement, the only way to end it).
 */
export class StatementScope {
  /** Why no further statement may be sent, once one may not. */
  private stoppedBy: Error | null = null;

  constructor(
    /** performance.now() milliseconds after which no statement may start. */
    readonly at: number,
    readonly timeoutMs: number,
    /** Told of each statement the request sends (metrics and traces), when they are on. */
    readonly observer?: StatementObserver,
  ) {}

  /** Refuses every further statement of the request with `reason`. */
  stop(reason: Error): void {
    this.stoppedBy ??= reason;
  }

  run<T>(work: () => T): T {
    return current.run(this, work);
  }

  check(): void {
    if (this.stoppedBy) throw this.stoppedBy;
    if (performance.now() > this.at) throw new DeadlineExceededError(this.timeoutMs);
  }
}

const current = new AsyncLocalStorage<StatementScope>();

export class DeadlineExceededError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The request ran past its limit of ${timeoutMs} ms; no further statement is sent for it.`);
    this.name = 'DeadlineExceededError';
  }
}

/** Throws when the current request may send no further statement. */
export function checkDeadline(): void {
  current.getStore()?.check();
}

/** Tells the current request's observer (if any) that a statement is sent: call the result once it has its answer. */
export function observeStatement(text: string): StatementDone | undefined {
  return current.getStore()?.observer?.(text);
}

/** Stops the statements of the current request (if any): each further one fails with `reason`. */
export function stopStatements(reason: Error): void {
  current.getStore()?.stop(reason);
}
