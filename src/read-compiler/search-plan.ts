import { Kind, type DocumentNode, type FieldNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { WorkspaceAction } from '../domain/access.js';
import { PATH_MAX_BYTES, SEARCH_SNIPPET_MAX_LENGTH } from '../domain/limits.js';
import { checkSearchFilter, searchCursorFrom, searchName, type SearchCursor, type SearchFilter } from '../domain/search.js';
import { keyOf, pageSize, SHORT_FIELD_BYTES, unsupported, type ObjectTypeName, type ResponseKey } from './readable.js';

/**
 * The plan of `searchMemories` in a compiled read (search.ts answers it): a page of a
 * search — `query`, `first`, the `memoryStoreId` and `pathPrefix` filters and `after` (a
 * cursor of the same search; any other is the resolvers' to refuse) — and what the answer
 * selects of its connection. The
 * hits' nodes are planned as any Memory is (plan.ts) and written by the statement; the
 * rest (scores, snippets, cursors, pageInfo, totalCount) is written from the statement's
 * rows by the domain's own functions (domain/search.ts), in the shape declared here.
 */

export const SEARCH_FIELD = 'searchMemories';

/**
 * Whether an operation asks for a search at its root (through fragments too): the reads
 * that may be compiled searches. Read from the document alone, before any plan.
 */
export function searchesAtRoot(document: DocumentNode, operation: OperationDefinitionNode): boolean {
  const seen = new Set<string>();
  const within = (selections: SelectionSetNode): boolean =>
    selections.selections.some((selection) => {
      if (selection.kind === Kind.FIELD) return selection.name.value === SEARCH_FIELD;
      if (selection.kind === Kind.INLINE_FRAGMENT) return within(selection.selectionSet);
      if (seen.has(selection.name.value)) return false;
      seen.add(selection.name.value);
      const fragment = document.definitions.find((definition) => definition.kind === Kind.FRAGMENT_DEFINITION && definition.name.value === selection.name.value);
      return fragment?.kind === Kind.FRAGMENT_DEFINITION && within(fragment.selectionSet);
    });
  return within(operation.selectionSet);
}

/** A field the answer writes from the search's values: a leaf, the hit's memory (`node`), or an object or a list of objects of its own fields. */
interface Shape {
  typeName?: string;
  fields?: Readonly<Record<string, Shape>>;
  /** A list of such objects, at most this many. */
  list?: (size: number) => number;
  node?: true;
  /** The most bytes a leaf adds to the answer. */
  worstBytes?: number;
}

const LEAF: Shape = { worstBytes: SHORT_FIELD_BYTES };

/** A cursor: base64 (4/3) of a JSON array holding the path, each byte of which JSON escapes to at most 6. */
const CURSOR_BYTES = Math.ceil(((PATH_MAX_BYTES * 6 + 200) * 4) / 3) + SHORT_FIELD_BYTES;

/** The schema's MemorySearchConnection as this plan covers it (test/read-compiler.test.ts holds it to the schema). */
export const SEARCH_SHAPE: Shape = {
  typeName: 'MemorySearchConnection',
  fields: {
    totalCount: LEAF,
    pageInfo: { typeName: 'PageInfo', fields: { hasNextPage: LEAF, hasPreviousPage: LEAF, startCursor: { worstBytes: CURSOR_BYTES }, endCursor: { worstBytes: CURSOR_BYTES } } },
    edges: {
      typeName: 'MemorySearchEdge',
      list: (size) => size,
      fields: {
        cursor: { worstBytes: CURSOR_BYTES },
        score: LEAF,
        node: { node: true },
        snippet: {
          typeName: 'SearchSnippet',
          fields: {
            // JSON escapes a UTF-16 unit to at most 6 bytes.
            text: { worstBytes: SEARCH_SNIPPET_MAX_LENGTH * 6 + SHORT_FIELD_BYTES },
            // Merged matches are apart: at most one in two units.
            matches: { typeName: 'TextRange', list: () => Math.ceil(SEARCH_SNIPPET_MAX_LENGTH / 2), fields: { start: LEAF, end: LEAF } },
          },
        },
      },
    },
  },
};

/** What an answer selects of a shape: each field by response key, in order; `__typename` as the type's name; a hit's memory as `Node` (plan.ts: an ObjectPlan). */
export type SelectionPlan<Node> = (
  | { key: ResponseKey; kind: 'typename'; typeName: string }
  | { key: ResponseKey; kind: 'leaf' }
  | { key: ResponseKey; kind: 'node'; object: Node }
  | { key: ResponseKey; kind: 'object'; fields: SelectionPlan<Node> }
)[];

export interface SearchPlan<Node> {
  filter: SearchFilter;
  /** The search's name (domain/search.ts searchName), which its cursors carry. */
  name: string;
  size: number;
  after: SearchCursor | null;
  fields: SelectionPlan<Node>;
  /** Whether the answer shows a snippet (the statement then reads the hits' content). */
  snippets: boolean;
  /** The hit's memory, as the answer selects it (once at most), or null. */
  node: Node | null;
}

/** What search plans need of plan.ts's planner. */
export interface SearchPlanner<Node> {
  /** Counts bytes the answer may hold, once for each time the field being planned can appear. */
  spend(bytes: number): void;
  fields(selectionSet: SelectionSetNode | undefined, typeName: string): FieldNode[];
  arguments(field: FieldNode): Record<string, unknown>;
  needs(action: WorkspaceAction): void;
  pageOf<T>(size: number, plan: () => T): T;
  object(typeName: ObjectTypeName, selectionSet: SelectionSetNode | undefined): Node;
}

const SEARCH_ARGUMENTS = new Set(['query', 'first', 'memoryStoreId', 'pathPrefix', 'after']);

export function planSearch<Node>(planner: SearchPlanner<Node>, field: FieldNode): SearchPlan<Node> {
  planner.needs({ type: 'memories.read' });
  const args = planner.arguments(field);
  for (const [name, given] of Object.entries(args)) if (given != null && !SEARCH_ARGUMENTS.has(name)) unsupported();
  const { query, memoryStoreId, pathPrefix } = args;
  if (typeof query !== 'string' || (memoryStoreId != null && typeof memoryStoreId !== 'string') || (pathPrefix != null && typeof pathPrefix !== 'string')) unsupported();
  const filter: SearchFilter = { query, memoryStoreId: (memoryStoreId as string | null) ?? undefined, pathPrefix: (pathPrefix as string | null) ?? undefined };
  // A search the domain refuses is the resolvers' to report, with their message.
  try {
    checkSearchFilter(filter);
  } catch {
    unsupported();
  }
  const size = pageSize(args);
  if (args.after != null && typeof args.after !== 'string') unsupported();
  const name = searchName(filter);
  const after = args.after == null ? null : (searchCursorFrom(name, args.after as string) ?? unsupported());
  let snippets = false;
  let node: Node | null = null;
  const select = (selectionSet: SelectionSetNode | undefined, shape: Shape): SelectionPlan<Node> =>
    planner.fields(selectionSet, shape.typeName!).map((selected) => {
      const key = keyOf(selected);
      const name = selected.name.value;
      if (selected.arguments?.length) unsupported();
      planner.spend(SHORT_FIELD_BYTES);
      if (name === '__typename') return { key, kind: 'typename', typeName: shape.typeName! };
      const inner = Object.hasOwn(shape.fields!, name) ? shape.fields![name]! : unsupported();
      if (inner.node) {
        // The statement writes one memory per hit: a second selection of it (another alias of `node` or of `edges`) is the resolvers' to answer.
        if (node !== null) unsupported();
        node = planner.object('Memory', selected.selectionSet);
        return { key, kind: 'node', object: node };
      }
      if (!inner.fields) {
        if (selected.selectionSet) unsupported();
        planner.spend(inner.worstBytes!);
        return { key, kind: 'leaf' };
      }
      if (name === 'snippet') snippets = true;
      const fields = inner.list ? planner.pageOf(inner.list(size), () => select(selected.selectionSet, inner)) : select(selected.selectionSet, inner);
      return { key, kind: 'object', fields };
    });
  const fields = select(field.selectionSet, SEARCH_SHAPE);
  return { filter, name, size, after, fields, snippets, node };
}
