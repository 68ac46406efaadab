import { getVariableValues, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { RunStatement, RunStatementRaw } from '../db/client.js';
import { kindsAllowedToTakeAll } from '../domain/access.js';
import { KEY_LOOKUP, viewerOf } from '../domain/api-keys.js';
import { MAX_PREPARED_STATEMENT_TEXTS, MAX_RESPONSE_BYTES } from '../domain/limits.js';
import type { Viewer } from '../domain/viewer.js';
import { planRead } from './plan.js';
import { statementOf, TOKEN_PLACEHOLDER } from './sql.js';

/**
 * Reads compiled to one SQL statement that builds the response's JSON in PostgreSQL, as a
 * hand-written query would: a plan of the selection (plan.ts), then its statement (sql.ts).
 * The result is exactly what the resolvers produce for the same query
 * (test/compiled-reads.test.ts compares the two). No data is cached: every request reads
 * the database under the caller's workspace.
 */

/**
 * Runs the compiled statement for a token's SHA-256: null when no unrevoked key has it;
 * else the key as a viewer, and the response's `data` as JSON text (null for a key the
 * access policy does not let read all of it: the resolvers must answer).
 */
export type CompiledRead = (tokenSha256: string) => Promise<{ viewer: Viewer; data: string | Uint8Array | null } | null>;

/**
 * The statement texts that may be prepared: the first MAX_PREPARED_STATEMENT_TEXTS distinct
 * ones this process compiled (the shapes clients send all day come first); later shapes run
 * unprepared, so that no connection keeps ever more prepared statements.
 */
const preparedTexts = new Set<string>();

function mayPrepare(text: string): boolean {
  if (preparedTexts.has(text)) return true;
  if (preparedTexts.size >= MAX_PREPARED_STATEMENT_TEXTS) return false;
  preparedTexts.add(text);
  return true;
}

const decoder = new TextDecoder();
const decode = (bytes: Uint8Array | null | undefined) => (bytes == null ? null : decoder.decode(bytes));
const LOOKUP_COLUMNS = Object.keys(KEY_LOOKUP.columns) as (keyof typeof KEY_LOOKUP.columns)[];

/** The statement that answers this query with its own authentication, or null when the resolvers must. */
export function compileRead(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  run: RunStatement,
  runRaw?: RunStatementRaw,
): CompiledRead | null {
  if (operation.operation !== 'query') return null;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) return null;
  const plan = planRead(document, operation, coerced.coerced);
  // An answer that could pass the budget is built by the resolvers, which spend it as they go.
  if (!plan || plan.worstBytes > MAX_RESPONSE_BYTES) return null;
  const { text, params } = statementOf(plan, kindsAllowedToTakeAll(plan.actions)).toQuery();
  const tokenIndex = params.indexOf(TOKEN_PLACEHOLDER);
  const options = { prepare: mayPrepare(text) };
  return async (tokenSha256) => {
    const values = [...params];
    values[tokenIndex] = tokenSha256;
    if (runRaw) {
      const [raw] = await runRaw(text, values, options);
      if (!raw) return null;
      const key = Object.fromEntries(LOOKUP_COLUMNS.map((name, index) => [name, decode(raw[index])]));
      return { viewer: viewerOf(key as never), data: raw[LOOKUP_COLUMNS.length] ?? null };
    }
    const [row] = await run(text, values, options);
    if (!row) return null;
    const key = Object.fromEntries(LOOKUP_COLUMNS.map((name) => [name, row[KEY_LOOKUP.columns[name].name] ?? null]));
    return { viewer: viewerOf(key as never), data: (row.data as string | null) ?? null };
  };
}
