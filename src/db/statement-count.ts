import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Counts (and, on request, records) the SQL statements issued inside `countStatements(fn)`.
 * Tests pin how many statements a query costs, and the EXPLAIN script replays them; the
 * database logger calls `recordStatement` for each statement sent. It costs nothing when
 * no count is running: an AsyncLocalStorage that never runs anything turns no promise
 * hooks on (test/promise-hooks.test.ts), and the server never counts.
 */
export interface RecordedStatement {
  sql: string;
  params: unknown[];
}

interface Recording {
  statements: number;
  recorded?: RecordedStatement[];
}

const currentRecording = new AsyncLocalStorage<Recording>();

export function recordStatement(sql: string, params: unknown[]): void {
  const recording = currentRecording.getStore();
  if (!recording) return;
  recording.statements += 1;
  recording.recorded?.push({ sql, params });
}

export async function countStatements<T>(fn: () => Promise<T>): Promise<{ result: T; statements: number }> {
  const recording: Recording = { statements: 0 };
  const result = await currentRecording.run(recording, fn);
  return { result, statements: recording.statements };
}

export async function recordStatements<T>(fn: () => Promise<T>): Promise<{ result: T; statements: RecordedStatement[] }> {
  const recording: Recording = { statements: 0, recorded: [] };
  const result = await currentRecording.run(recording, fn);
  return { result, statements: recording.recorded! };
}
