import { complexityFromQuery, type FieldComplexityValue } from '@pothos/plugin-complexity';
import {
  getNamedType,
  isListType,
  isNonNullType,
  Kind,
  type DocumentNode,
  type GraphQLField,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { DEFAULT_PAGE_SIZE, MAX_EXPLICIT_MOUNTS_PER_PAIR, MAX_NODE_IDS, MAX_PAGE_SIZE } from '../domain/limits.js';

/**
 * The cost model behind MAX_QUERY_COST (see limits.ts). It estimates the rows and bytes an
 * operation can make the server produce, from the query's shape and arguments alone:
 * a field costs 1 (`content` costs CONTENT_FIELD_COST, set on those fields), and a list
 * multiplies the cost of its selection by the most items it can hold.
 */

/** The most items a list field can hold, when it is not a paged connection. */
const LIST_BOUNDS: Record<string, (args: Record<string, unknown>) => number> = {
  // Items of a page: the connection field already multiplied by the page size.
  edges: () => 1,
  nodes: (args) => (Array.isArray(args.ids) ? Math.min(args.ids.length, MAX_NODE_IDS) : MAX_NODE_IDS),
  // A session's mounts: the default slot plus the explicit ones.
  mounts: () => MAX_EXPLICIT_MOUNTS_PER_PAIR + 1,
  shadowed: () => MAX_EXPLICIT_MOUNTS_PER_PAIR,
};
/** Lists not named above (small value lists such as validation issues). */
const OTHER_LIST_BOUND = 10;

function isList(type: GraphQLOutputType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

/** The page a connection field will return at most: `first` or `last`, else the default. */
function requestedPageSize(args: Record<string, unknown>): number {
  const size = typeof args.first === 'number' ? args.first : typeof args.last === 'number' ? args.last : DEFAULT_PAGE_SIZE;
  // Out-of-range sizes are refused by the resolver; the estimate only needs to stay sane.
  return Math.min(Math.max(size, 0), MAX_PAGE_SIZE);
}

/** Pothos' `fieldComplexity`: the cost of every field that does not set its own. */
export function fieldCost(args: Record<string, unknown>, _context: unknown, field: GraphQLField<unknown, any>): FieldComplexityValue {
  if (getNamedType(field.type).name.endsWith('Connection')) return { field: 1, multiplier: requestedPageSize(args) };
  if (isList(field.type)) {
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

/**
 * The cost of one operation of a validated document with the request's variables. Throws
 * the GraphQLErrors of variables that cannot be coerced (as execution would).
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  context: object,
): number {
  // complexityFromQuery measures the document's first operation: put the chosen one first.
  const reordered: DocumentNode = {
    ...document,
    definitions: [operation, ...document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION)],
  };
  return complexityFromQuery(reordered, { schema, ctx: context, variables: variables ?? {} }).complexity;
}
