import type { DocumentNode, GraphQLError, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import type { RunStatement, RunStatementRaw } from '../db/client.js';
import { kindOfId } from '../domain/ids.js';
import { MAX_CACHED_VARIABLES_BYTES, MAX_COMPILED_READ_CACHE_BYTES, MAX_COMPILED_SEARCH_CACHE_BYTES } from '../domain/limits.js';
import { ByteBoundedCache } from '../graphql/document-cache.js';
import { estimateCost, type CostEstimate } from '../graphql/query-limits.js';
import { compileRead, compileReadTemplate, idVariablesOf, type CompiledRead, type IdSlot, type ReadTemplate } from '../read-compiler/compile.js';
import { searchesAtRoot } from '../read-compiler/search-plan.js';

/**
 * The compiled reads and cost estimates a process keeps, by operation and variables, each
 * bounded in bytes. Documents are immutable and shared through the parse cache, so an
 * operation node stands for its text.
 *
 * - Reads are kept as templates (compile.ts: one for every id of a kind), by operation,
 *   variables and the kinds of its ids: a template holds only its statement and
 *   parameters, so requests share it. Estimates are kept by the same keys: an ID variable
 *   that holds an id of ours counts by its kind only, as an estimate does not depend on
 *   which id it is, so the reads of one shape share one estimate however many ids they ask
 *   for. Queries only: a mutation's variables (contents, above all) rarely come twice.
 * - A read counts its document's text among its bytes: its names and literals are slices
 *   of it (the parser's), so a read that keeps one keeps it all (300 reads of distinct
 *   240 KB documents kept 70 MiB beside a 16 MiB budget when only the read was counted).
 * - Searches (operations with `searchMemories` at their root), and their estimates, are
 *   kept apart (MAX_COMPILED_SEARCH_CACHE_BYTES), by their variables' very values: the
 *   texts people search for rarely come twice, and must not push the dashboards' reads out.
 */
export class CompiledReadCache {
  private readonly reads = new ByteBoundedCache<ReadTemplate>(MAX_COMPILED_READ_CACHE_BYTES, (key, template) => 2 * key.length + template.bytes + 256);
  private readonly estimates = new ByteBoundedCache<CostEstimate>(MAX_COMPILED_READ_CACHE_BYTES / 4, (key) => 2 * key.length + 128);
  private readonly searches = new ByteBoundedCache<CompiledRead | null>(MAX_COMPILED_SEARCH_CACHE_BYTES, (key, read) => 2 * key.length + (read?.bytes ?? 0) + 256);
  private readonly searchEstimates = new ByteBoundedCache<CostEstimate>(MAX_COMPILED_SEARCH_CACHE_BYTES / 4, (key) => 2 * key.length + 128);
  /** Whether each operation searches (searchesAtRoot), as first asked. */
  private readonly searching = new WeakMap<OperationDefinitionNode, boolean>();

  /** `run` (and `runRaw`): the statement runners of compiled reads; without one, every read goes to the resolvers. */
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly run: RunStatement | undefined,
    private readonly runRaw: RunStatementRaw | undefined,
  ) {}

  /**
   * The operation's cost estimate (query-cost.ts) with these variables, into `state.cost`
   * (left as it is when there is none), and its errors: a query's, kept when it has no
   * errors (errors belong to their request).
   */
  estimate(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined, introspection: boolean, state: { cost?: CostEstimate }): GraphQLError[] | null {
    const search = this.isSearch(document, operation);
    const key = operation.operation !== 'query' ? null : search ? exactKeyOf(operation, variables) : (templateKeyOf(operation, variables)?.key ?? null);
    const kept = search ? this.searchEstimates : this.estimates;
    const known = key === null ? undefined : kept.get(key);
    if (known) {
      state.cost = known;
      return null;
    }
    const { cost, errors } = estimateCost(this.schema, document, operation, variables, introspection);
    if (cost) state.cost = cost;
    if (cost && !errors && key !== null) kept.set(key, Object.freeze(cost));
    return errors;
  }

  /** Whether `compile` answers without compiling: what it would compile is kept, or it compiles nothing (not a query). */
  holds(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): boolean {
    if (!this.run || operation.operation !== 'query') return true;
    if (this.isSearch(document, operation)) {
      const key = exactKeyOf(operation, variables);
      return key !== null && this.searches.has(key);
    }
    const keyed = templateKeyOf(operation, variables);
    return keyed !== null && this.reads.has(keyed.key);
  }

  /** The compiled form of a read, or null when the resolvers answer. */
  compile(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): CompiledRead | null {
    const run = this.run;
    if (!run || operation.operation !== 'query') return null;
    if (this.isSearch(document, operation)) {
      const key = exactKeyOf(operation, variables);
      if (key === null) return compileRead(this.schema, document, operation, variables, run, this.runRaw);
      let read = this.searches.get(key);
      if (read === undefined) this.searches.set(key, (read = compileRead(this.schema, document, operation, variables, run, this.runRaw)));
      return read;
    }
    const keyed = templateKeyOf(operation, variables);
    if (keyed === null) return compileRead(this.schema, document, operation, variables, run, this.runRaw);
    let template = this.reads.get(keyed.key);
    if (template === undefined) this.reads.set(keyed.key, (template = compileReadTemplate(this.schema, document, operation, variables, keyed.slots, run, this.runRaw)));
    return template.readFor(variables);
  }

  private isSearch(document: DocumentNode, operation: OperationDefinitionNode): boolean {
    let search = this.searching.get(operation);
    if (search === undefined) this.searching.set(operation, (search = searchesAtRoot(document, operation)));
    return search;
  }
}

/** Each operation node a number of its own, for the cache keys of its compiled reads. */
const operationNumbers = new WeakMap<OperationDefinitionNode, number>();
let nextOperationNumber = 0;

function keyOf(operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined, slots: readonly IdSlot[] = []): string | null {
  // Only the declared variables count (the others are ignored); values nested too deep to
  // write out (a body may hold thousands of levels) or too long are no key.
  // An absent variable (its default applies) and a null one differ: absent ones are left out.
  // Without a prototype, a variable named __proto__ is a key like any other.
  // A slot's value counts by its kind alone, written after the others' values.
  const declared: Record<string, unknown> = Object.create(null);
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    if (variables !== undefined && Object.hasOwn(variables, name) && !slots.some((slot) => slot.name === name)) declared[name] = variables[name];
  }
  // JSON writes Infinity and NaN (1e400 in a body) as null, which they are not: such values are no key.
  let finite = true;
  let text: string;
  try {
    text = JSON.stringify(declared, (_name, value: unknown) => {
      if (typeof value === 'number' && !Number.isFinite(value)) finite = false;
      return value;
    });
  } catch {
    return null;
  }
  if (!finite) return null;
  if (text.length > MAX_CACHED_VARIABLES_BYTES) return null;
  let number = operationNumbers.get(operation);
  if (number === undefined) operationNumbers.set(operation, (number = (nextOperationNumber += 1)));
  return slots.length === 0 ? `${number} ${text}` : `${number} ${text} ${slots.map((slot) => `${slot.name}:${slot.kind}`).join(' ')}`;
}

/** The ID variables of each operation (compile.ts, idVariablesOf). */
const idVariables = new WeakMap<OperationDefinitionNode, string[]>();

/**
 * `compute`, remembering its last answer: a request asks for its key twice in one turn, for
 * its cost and for its compiled read.
 */
function rememberingLast<T>(compute: (operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined) => T) {
  let last: { operation: OperationDefinitionNode; variables: Record<string, unknown> | undefined; value: T } | null = null;
  return (operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): T => {
    if (last?.operation === operation && last.variables === variables) return last.value;
    const value = compute(operation, variables);
    last = { operation, variables, value };
    return value;
  };
}

/** The key of these very variables (a search's: no slots). */
const exactKeyOf = rememberingLast((operation, variables) => keyOf(operation, variables));

/** The key of a query's read template (compile.ts) with these variables, and its slots: the ID variables whose values are ids of ours. */
const templateKeyOf = rememberingLast(templateKeyWithSlots);

function templateKeyWithSlots(operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): { key: string; slots: IdSlot[] } | null {
  let names = idVariables.get(operation);
  if (names === undefined) idVariables.set(operation, (names = idVariablesOf(operation)));
  const slots: IdSlot[] = [];
  for (const name of names) {
    const value = variables !== undefined && Object.hasOwn(variables, name) ? variables[name] : undefined;
    const kind = typeof value === 'string' ? kindOfId(value) : null;
    if (kind !== null) slots.push({ name, kind });
  }
  const key = keyOf(operation, variables, slots);
  return key === null ? null : { key, slots };
}
