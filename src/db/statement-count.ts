import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Counts the SQL statements issued inside `countStatements(fn)`. Tests use it to pin how
 * many statements a query costs; the database logger calls `recordStatement` for each
 * statement sent, and it costs nothing when no count is running.
 */
const currentCount = new AsyncLocalStorage<{ statements: number }>();

export function recordStatement(): void {
  const count = currentCount.getStore();
  if (count) count.statements += 1;
}

export async function countStatements<T>(fn: () => Promise<T>): Promise<{ result: T; statements: number }> {
  const count = { statements: 0 };
  const result = await currentCount.run(count, fn);
  return { result, statements: count.statements };
}
