import { GraphQLError, type ExecutionResult } from 'graphql';
import type { StatementScope } from '../db/deadline.js';
import type { ReadOutcome } from '../db/snapshot-choice.js';
import { MAX_RESPONSE_BYTES } from '../domain/limits.js';

/**
 * How much text one answer may carry: MAX_RESPONSE_BYTES. The budget is spent while the
 * answer is built — by every text field as it resolves (resolver-guards.ts), and by
 * `content` before it is even loaded (its size is known from the row) — so that neither the
 * database nor the server ever holds more than a bounded answer. Once spent, every further
 * field and statement of the request fails at once, and the request is answered with one
 * top-level RESPONSE_TOO_LARGE error instead of its data. (The executor is not aborted: it
 * would stop waiting for fields still running, whose failures would then go unobserved.)
 */

export const RESPONSE_TOO_LARGE = 'RESPONSE_TOO_LARGE';

export function responseTooLarge(maxBytes = MAX_RESPONSE_BYTES): GraphQLError {
  return new GraphQLError(
    `The answer would carry more than ${maxBytes} bytes of text, the limit: ask for less (smaller pages, fewer aliases, content of fewer memories). ` +
      'A mutation\'s write is made even so: read before retrying it.',
    { extensions: { code: RESPONSE_TOO_LARGE, max: maxBytes, http: { status: 400 } } },
  );
}

/** The answers settle gave in place of an execution's, its budget spent. */
const spentAnswers = new WeakSet<object>();

/**
 * What a query's answer says of its statements: only an answer without errors tells how
 * many its operation needs; one whose budget was spent stands (its request may send no
 * further statement: a run in a snapshot could only fail the same way).
 */
export const QUERY_OUTCOME: ReadOutcome<ExecutionResult> = {
  teaches: (result) => !result.errors?.length,
  stands: (result) => spentAnswers.has(result),
};

export class ResponseBudget {
  private spent = 0;
  private error: GraphQLError | null = null;

  constructor(
    readonly maxBytes = MAX_RESPONSE_BYTES,
    /** The statements of the request it is the budget of (none: a stream's event). */
    private readonly scope?: StatementScope,
  ) {}

  get exceeded(): boolean {
    return this.error !== null;
  }

  /**
   * Spends `bytes`; past the budget, throws RESPONSE_TOO_LARGE — as does every later field —
   * and the request sends no further statement: what is still resolving ends quickly.
   */
  spend(bytes: number): void {
    if (this.error) throw this.error;
    this.spent += bytes;
    if (this.spent <= this.maxBytes) return;
    this.error = responseTooLarge(this.maxBytes);
    this.scope?.stop(this.error);
    throw this.error;
  }

  /** The answer to give: the execution's own, or RESPONSE_TOO_LARGE alone once the budget was spent. */
  settle<Result extends ExecutionResult>(result: Result): Result | ExecutionResult {
    if (!this.error) return result;
    const spent = { errors: [this.error] };
    spentAnswers.add(spent);
    return spent;
  }
}

/** The bytes a field's value adds to the answer, roughly: the UTF-8 length of its text. */
export function textBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + textBytes(item), 0);
  if (value !== null && typeof value === 'object') {
    let bytes = 2;
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) bytes += Buffer.byteLength(key, 'utf8') + textBytes(item) + 4;
    return bytes;
  }
  return 0;
}

/** Marks a field that spends the budget itself (before loading its value). */
export const SPENDS_OWN_BUDGET = { spendsResponseBudget: true } as const;
