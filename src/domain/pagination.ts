import { and, asc, desc, eq, sql, type SQL } from 'drizzle-orm';
import { unionAll, type AnyPgColumn, type PgTable } from 'drizzle-orm/pg-core';
import type { Database } from '../db/client.js';

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

export type KeyKind = 'string' | 'date' | 'number';

/** One sort key of a list: a column (or an expression over the list's table), its kind, and its value in a loaded row. */
export interface SortKey<Row> {
  column: AnyPgColumn | SQL;
  kind: KeyKind;
  of: (row: Row) => KeyValue;
}

/** A sort key on a column; its kind follows the column's SQL type (text, integer, timestamp). */
export function sortKey<Row>(column: AnyPgColumn, of: (row: Row) => KeyValue): SortKey<Row> {
  const type = column.getSQLType();
  const kind: KeyKind | null = type.startsWith('text') ? 'string' : type === 'integer' ? 'number' : type.startsWith('timestamp') ? 'date' : null;
  if (!kind) throw new Error(`column ${column.name} cannot be a sort key (${type})`);
  return { column, kind, of };
}

/**
 * A list order, written once: its name (cursors carry it, so that a cursor of another list
 * or order is refused), key columns that are unique together within one parent, and their
 * common direction. The database orders and pages by the keys; cursors hold their values.
 */
export interface KeysetOrdering<Row> {
  name: string;
  keys: readonly SortKey<Row>[];
  direction: 'asc' | 'desc';
}

/** The key values of a row, in the ordering's order. */
export function keyOf<Row>(ordering: KeysetOrdering<Row>, row: Row): KeyValue[] {
  return ordering.keys.map((key) => key.of(row));
}

/** A keyset-paginated list: the table, what a row holds, and its order. */
export interface KeysetList<Row> {
  table: PgTable;
  columns: Record<string, AnyPgColumn>;
  ordering: KeysetOrdering<Row>;
}

type Comparison = '<' | '>' | '<=' | '>=';

function keyComparison(keys: readonly SortKey<unknown>[], operator: Comparison, values: KeyValue[]): SQL {
  const left = sql.join(keys.map((key) => sql`${key.column}`), sql`, `);
  const right = sql.join(
    values.map((value) => (value instanceof Date ? sql`${value.toISOString()}::timestamptz` : sql`${value}`)),
    sql`, `,
  );
  return sql`(${left}) ${sql.raw(operator)} (${right})`;
}

/** Rows on one side of `values` in list order (`inclusive` adds the row at `values`). */
function beyond(ordering: KeysetOrdering<any>, values: KeyValue[], side: 'after' | 'before', inclusive = false): SQL {
  const greater = (side === 'after') === (ordering.direction === 'asc');
  return keyComparison(ordering.keys, `${greater ? '>' : '<'}${inclusive ? '=' : ''}` as Comparison, values);
}

function orderBy(ordering: KeysetOrdering<any>, reversed: boolean): SQL[] {
  const ascending = (ordering.direction === 'asc') !== reversed;
  return ordering.keys.map((key) => (ascending ? asc(key.column) : desc(key.column)));
}

/** Code-point order, as PostgreSQL's "C" collation compares (JavaScript's `<` compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let index = 0; index < length; ) {
    const x = a.codePointAt(index)!;
    const y = b.codePointAt(index)!;
    if (x !== y) return x - y;
    index += x > 0xffff ? 2 : 1;
  }
  return a.length - b.length;
}

function compareKeyValues(left: KeyValue, right: KeyValue): number {
  if (left instanceof Date && right instanceof Date) return left.getTime() - right.getTime();
  if (typeof left === 'number' && typeof right === 'number') return left - right;
  return compareCodePoints(String(left), String(right));
}

function compareKeys(left: KeyValue[], right: KeyValue[]): number {
  for (let index = 0; index < left.length; index += 1) {
    const difference = compareKeyValues(left[index]!, right[index]!);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** One branch of the statement: rows of `side` 0 (the page) or 1 (the probe behind the cursor). */
type Branch = (side: 0 | 1, where: SQL | undefined, order: SQL[], limit: number) => any;

interface FetchedRow<Row> {
  group: string;
  side: number;
  row: Row;
}

/**
 * The shared core: the page with one extra row (to learn whether more follow) and — only
 * when the page starts from a cursor — in the same statement (UNION ALL) one row on the
 * cursor's other side, so that `hasPreviousPage` (forward) or `hasNextPage` (backward) is
 * exact rather than guessed. Rows are grouped by `group` (the parent of a child list).
 */
async function fetchGroupedPages<Row>(
  ordering: KeysetOrdering<Row>,
  window: PageWindow,
  filter: SQL | undefined,
  branch: Branch,
): Promise<Map<string, Page<Row>>> {
  const afterBound = window.after ? beyond(ordering, window.after, 'after') : undefined;
  const beforeBound = window.before ? beyond(ordering, window.before, 'before') : undefined;
  const main = branch(0, and(filter, afterBound, beforeBound), orderBy(ordering, window.backward), window.size + 1);
  const startCursor = window.backward ? window.before : window.after;
  let rows: FetchedRow<Row>[];
  if (startCursor) {
    const behind = beyond(ordering, startCursor, window.backward ? 'after' : 'before', true);
    rows = (await unionAll(main, branch(1, and(filter, behind), orderBy(ordering, !window.backward), 1))) as FetchedRow<Row>[];
  } else {
    rows = await main;
  }

  const grouped = new Map<string, { page: Row[]; behind: boolean }>();
  for (const { group, side, row } of rows) {
    let entry = grouped.get(group);
    if (!entry) grouped.set(group, (entry = { page: [], behind: false }));
    if (side === 0) entry.page.push(row);
    else entry.behind = true;
  }
  const pages = new Map<string, Page<Row>>();
  const listOrder = ordering.direction === 'asc' ? 1 : -1;
  for (const [group, { page, behind }] of grouped) {
    // Rows arrive in order from each branch; sorting again keeps that independent of the plan.
    page.sort((left, right) => listOrder * compareKeys(keyOf(ordering, left), keyOf(ordering, right)));
    // The extra row is the last in list order going forward, the first going backward.
    const more = page.length > window.size;
    const kept = !more ? page : window.backward ? page.slice(page.length - window.size) : page.slice(0, window.size);
    pages.set(group, {
      rows: kept,
      hasNextPage: window.backward ? behind : more,
      hasPreviousPage: window.backward ? more : behind,
    });
  }
  return pages;
}

const EMPTY_PAGE: Page<never> = { rows: [], hasNextPage: false, hasPreviousPage: false };

/** One page of a top-level list, in one statement. */
export async function fetchPage<Row>(db: Database, list: KeysetList<Row>, window: PageWindow, filter: SQL | undefined): Promise<Page<Row>> {
  const pages = await fetchGroupedPages(list.ordering, window, filter, (side, where, order, limit) =>
    db
      .select({ group: sql<string>`''`.as('page_group'), side: sql<number>`${sql.raw(String(side))}`.mapWith(Number).as('page_side'), row: list.columns })
      .from(list.table)
      .where(where)
      .orderBy(...order)
      .limit(limit),
  );
  return (pages.get('') as Page<Row> | undefined) ?? EMPTY_PAGE;
}

/**
 * The same page of a child list for many parents, in one statement: each parent id is
 * joined LATERAL to its own index scan with its own LIMIT, so the cost follows the page
 * size, not the size of the parents' lists.
 */
export async function fetchPagesByParent<Row>(
  db: Database,
  list: KeysetList<Row>,
  parentColumn: AnyPgColumn,
  parentIds: readonly string[],
  window: PageWindow,
  filter: SQL | undefined,
): Promise<Map<string, Page<Row>>> {
  if (parentIds.length === 0) return new Map();
  const parents = sql`unnest(${sql.param([...new Set(parentIds)])}::text[]) as parents(parent_id)`;
  const pages = await fetchGroupedPages(list.ordering, window, filter, (side, where, order, limit) => {
    const alias = side === 0 ? 'page' : 'probe';
    const rows = db
      .select(list.columns)
      .from(list.table)
      .where(and(eq(parentColumn, sql`parents.parent_id`), where))
      .orderBy(...order)
      .limit(limit)
      .as(alias);
    const row = Object.fromEntries(Object.keys(list.columns).map((name) => [name, (rows as unknown as Record<string, unknown>)[name]]));
    return db
      .select({ group: sql<string>`parents.parent_id`.as('page_group'), side: sql<number>`${sql.raw(String(side))}`.mapWith(Number).as('page_side'), row: row as never })
      .from(parents)
      .crossJoinLateral(rows);
  });
  return new Map(parentIds.map((id) => [id, pages.get(id) ?? EMPTY_PAGE]));
}

/** A cursor's JSON (base64url of a JSON text), or undefined for anything that is not one. */
export function cursorJson(cursor: string): unknown {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}
