import SchemaBuilder from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import type { Context } from '../context.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../domain/limits.js';
import { fieldCost } from './query-cost.js';
import { DateTimeScalar, JSONObjectScalar, SafeIntScalar } from './scalars.js';

/** A node's id as clients see it: our ids carry their type in the prefix and are used unchanged. */
export function encodeNodeId(_typename: string, id: string | number | bigint): string {
  return String(id);
}

/** Setup only: plugins, scalars and defaults. Domain types live in ./types. */
export const builder = new SchemaBuilder<{
  Context: Context;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: false;
  DefaultEdgesNullability: false;
  DefaultNodeNullability: false;
  Scalars: {
    ID: { Input: string; Output: string };
    DateTime: { Input: Date; Output: Date };
    JSONObject: { Input: Record<string, unknown>; Output: Record<string, unknown> };
    SafeInt: { Input: number; Output: number };
  };
  Connection: { totalCount: () => Promise<number> };
}>({
  plugins: [ErrorsPlugin, RelayPlugin, ComplexityPlugin],
  complexity: {
    fieldComplexity: fieldCost,
    // Only the cost model is used: useQueryLimits (query-limits.ts) refuses a costly operation
    // as a whole before execution, instead of per root field during it.
    disabled: true,
  },
  defaultFieldNullability: false,
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    edgesFieldOptions: { nullable: false, description: 'The items of this page, in list order.' },
    nodeFieldOptions: { nullable: false, description: 'The item.' },
    cursorFieldOptions: { description: 'An opaque cursor: pass it as `after` or `before` to page from this item.' },
    pageInfoFieldOptions: { description: 'Where this page stands in the list.' },
    pageInfoTypeOptions: { description: 'Relay page information.' },
    hasNextPageFieldOptions: { description: 'Whether items follow this page.' },
    hasPreviousPageFieldOptions: { description: 'Whether items precede this page.' },
    startCursorFieldOptions: { description: 'The cursor of the first item; null for an empty page.' },
    endCursorFieldOptions: { description: 'The cursor of the last item; null for an empty page.' },
    firstArgOptions: { description: `The page size counted from the start (or from \`after\`): 0–${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}. Not with \`last\`.` },
    lastArgOptions: { description: `The page size counted back from the end (or from \`before\`): 0–${MAX_PAGE_SIZE}. Not with \`first\`.` },
    afterArgOptions: { description: 'Only items after the item with this cursor.' },
    beforeArgOptions: { description: 'Only items before the item with this cursor.' },
    idFieldOptions: { description: 'The object\'s id, prefixed with its type (`memstore_`, `mem_`, `memver_`, `sesn_`).' },
    nodeTypeOptions: { description: 'An object with a globally unique id; the id\'s prefix names its type (`memstore_`, `mem_`, `memver_`, `sesn_`).' },
    // node / nodes are defined in types/node.ts: an unknown or malformed id is null there.
    nodeQueryOptions: false,
    nodesQueryOptions: false,
    encodeGlobalID: encodeNodeId,
    decodeGlobalID: (globalID) => ({ typename: '', id: globalID }),
  },
  errors: { defaultTypes: [] },
});

builder.addScalarType('DateTime', DateTimeScalar);
builder.addScalarType('JSONObject', JSONObjectScalar);
builder.addScalarType('SafeInt', SafeIntScalar);

builder.queryType({ description: 'Reads. Every field sees only the caller\'s workspace.' });
builder.mutationType({
  description: 'Writes. Each returns a result union: its success type, or one of the error types that implement Error.',
});

builder.globalConnectionField('totalCount', (t) =>
  t.int({
    description: 'How many items the whole list holds under its filters (ignoring first/last/after/before).',
    resolve: (connection) => connection.totalCount(),
  }),
);
