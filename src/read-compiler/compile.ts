import { getVariableValues, Kind, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type TypeNode } from 'graphql';
import type { RunStatement, RunStatementRaw } from '../db/client.js';
import type { StatementScope } from '../db/deadline.js';
import { kindsAllowedToTakeAll } from '../domain/access.js';
import { newId, type IdKind } from '../domain/ids.js';
import { MAX_RESPONSE_BYTES } from '../domain/limits.js';
import { documentTextBytes } from '../graphql/document-cache.js';
import type { ApiKeyKind } from '../domain/viewer.js';
import { planRead, type ReadPlan } from './plan.js';
import { CompiledSearch } from './search.js';
import { statementOf } from './sql.js';
import { checkKey, parametersBytes, runnersOf, runStatement, statementShape, statementText, type CompiledAnswer, type CompiledRead, type StatementRunners, type StatementText } from './statements.js';

/**
 * Reads compiled to one SQL statement that builds the response's JSON in PostgreSQL, as a
 * hand-written query would: a plan of the selection (plan.ts), then its statement (sql.ts).
 * The result is exactly what the resolvers produce for the same query
 * (test/compiled-reads.test.ts compares the two). No data is cached: every request reads
 * the database under the caller's workspace.
 */

export type { CompiledAnswer, CompiledRead } from './statements.js';


/**
 * The kinds of key a plan's statement answers (the others are left to the resolvers), and
 * those it gives the workspace's change mark: a mark tells when the workspace last changed,
 * so only keys that may also watch its changes (its live updates) get one.
 */
export function keyKindsOf(plan: ReadPlan): { allowed: ApiKeyKind[]; marked: ApiKeyKind[] } {
  return { allowed: kindsAllowedToTakeAll(plan.actions), marked: kindsAllowedToTakeAll([...plan.actions, { type: 'memoryEvents.subscribe' }]) };
}

/** How many reads this process has compiled (planned and written): tests count them. */
let compilations = 0;
export const readsCompiledSoFar = () => compilations;

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
  // A variable named __proto__ is dropped by the resolvers' executor (it coerces into a plain
  // object) and kept by graphql's own coercion: left to the resolvers, the answer is theirs.
  if (operation.variableDefinitions?.some((definition) => definition.variable.name.value === '__proto__')) return null;
  compilations += 1;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) return null;
  const plan = planRead(document, operation, coerced.coerced);
  // An answer that could pass the budget is built by the resolvers, which spend it as they go.
  if (!plan || plan.worstBytes > MAX_RESPONSE_BYTES) return null;
  const { allowed, marked } = keyKindsOf(plan);
  // Its names and literals are slices of the document's text (the parser's), which it keeps alive.
  const textBytes = documentTextBytes(document);
  if (plan.fields.some((field) => field.kind === 'search')) return CompiledSearch.of(runnersOf(run, runRaw), plan, allowed, marked, textBytes);
  const { text, params } = statementOf(plan, allowed, marked).toQuery();
  return new CompiledStatement(runnersOf(run, runRaw), statementText(text), params, allowed, marked, textBytes);
}

/**
 * One compiled read for every id of a kind. The plan of a query depends on the value of a
 * variable of type ID only through its kind (plan.ts checks that an id is one of ours, of
 * the kind its field reads, then passes it to the statement as a parameter), so a query
 * asked for ten thousand memories by id needs planning once, not once per id: its read is
 * compiled with a fresh id of the same kind in the place of each such variable (a
 * `slot`), and each request's ids go into the parameters where those fresh ids went. The
 * pipeline keeps templates by operation, the other variables' values and the slots' kinds
 * (http/compiled-read-cache.ts), which keeps searches apart, by their very variables: a
 * search is no template (its cursors name its store): with a slot, one compiled here is
 * left to the resolvers. A template whose fresh ids went anywhere but whole parameters (none does
 * today) compiles each request's read afresh. test/compiled-read-cache.test.ts holds
 * templates to what compileRead makes of the same variables.
 */
export interface ReadTemplate {
  /** The compiled read of these variables: those of the template's key (same values, same kinds of id in its slots). */
  readFor(variables: Record<string, unknown> | undefined): CompiledRead | null;
  /** About the memory it holds, in bytes. */
  readonly bytes: number;
}

/** A variable of type ID (nullable or not) whose value is an id of ours, of this kind. */
export interface IdSlot {
  name: string;
  kind: IdKind;
}

/** The variables of an operation declared as ID or ID!: those that may be slots. */
export function idVariablesOf(operation: OperationDefinitionNode): string[] {
  const isId = (type: TypeNode): boolean => (type.kind === Kind.NON_NULL_TYPE ? isId(type.type) : type.kind === Kind.NAMED_TYPE && type.name.value === 'ID');
  return (operation.variableDefinitions ?? []).filter((definition) => isId(definition.type)).map((definition) => definition.variable.name.value);
}

export function compileReadTemplate(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  slots: readonly IdSlot[],
  run: RunStatement,
  runRaw?: RunStatementRaw,
): ReadTemplate {
  if (slots.length === 0) return fixedTemplate(compileRead(schema, document, operation, variables, run, runRaw));
  const standIns = slots.map((slot) => newId(slot.kind));
  const withStandIns = { ...variables, ...Object.fromEntries(slots.map((slot, index) => [slot.name, standIns[index]])) };
  const compiled = compileRead(schema, document, operation, withStandIns, run, runRaw);
  if (!(compiled instanceof CompiledStatement)) return fixedTemplate(null);
  const places = standIns.map((standIn) => compiled.placesOf(standIn));
  // Not a template after all: each request's read is compiled afresh, from the document it holds.
  if (places.some((place) => place === null)) {
    return { readFor: (given) => compileRead(schema, document, operation, given, run, runRaw), bytes: COMPILED_READ_BYTES + documentTextBytes(document) };
  }
  return slottedTemplate(compiled, slots, places as number[][]);
}

// The templates that hold no document are made here, apart: closures made in one function
// share its context, and one of compileReadTemplate's holds the document, which every
// template would then keep alive (a template that compiles nothing, above all, which the
// cache charges nothing).
function fixedTemplate(compiled: CompiledRead | null): ReadTemplate {
  return { readFor: () => compiled, bytes: compiled?.bytes ?? 0 };
}

function slottedTemplate(compiled: CompiledStatement, slots: readonly IdSlot[], places: readonly (readonly number[])[]): ReadTemplate {
  return {
    readFor: (given) => compiled.withValuesAt(slots.map((slot, index) => ({ value: given![slot.name], places: places[index]! }))),
    bytes: compiled.bytes,
  };
}

/**
 * A compiled read: its statement's text (shared, see statementText) and parameters. Kept in
 * the pipeline's cache by operation and variables, so it holds nothing else: no plan and no
 * closures of its own.
 */
class CompiledStatement implements CompiledRead {
  private shapeText: string | null = null;

  constructor(
    private readonly runners: StatementRunners,
    private readonly statement: StatementText,
    private readonly params: unknown[],
    private readonly allowed: ApiKeyKind[],
    private readonly marked: ApiKeyKind[],
    /** The text of the document it was compiled from, which it keeps alive (documentTextBytes). */
    private readonly documentBytes: number,
  ) {}

  read(tokenSha256: string, scope?: StatementScope): Promise<CompiledAnswer | null> {
    return runStatement(this.runners, this.statement, this.params, tokenSha256, scope);
  }

  check(tokenSha256: string, scope?: StatementScope): Promise<CompiledAnswer | null> {
    return checkKey(this.runners, this.allowed, this.marked, tokenSha256, scope);
  }

  /**
   * The parameters that are exactly `value`, or null when `value` is also found anywhere
   * else: in the text, or within another parameter.
   */
  placesOf(value: string): number[] | null {
    if (this.statement.text.includes(value)) return null;
    const places: number[] = [];
    for (const [index, param] of this.params.entries()) {
      if (param === value) places.push(index);
      else if (mentions(param, value)) return null;
    }
    return places;
  }

  /** The same read with these values in these parameters. */
  withValuesAt(values: readonly { value: unknown; places: readonly number[] }[]): CompiledStatement {
    const params = this.params.slice();
    for (const { value, places } of values) for (const place of places) params[place] = value;
    return new CompiledStatement(this.runners, this.statement, params, this.allowed, this.marked, this.documentBytes);
  }

  get proven(): boolean {
    return this.statement.kept;
  }

  get shape(): string {
    return (this.shapeText ??= statementShape(this.statement, this.params));
  }

  /** Itself, its parameters and shape, its document's text; the statement's text too, unless kept once for all. */
  get bytes(): number {
    return COMPILED_READ_BYTES + parametersBytes(this.params, PARAMETER_BYTES) + this.documentBytes + (this.statement.kept ? 0 : 4 * this.statement.text.length);
  }
}

/** Whether a parameter's value holds `text` anywhere within it. */
function mentions(param: unknown, text: string): boolean {
  if (typeof param === 'string') return param.includes(text);
  try {
    return (JSON.stringify(param) ?? '').includes(text);
  } catch {
    // A value JSON cannot write (a bigint): assume it might.
    return true;
  }
}

/** What a compiled read holds besides its parameters (its object, kinds of key and shape), and each parameter with its share of the shape: measured on the benchmark's reads. */
const COMPILED_READ_BYTES = 768;
const PARAMETER_BYTES = 128;
