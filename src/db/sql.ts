import { sql, type AnyColumn, type SQL } from 'drizzle-orm';

/**
 * `column = any($1)`: membership in a list passed as one array parameter. Unlike
 * `inArray`, whose SQL has one placeholder per value, the statement's text does not
 * depend on the list's length, so each statement is prepared once (see client.ts).
 * An empty list matches nothing.
 */
export function anyOf(column: AnyColumn, values: readonly string[]): SQL {
  return sql`${column} = any(${sql.param(values)}::text[])`;
}
