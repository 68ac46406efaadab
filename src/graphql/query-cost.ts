import type { FieldComplexityValue } from '@pothos/plugin-complexity';
import {
  getArgumentValues,
  getNamedType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { COUNT_SCAN_COST, DEFAULT_PAGE_SIZE, MAX_EXPLICIT_MOUNTS_PER_PAIR, MAX_NODE_IDS, MAX_PAGE_SIZE } from '../domain/limits.js';
import { isMemoryCountKept } from '../domain/memories/reads.js';
import { isVersionCountKept } from '../domain/versions.js';

/**
 * The cost model behind MAX_QUERY_COST (see limits.ts). From the query's shape and
 * arguments alone, it estimates the rows and bytes an operation can make the server read
 * and produce:
 * - a field costs 1, or what it declares (Pothos `complexity`: `content` costs
 *   CONTENT_FIELD_COST);
 * - a list multiplies the cost of its selection by the most items it can hold; in a
 *   connection, its `edges` by the page (`first` or `last`, else DEFAULT_PAGE_SIZE), while
 *   `pageInfo` and `totalCount` come once per connection;
 * - `totalCount` costs what counting reads: 1 where a counter kept with every write answers
 *   it (COUNTS_KEPT below, the same rules the resolvers and compiled reads follow), else
 *   COUNT_SCAN_COST, whatever the page size (`first: 0` included).
 */

/** The most items a list field can hold, when it is not a paged connection. */
const LIST_BOUNDS: Record<string, (args: Record<string, unknown>) => number> = {
  // Items of a page: the connection multiplies them by its page size.
  edges: () => 1,
  nodes: (args) => (Array.isArray(args.ids) ? Math.min(args.ids.length, MAX_NODE_IDS) : MAX_NODE_IDS),
  // A session's mounts: the default slot plus the explicit ones.
  mounts: () => MAX_EXPLICIT_MOUNTS_PER_PAIR + 1,
  shadowed: () => MAX_EXPLICIT_MOUNTS_PER_PAIR,
};
/** Lists not named above (small value lists such as validation issues). */
const OTHER_LIST_BOUND = 10;

/**
 * The connections whose `totalCount` a counter answers, for the arguments given: a store's
 * memories without a path prefix (its entryCount), and a memory's versions without filters
 * (its version sequence). Every other count reads the items it counts.
 */
const COUNTS_KEPT: Record<string, (args: Record<string, unknown>) => boolean> = {
  'MemoryStore.memories': (args) => isMemoryCountKept({ pathPrefix: (args.pathPrefix as string | null | undefined) ?? undefined }),
  'Memory.versions': (args) =>
    isVersionCountKept({
      operation: (args.operation as never) ?? undefined,
      apiKeyId: (args.apiKeyId as string | null | undefined) ?? undefined,
      sessionId: (args.sessionId as string | null | undefined) ?? undefined,
    }),
  // At most the default slot and MAX_EXPLICIT_MOUNTS_PER_PAIR mounts: counting reads few rows.
  'Query.memoryStoreMounts': () => true,
};

function isList(type: GraphQLOutputType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

function isConnection(type: GraphQLOutputType): boolean {
  return getNamedType(type).name.endsWith('Connection');
}

/** The page a connection field will return at most: `first` or `last`, else the default. */
function requestedPageSize(args: Record<string, unknown>): number {
  const size = typeof args.first === 'number' ? args.first : typeof args.last === 'number' ? args.last : DEFAULT_PAGE_SIZE;
  // Out-of-range sizes are refused by the resolver; the estimate only needs to stay sane.
  return Math.min(Math.max(size, 0), MAX_PAGE_SIZE);
}

/** Pothos' `fieldComplexity`: the cost of a field that declares none of its own (lists by their bound). */
export function fieldCost(args: Record<string, unknown>, _context: unknown, field: GraphQLField<unknown, any>): FieldComplexityValue {
  if (!isConnection(field.type) && isList(field.type)) {
    const bound = LIST_BOUNDS[field.name];
    return { field: 1, multiplier: bound ? bound(args) : OTHER_LIST_BOUND };
  }
  return 1;
}

/** The operation a request runs: the named one, or the only one. Null when there is none such. */
export function selectOperation(document: DocumentNode, operationName: string | null | undefined): OperationDefinitionNode | null {
  const operations = document.definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  if (operationName) return operations.find((operation) => operation.name?.value === operationName) ?? null;
  return operations.length === 1 ? operations[0]! : null;
}

type DeclaredCost = number | FieldComplexityValue | ((args: Record<string, unknown>, context: object, field: GraphQLField<unknown, unknown>) => number | FieldComplexityValue);

class CostWalker {
  private readonly fragments = new Map<string, FragmentDefinitionNode>();
  private readonly active = new Set<SelectionSetNode>();

  constructor(
    private readonly schema: GraphQLSchema,
    document: DocumentNode,
    private readonly variables: Record<string, unknown>,
    private readonly context: object,
  ) {
    for (const definition of document.definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) this.fragments.set(definition.name.value, definition);
    }
  }

  /** The cost of a selection set on `type`; inside a connection, `connection` holds its page size and count rule. */
  selection(selectionSet: SelectionSetNode, type: GraphQLNamedType, connection?: { pageSize: number; countKept: boolean }): number {
    // Validation refuses cyclic fragments; this only keeps the walk finite.
    if (this.active.has(selectionSet)) return 0;
    this.active.add(selectionSet);
    let cost = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.FIELD) {
        cost += this.field(selection, type, connection);
      } else {
        const fragment = selection.kind === Kind.FRAGMENT_SPREAD ? this.fragments.get(selection.name.value) : selection;
        if (!fragment) continue;
        const condition = fragment.typeCondition ? this.schema.getType(fragment.typeCondition.name.value) : type;
        if (condition) cost += this.selection(fragment.selectionSet, condition, connection);
      }
    }
    this.active.delete(selectionSet);
    return cost;
  }

  private field(node: import('graphql').FieldNode, type: GraphQLNamedType, connection?: { pageSize: number; countKept: boolean }): number {
    const name = node.name.value;
    if (name.startsWith('__')) return 1;
    const field = isObjectType(type) || isInterfaceType(type) ? type.getFields()[name] : undefined;
    // Unknown fields are refused by validation.
    if (!field) return 0;
    if (connection && name === 'totalCount') return connection.countKept ? 1 : COUNT_SCAN_COST;
    const args = getArgumentValues(field, node, this.variables);
    const declared = (field.extensions as { complexity?: DeclaredCost }).complexity ?? fieldCost(args, this.context, field);
    const value = typeof declared === 'function' ? declared(args, this.context, field as GraphQLField<unknown, unknown>) : declared;
    const own = typeof value === 'number' ? value : (value.field ?? 1);
    let multiplier = typeof value === 'number' ? 1 : (value.multiplier ?? 1);
    let inner: { pageSize: number; countKept: boolean } | undefined;
    if (isConnection(field.type)) {
      inner = { pageSize: requestedPageSize(args), countKept: COUNTS_KEPT[`${type.name}.${name}`]?.(args) ?? false };
      multiplier = 1;
    }
    const cost = own + (node.selectionSet ? multiplier * this.selection(node.selectionSet, getNamedType(field.type), inner) : 0);
    // Each item of a page: its edge, its node and what they select.
    return connection && name === 'edges' ? connection.pageSize * cost : cost;
  }
}

/** The cost of one operation of a validated document, with the request's variables coerced. */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, coercedVariables: Record<string, unknown>, context: object): number {
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;
  return new CostWalker(schema, document, coercedVariables, context).selection(operation.selectionSet, root);
}
