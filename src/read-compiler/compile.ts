import { getVariableValues, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { RunStatement, RunStatementRaw } from '../db/client.js';
import { kindsAllowedToTakeAll } from '../domain/access.js';
import { KEY_LOOKUP, viewerOf } from '../domain/api-keys.js';
import { MAX_PREPARED_STATEMENT_TEXTS, MAX_RESPONSE_BYTES } from '../domain/limits.js';
import type { ApiKeyKind, Viewer } from '../domain/viewer.js';
import { planRead, type ReadPlan } from './plan.js';
import { checkStatementOf, statementOf, TOKEN_PLACEHOLDER } from './sql.js';

/**
 * Reads compiled to one SQL statement that builds the response's JSON in PostgreSQL, as a
 * hand-written query would: a plan of the selection (plan.ts), then its statement (sql.ts).
 * The result is exactly what the resolvers produce for the same query
 * (test/compiled-reads.test.ts compares the two). No data is cached: every request reads
 * the database under the caller's workspace.
 */

/** What a compiled statement says for a token's SHA-256 (null when no unrevoked key has it). */
export interface CompiledAnswer {
  viewer: Viewer;
  /** The response's `data` as JSON text; null for a key the access policy does not let read all of it (the resolvers must answer). */
  data: string | Uint8Array | null;
  /** The workspace's change mark (domain/events.ts) in the same snapshot; null whenever data is. */
  mark: string | null;
}

export interface CompiledRead {
  /** Runs the statement: the key, the answer and the change mark. */
  read(tokenSha256: string): Promise<CompiledAnswer | null>;
  /** The key and the change mark only (data is null), without building the answer: for a conditional request. */
  check(tokenSha256: string): Promise<CompiledAnswer | null>;
  /** Everything the answer depends on besides the data and the key: the statement's text and its other parameters. */
  readonly shape: string;
  /** About the memory it holds, in bytes. */
  readonly bytes: number;
}

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

/**
 * The kinds of key a plan's statement answers (the others are left to the resolvers), and
 * those it gives the workspace's change mark: a mark tells when the workspace last changed,
 * so only keys that may also watch its changes (its live updates) get one.
 */
export function keyKindsOf(plan: ReadPlan): { allowed: ApiKeyKind[]; marked: ApiKeyKind[] } {
  return { allowed: kindsAllowedToTakeAll(plan.actions), marked: kindsAllowedToTakeAll([...plan.actions, { type: 'memoryEvents.subscribe' }]) };
}

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
  const { allowed, marked } = keyKindsOf(plan);
  const { text, params } = statementOf(plan, allowed, marked).toQuery();
  const tokenIndex = params.indexOf(TOKEN_PLACEHOLDER);
  let check: ((tokenSha256: string) => Promise<CompiledAnswer | null>) | null = null;
  let shape: string | null = null;
  return {
    read: runner(text, params, tokenIndex, run, runRaw),
    check: (tokenSha256) => {
      // Built on first use: most requests are not conditional.
      if (!check) {
        const statement = checkStatementOf(plan, allowed, marked).toQuery();
        check = runner(statement.text, statement.params, statement.params.indexOf(TOKEN_PLACEHOLDER), run, runRaw);
      }
      return check(tokenSha256);
    },
    get shape() {
      return (shape ??= JSON.stringify([text, params.map((value) => (value === TOKEN_PLACEHOLDER ? null : value))]));
    },
    // The text, and once asked for, its shape and the check statement's text.
    bytes: 6 * text.length + 64 * params.length,
  };
}

/** Runs a compiled statement's text with the token's SHA-256 in its place among the parameters. */
function runner(text: string, params: unknown[], tokenIndex: number, run: RunStatement, runRaw: RunStatementRaw | undefined) {
  const options = { prepare: mayPrepare(text) };
  return async (tokenSha256: string): Promise<CompiledAnswer | null> => {
    const values = [...params];
    values[tokenIndex] = tokenSha256;
    if (runRaw) {
      const [raw] = await runRaw(text, values, options);
      if (!raw) return null;
      const key = Object.fromEntries(LOOKUP_COLUMNS.map((name, index) => [name, decode(raw[index])]));
      return { viewer: viewerOf(key as never), data: raw[LOOKUP_COLUMNS.length] ?? null, mark: decode(raw[LOOKUP_COLUMNS.length + 1]) };
    }
    const [row] = await run(text, values, options);
    if (!row) return null;
    const key = Object.fromEntries(LOOKUP_COLUMNS.map((name) => [name, row[KEY_LOOKUP.columns[name].name] ?? null]));
    return { viewer: viewerOf(key as never), data: (row.data as string | null) ?? null, mark: (row.mark as string | null) ?? null };
  };
}
