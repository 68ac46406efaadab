import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../domain/limits.js';
import { cursorJson, keyOf, type KeysetOrdering, type KeyValue, type Page, type PageWindow } from '../domain/pagination.js';
import { invalidRequest } from './errors.js';
import { isSupportedInstant } from './scalars.js';

/** The arguments every connection takes (Relay). */
export interface ConnectionArguments {
  first?: number | null;
  last?: number | null;
  after?: string | null;
  before?: string | null;
}

/**
 * A list's cursors are its ordering's name and the row's sort-key values (domain/pagination.ts
 * declares both, once per list): a cursor of another list or order is refused.
 */
export function encodeCursor<Row>(ordering: KeysetOrdering<Row>, row: Row): string {
  const values = keyOf(ordering, row).map((value) => (value instanceof Date ? value.toISOString() : value));
  return Buffer.from(JSON.stringify([ordering.name, ...values]), 'utf8').toString('base64url');
}

/** A cursor's JSON (base64url of a JSON text), or `refuse()` thrown for anything that is not one. */
export function parseCursorJson(cursor: string, refuse: () => Error): unknown {
  const parsed = cursorJson(cursor);
  if (parsed === undefined) throw refuse();
  return parsed;
}

function decodeCursor<Row>(ordering: KeysetOrdering<Row>, cursor: string, argument: string): KeyValue[] {
  const refuse = () => invalidRequest(`"${argument}" is not a cursor of this list: use a cursor returned by this connection with the same order.`);
  const parsed = parseCursorJson(cursor, refuse);
  if (!Array.isArray(parsed) || parsed.length !== ordering.keys.length + 1 || parsed[0] !== ordering.name) throw refuse();
  return ordering.keys.map(({ kind }, index) => {
    const value: unknown = parsed[index + 1];
    // A forged cursor must fail here, as a bad argument, and never reach the database with a
    // value no real key can have: such values make PostgreSQL throw (a masked internal error).
    if (kind === 'number') {
      // Numeric keys are 32-bit `integer` columns (version sequences) or 0/1 slots.
      if (typeof value !== 'number' || !Number.isInteger(value) || value < -(2 ** 31) || value > 2 ** 31 - 1) throw refuse();
      return value;
    }
    if (typeof value !== 'string') throw refuse();
    if (kind === 'date') {
      const date = new Date(value);
      if (Number.isNaN(date.getTime()) || !isSupportedInstant(date)) throw refuse();
      return date;
    }
    // No stored id, path or name holds NUL (PostgreSQL text cannot) or a lone surrogate.
    if (value.includes('\u0000') || !value.isWellFormed()) throw refuse();
    return value;
  });
}

function checkPageSize(name: 'first' | 'last', value: number | null | undefined): void {
  if (value == null) return;
  if (!Number.isInteger(value) || value < 0 || value > MAX_PAGE_SIZE) {
    throw invalidRequest(`"${name}" must be between 0 and ${MAX_PAGE_SIZE} (got ${value}).`);
  }
}

/**
 * Validates a connection's arguments: `first` and `last` in 0..MAX_PAGE_SIZE and not both,
 * cursors of this list only. Nothing is clamped: a bad argument is a top-level
 * INVALID_REQUEST error.
 */
export function parseConnectionArguments<Row>(ordering: KeysetOrdering<Row>, args: ConnectionArguments): PageWindow {
  checkPageSize('first', args.first);
  checkPageSize('last', args.last);
  if (args.first != null && args.last != null) {
    throw invalidRequest('Give "first" or "last", not both.');
  }
  const backward = args.last != null;
  return {
    size: args.first ?? args.last ?? DEFAULT_PAGE_SIZE,
    backward,
    after: args.after == null ? null : decodeCursor(ordering, args.after, 'after'),
    before: args.before == null ? null : decodeCursor(ordering, args.before, 'before'),
  };
}

export interface ConnectionResult<Row> {
  edges: { cursor: string; node: Row }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: () => Promise<number>;
}

export function toConnection<Row>(ordering: KeysetOrdering<Row>, page: Page<Row>, totalCount: () => Promise<number>): ConnectionResult<Row> {
  const edges = page.rows.map((row) => ({ cursor: encodeCursor(ordering, row), node: row }));
  return {
    edges,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      hasPreviousPage: page.hasPreviousPage,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
    totalCount,
  };
}
