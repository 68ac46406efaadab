import { asc, desc, sql, type SQL } from 'drizzle-orm';
import { unionAll, type AnyPgColumn } from 'drizzle-orm/pg-core';

/** A decoded cursor: the sort-key values of one row, in the ordering's column order. */
export type KeyValue = string | number | Date;

/**
 * What a connection asked for, validated and decoded (see graphql/pagination.ts): `size`
 * items after `after` (forward) or the last `size` items before `before` (backward);
 * both bounds may be present.
 */
export interface PageWindow {
  size: number;
  backward: boolean;
  after: KeyValue[] | null;
  before: KeyValue[] | null;
}

export interface Page<Row> {
  rows: Row[];
  hasNextPage: boolean;
  hasPreviousPage: boolean;
}

/** A list order: its key columns (unique together) and their common direction. */
export interface KeysetOrdering {
  columns: AnyPgColumn[];
  direction: 'asc' | 'desc';
}

type Comparison = '<' | '>' | '<=' | '>=';

function keyComparison(ordering: KeysetOrdering, operator: Comparison, values: KeyValue[]): SQL {
  const left = sql.join(ordering.columns.map((column) => sql`${column}`), sql`, `);
  const right = sql.join(
    values.map((value) => (value instanceof Date ? sql`${value.toISOString()}::timestamptz` : sql`${value}`)),
    sql`, `,
  );
  return sql`(${left}) ${sql.raw(operator)} (${right})`;
}

/** `strictlyAfter`: the comparison that selects rows after `values` in list order. */
function beyond(ordering: KeysetOrdering, values: KeyValue[], side: 'after' | 'before', inclusive = false): SQL {
  const ascending = ordering.direction === 'asc';
  const greater = (side === 'after') === ascending;
  const operator = (greater ? '>' : '<') + (inclusive ? '=' : '');
  return keyComparison(ordering, operator as Comparison, values);
}

function orderBy(ordering: KeysetOrdering, reversed: boolean): SQL[] {
  const ascending = (ordering.direction === 'asc') !== reversed;
  return ordering.columns.map((column) => (ascending ? asc(column) : desc(column)));
}

/**
 * One page of a keyset-paginated list in a single statement. `select(side, where, order,
 * limit)` builds the list's query with an extra `side` column; the page is fetched with
 * one extra row to learn whether more follow, and — only when the page starts from a
 * cursor — a second branch of the same UNION ALL fetches one row on the cursor's other
 * side, so that `hasPreviousPage` (forward) or `hasNextPage` (backward) is exact.
 */
export async function fetchKeysetPage<Row extends { pageSide: number }>(
  ordering: KeysetOrdering,
  window: PageWindow,
  filter: SQL | undefined,
  // The select builder's type depends on the caller's columns; it is checked there.
  select: (side: SQL.Aliased<number>, where: SQL | undefined, order: SQL[], limit: number) => any,
): Promise<Page<Omit<Row, 'pageSide'>>> {
  const conditions = (...parts: (SQL | undefined)[]) => {
    const present = parts.filter((part): part is SQL => part !== undefined);
    return present.length === 0 ? undefined : sql.join(present, sql` and `);
  };
  const afterBound = window.after ? beyond(ordering, window.after, 'after') : undefined;
  const beforeBound = window.before ? beyond(ordering, window.before, 'before') : undefined;
  const pageSide = sql<number>`0`.mapWith(Number).as('page_side');
  const probeSide = sql<number>`1`.mapWith(Number).as('page_side');

  const main = select(pageSide, conditions(filter, afterBound, beforeBound), orderBy(ordering, window.backward), window.size + 1);
  // The row just behind the starting cursor, if any: the page's other side.
  const startCursor = window.backward ? window.before : window.after;
  let rows: Row[];
  if (startCursor) {
    const behind = beyond(ordering, startCursor, window.backward ? 'after' : 'before', true);
    const probe = select(probeSide, conditions(filter, behind), orderBy(ordering, !window.backward), 1);
    rows = (await unionAll(main, probe)) as Row[];
  } else {
    rows = (await main) as Row[];
  }

  const pageRows = rows.filter((row) => row.pageSide === 0);
  const behindExists = rows.some((row) => row.pageSide === 1);
  const more = pageRows.length > window.size;
  const kept = pageRows.slice(0, window.size).map(({ pageSide: _, ...row }) => row);
  if (window.backward) kept.reverse();
  return {
    rows: kept,
    hasNextPage: window.backward ? behindExists : more,
    hasPreviousPage: window.backward ? more : behindExists,
  };
}
