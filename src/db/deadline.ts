import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The time limit of the request a statement is sent for. The request pipeline runs its
 * work inside `withinDeadline`; the database handles check it before each statement, so a
 * request past its limit stops at its next statement instead of running to its end (on
 * PGlite, which cannot cancel a statement, the only way to stop its work).
 */
interface Limit {
  /** performance.now() milliseconds after which no statement may start. */
  at: number;
  timeoutMs: number;
}

const current = new AsyncLocalStorage<Limit>();

export class DeadlineExceededError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The request ran past its limit of ${timeoutMs} ms; no further statement is sent for it.`);
    this.name = 'DeadlineExceededError';
  }
}

export function withinDeadline<T>(at: number, timeoutMs: number, work: () => T): T {
  return current.run({ at, timeoutMs }, work);
}

/** Throws DeadlineExceededError when the current request is past its limit. */
export function checkDeadline(): void {
  const limit = current.getStore();
  if (limit && performance.now() > limit.at) throw new DeadlineExceededError(limit.timeoutMs);
}
