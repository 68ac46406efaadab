import { sql } from 'drizzle-orm';
import { rowsOf, type Database } from '../../src/db/client.js';

/** The plan lines of EXPLAIN (ANALYZE, BUFFERS) of a recorded statement, its parameters written in as literals. */
export async function explainAnalyze(db: Database, statement: { sql: string; params: unknown[] }): Promise<string[]> {
  const rows = rowsOf(await db.execute(sql.raw(`explain (analyze, buffers, format text) ${inline(statement.sql, statement.params)}`)));
  return rows.map((row) => String(row['QUERY PLAN']));
}

/** Parameters written into the statement as literals, so that EXPLAIN can run it alone. */
function inline(statement: string, params: unknown[]): string {
  return statement.replace(/\$(\d+)/g, (_, index: string) => literal(params[Number(index) - 1]));
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) return `'${value.toISOString()}'`;
  if (Array.isArray(value)) return `array[${value.map(literal).join(', ')}]`;
  return `'${String(value).replace(/'/g, "''")}'`;
}
