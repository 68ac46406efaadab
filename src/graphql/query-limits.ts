import {
  getVariableValues,
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  visit,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ParseOptions,
  type SelectionSetNode,
  type Source,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import {
  CONTENT_FIELD_COST,
  COUNT_SCAN_COST,
  MAX_QUERY_ALIASES,
  MAX_QUERY_COST,
  MAX_QUERY_DEPTH,
  MAX_QUERY_DIRECTIVES,
  MAX_QUERY_TOKENS,
} from '../domain/limits.js';
import { operationCost } from './query-cost.js';

export type QueryLimitName = 'depth' | 'aliases' | 'tokens' | 'directives' | 'cost';

export const QUERY_TOO_COMPLEX = 'QUERY_TOO_COMPLEX';
export const INTROSPECTION_DISABLED = 'INTROSPECTION_DISABLED';
export const GRAPHQL_PARSE_FAILED = 'GRAPHQL_PARSE_FAILED';
export const GRAPHQL_VALIDATION_FAILED = 'GRAPHQL_VALIDATION_FAILED';

/** A top-level refusal of an operation's shape: HTTP 400, nothing executed. */
function queryTooComplex(limit: QueryLimitName, message: string, value: number | null, max: number): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: QUERY_TOO_COMPLEX, limit, ...(value === null ? {} : { value }), max, http: { status: 400 } },
  });
}

export interface DocumentMeasures {
  /** The deepest nesting of fields in any operation, fragments expanded. */
  depth: number;
  /** Aliased fields written in the document. */
  aliases: number;
  /** Directive uses written in the document. */
  directives: number;
}

/** Measures a parsed document (its size is already bounded by MAX_QUERY_TOKENS). */
export function measureDocument(document: DocumentNode): DocumentMeasures {
  let aliases = 0;
  let directives = 0;
  const fragments = new Map<string, FragmentDefinitionNode>();
  visit(document, {
    Field(node) {
      if (node.alias) aliases += 1;
    },
    Directive() {
      directives += 1;
    },
    FragmentDefinition(node) {
      fragments.set(node.name.value, node);
    },
  });

  const fragmentDepths = new Map<string, number>();
  const expanding = new Set<string>();
  const selectionDepth = (selectionSet: SelectionSetNode | undefined): number => {
    let deepest = 0;
    for (const selection of selectionSet?.selections ?? []) {
      let depth = 0;
      if (selection.kind === Kind.FIELD) {
        depth = 1 + selectionDepth(selection.selectionSet);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        depth = selectionDepth(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        // Unknown and cyclic spreads count 0 here: validation refuses them anyway.
        if (fragment && !expanding.has(name)) {
          if (!fragmentDepths.has(name)) {
            expanding.add(name);
            fragmentDepths.set(name, selectionDepth(fragment.selectionSet));
            expanding.delete(name);
          }
          depth = fragmentDepths.get(name)!;
        }
      }
      deepest = Math.max(deepest, depth);
    }
    return deepest;
  };

  let depth = 0;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) depth = Math.max(depth, selectionDepth(definition.selectionSet));
  }
  return { depth, aliases, directives };
}

/** Refuses documents deeper, more aliased or more directed than the limits. */
function documentLimitsRule(context: ValidationContext): ASTVisitor {
  return {
    Document(document) {
      const { depth, aliases, directives } = measureDocument(document);
      if (depth > MAX_QUERY_DEPTH) {
        context.reportError(
          queryTooComplex('depth', `The query nests fields ${depth} levels deep; the limit is ${MAX_QUERY_DEPTH}.`, depth, MAX_QUERY_DEPTH),
        );
      }
      if (aliases > MAX_QUERY_ALIASES) {
        context.reportError(
          queryTooComplex('aliases', `The query uses ${aliases} aliases; the limit is ${MAX_QUERY_ALIASES}.`, aliases, MAX_QUERY_ALIASES),
        );
      }
      if (directives > MAX_QUERY_DIRECTIVES) {
        context.reportError(
          queryTooComplex(
            'directives',
            `The query uses ${directives} directives; the limit is ${MAX_QUERY_DIRECTIVES}.`,
            directives,
            MAX_QUERY_DIRECTIVES,
          ),
        );
      }
      return false;
    },
  };
}

/** graphql-js aborts parsing past `maxTokens` with this message ("more that" in 16.x). */
const TOO_MANY_TOKENS = /Document contains more th(?:an|at) \d+ tokens/;

/** "Did you mean …?" hints name fields and types: they are introspection by other means. */
const SUGGESTION = /\s*Did you mean .*\?$/s;

/** Parses a query under MAX_QUERY_TOKENS; past it, QUERY_TOO_COMPLEX. */
export function parseWithLimits(source: string | Source, parseOptions?: ParseOptions): DocumentNode {
  try {
    return parse(source, { ...parseOptions, maxTokens: MAX_QUERY_TOKENS });
  } catch (error) {
    if (error instanceof GraphQLError && TOO_MANY_TOKENS.test(error.message)) {
      throw queryTooComplex(
        'tokens',
        `The query has more than ${MAX_QUERY_TOKENS} tokens (names, punctuation and values); the limit is ${MAX_QUERY_TOKENS}.`,
        null,
        MAX_QUERY_TOKENS,
      );
    }
    if (error instanceof GraphQLError) {
      throw new GraphQLError(error.message, { source: error.source, positions: error.positions, extensions: { code: GRAPHQL_PARSE_FAILED, http: { status: 400 } } });
    }
    throw error;
  }
}

/** Every validation rule a document must pass: GraphQL's own, the shape limits, and introspection when off. */
export function validationRules(introspection: boolean): ValidationRule[] {
  return [...specifiedRules, documentLimitsRule, ...(introspection ? [] : [NoSchemaIntrospectionCustomRule])];
}

/** The code of a request the server cannot run as sent (bad variables, no query). */
export const INVALID_REQUEST = 'INVALID_REQUEST';

/** Removes "Did you mean …?" hints from a message when names must not be suggested. */
function withoutSuggestions(message: string, introspection: boolean): string {
  return introspection ? message : message.replace(SUGGESTION, '');
}

/**
 * The errors that stop an operation before execution: variables that cannot be coerced to
 * their types (INVALID_REQUEST, one error per variable), or a cost over MAX_QUERY_COST
 * (QUERY_TOO_COMPLEX). Both are HTTP 400. Null when it may run.
 */
/** An operation's estimated cost against the limit: what `extensions.cost` reports. */
export interface CostEstimate {
  estimated: number;
  limit: number;
}

/** How many costs this process has estimated: tests count them. */
let estimates = 0;
export const costsEstimatedSoFar = () => estimates;

/**
 * The operation's variables coerced and its cost estimated: the estimate (null when the
 * variables do not fit their types), and the errors that refuse the request, if any.
 */
export function estimateCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  introspection: boolean,
): { cost: CostEstimate | null; errors: GraphQLError[] | null } {
  estimates += 1;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) {
    const errors = coerced.errors.map(
      (error) => new GraphQLError(withoutSuggestions(error.message, introspection), { nodes: error.nodes, extensions: { code: INVALID_REQUEST, http: { status: 400 } } }),
    );
    return { cost: null, errors };
  }
  const estimated = operationCost(schema, document, operation, coerced.coerced, {});
  const cost = { estimated, limit: MAX_QUERY_COST };
  if (estimated <= MAX_QUERY_COST) return { cost, errors: null };
  const refusal = queryTooComplex(
    'cost',
    `The query's estimated cost is ${estimated}; the limit is ${MAX_QUERY_COST}. ` +
      `Each field costs 1, a connection multiplies its edges by first/last, content costs ${CONTENT_FIELD_COST} and a totalCount that must count ${COUNT_SCAN_COST}: ` +
      'ask for smaller pages, fewer nested lists, less content or fewer counts.',
    estimated,
    MAX_QUERY_COST,
  );
  return { cost, errors: [refusal] };
}

/**
 * A document's validation errors, as clients see them: GraphQL's rules, the shape limits and
 * (when off) introspection. Every one is a request error, HTTP 400 with a code, whatever the
 * response type; with introspection off, without the names "Did you mean …?" would give away.
 */
export function validateDocument(schema: GraphQLSchema, document: DocumentNode, introspection: boolean): readonly GraphQLError[] {
  return validate(schema, document, validationRules(introspection)).map((error) => {
    if (error.message.startsWith('GraphQL introspection has been disabled')) {
      return new GraphQLError('Introspection is turned off on this server (MEMSTORE_INTROSPECTION); the schema is published as schema.graphql.', {
        nodes: error.nodes,
        extensions: { code: INTROSPECTION_DISABLED, http: { status: 400 } },
      });
    }
    const code = (error.extensions?.code as string | undefined) ?? GRAPHQL_VALIDATION_FAILED;
    return new GraphQLError(withoutSuggestions(error.message, introspection), {
      nodes: error.nodes,
      extensions: { ...error.extensions, code, http: { status: 400 } },
    });
  });
}
