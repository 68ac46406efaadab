import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import { getTableColumns } from 'drizzle-orm';
import { Kind, valueFromASTUntyped, type DocumentNode, type FieldNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { WorkspaceAction } from '../domain/access.js';
import { isIdOfKind } from '../domain/ids.js';
import { checkFolder } from '../domain/folders.js';
import type { PathRange } from '../domain/memories/reads.js';
import type { KeysetOrdering } from '../domain/pagination.js';
import { EXPOSED_FIELDS, type ExposedField } from '../graphql/exposed-fields.js';
import { planSearch, SEARCH_FIELD, type SearchPlan as SearchPlanOf } from './search-plan.js';
import { ENTRIES, keyOf, MAX_COMPILED_ALIAS_CHARACTERS, NESTED_LISTS, OBJECT_ACTIONS, pageSize, PAGING, SHORT_FIELD_BYTES, SINGLES, STORES, Unsupported, unsupported, type ListSpec, type ObjectTypeName, type ResponseKey } from './readable.js';

export type { ObjectTypeName, ResponseKey } from './readable.js';

/**
 * The plan step of a compiled read: from a query's selection to a typed plan of what to
 * read — objects, their exposed fields (graphql/exposed-fields.ts), connections paged
 * forward with `first`, their counts — with no SQL in it (sql.ts writes the statement).
 * Covered: stores, their memories and the memories' versions, from `memoryStores`,
 * `memoryStore(id)` and `memory(id)`, a store's folder level (`entries(folder:)`, whose
 * nodes are folders or memories), and a page of `searchMemories` (search-plan.ts);
 * plain fields, `edges { node }`, `pageInfo { hasNextPage
 * hasPreviousPage }`, `totalCount`, `__typename`, fragments on the very type (and on a
 * union's members), the same plain field twice. Anything else — another field, a cursor,
 * an argument beyond `first` and the plain filters, a directive, a repeated response key —
 * makes planRead return null, and the resolvers answer.
 */


export interface ObjectPlan {
  typeName: ObjectTypeName;
  fields: ObjectFieldPlan[];
}

export type ObjectFieldPlan =
  | { key: ResponseKey; kind: 'typename'; typeName: string }
  | { key: ResponseKey; kind: 'exposed'; field: ExposedField }
  | { key: ResponseKey; kind: 'connection'; connection: ConnectionPlan }
  | { key: ResponseKey; kind: 'entries'; entries: EntriesPlan };

export interface ConnectionPlan {
  typeName: string;
  edgeTypeName: string;
  table: PgTable & { workspaceId: AnyPgColumn; id: AnyPgColumn };
  /** The column that holds the parent row's id, or null for a list at the root. */
  parentColumn: AnyPgColumn | null;
  ordering: KeysetOrdering<unknown>;
  size: number;
  /** The memories' path prefix, as the one rule of domain/memories/reads.ts reads it (null: no such filter). */
  pathFilter: { column: AnyPgColumn; range: PathRange } | null;
  /** The parent's column that holds totalCount (a counter kept with every write), or null when it must be counted. */
  keptCount: AnyPgColumn | null;
  /** The columns the page's rows carry: what the node fields read, the keys, the id, nested counters. */
  columns: AnyPgColumn[];
  fields: ConnectionFieldPlan[];
}

export type ConnectionFieldPlan<Node = ObjectPlan> =
  | { key: ResponseKey; kind: 'typename'; typeName: string }
  | { key: ResponseKey; kind: 'totalCount' }
  | { key: ResponseKey; kind: 'pageInfo'; fields: { key: ResponseKey; kind: 'typename' | 'hasNextPage' | 'hasPreviousPage' }[] }
  | { key: ResponseKey; kind: 'edges'; fields: ({ key: ResponseKey; kind: 'typename' } | { key: ResponseKey; kind: 'node'; object: Node })[] };

/**
 * A store's folder level (MemoryStore.entries, domain/folders.ts): the folders directly in
 * `folder`, then the memories directly in it, each by name in byte order, forward from the
 * start. Its nodes are of the union MemoryEntry: what each member selects.
 */
export interface EntriesPlan {
  edgeTypeName: string;
  folder: string;
  size: number;
  fields: ConnectionFieldPlan<EntryNodePlan>[];
}

export interface EntryNodePlan {
  folder: ObjectPlan;
  memory: ObjectPlan;
}

export type RootFieldPlan =
  | { key: ResponseKey; kind: 'typename' }
  | { key: ResponseKey; kind: 'list'; connection: ConnectionPlan }
  | { key: ResponseKey; kind: 'single'; table: PgTable & { workspaceId: AnyPgColumn; id: AnyPgColumn }; id: string; object: ObjectPlan }
  /** An id of another kind, or no id at all: null without asking the database, as the resolvers answer. */
  | { key: ResponseKey; kind: 'none' }
  | { key: ResponseKey; kind: 'search'; search: SearchPlan };

/** The plan of a search (search-plan.ts), its hits' nodes planned as any Memory. */
export type SearchPlan = SearchPlanOf<ObjectPlan>;

export interface ReadPlan {
  fields: RootFieldPlan[];
  /** What the answer reads, for the access policy: the kinds of key that may take all of them get the data. */
  actions: WorkspaceAction[];
  /** The answer's size at worst, in bytes. */
  worstBytes: number;
}

/** The most keys an object of a compiled read has (past them the resolvers answer): a bound on the text the statement writes for each object. */
export const MAX_KEYS_PER_OBJECT = 50;

/**
 * Adds a field to the fields selected, by response key. The same key twice is merged as
 * GraphQL merges it when both are the same plain field (no arguments, no selection: one
 * value, at the first one's place); anything else, and a longer alias than the worst bytes
 * count (readable.ts), is left to the resolvers.
 */
function addField(into: Map<string, FieldNode>, field: FieldNode): void {
  if (field.alias && field.alias.value.length > MAX_COMPILED_ALIAS_CHARACTERS) unsupported();
  const key = field.alias?.value ?? field.name.value;
  const known = into.get(key);
  if (known === undefined) into.set(key, field);
  else if (known.name.value !== field.name.value || known.arguments?.length || field.arguments?.length || known.selectionSet || field.selectionSet) unsupported();
}

class Planner {
  /** How many times the field being planned can appear in the answer (the pages around it). */
  private multiplicity = 1;
  worstBytes = 0;
  readonly actions = new Map<string, WorkspaceAction>();

  constructor(
    private readonly document: DocumentNode,
    private readonly variables: Record<string, unknown>,
  ) {}

  /** The fields of a selection set on `typeName`, by response key; fragments of that very type are inlined. */
  fields(selectionSet: SelectionSetNode | undefined, typeName: string, into = new Map<string, FieldNode>()): FieldNode[] {
    if (!selectionSet) unsupported();
    for (const selection of selectionSet.selections) {
      if (selection.directives?.length) unsupported();
      if (selection.kind === Kind.FIELD) {
        addField(into, selection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (selection.typeCondition && selection.typeCondition.name.value !== typeName) unsupported();
        this.fields(selection.selectionSet, typeName, into);
      } else {
        const fragment = this.fragment(selection.name.value);
        if (fragment.typeCondition.name.value !== typeName) unsupported();
        this.fields(fragment.selectionSet, typeName, into);
      }
    }
    if (into.size > MAX_KEYS_PER_OBJECT) unsupported();
    return [...into.values()];
  }

  /** The fragment a spread names; one with directives is left to the resolvers. */
  private fragment(name: string): FragmentDefinitionNode {
    const fragment = this.document.definitions.find((definition) => definition.kind === Kind.FRAGMENT_DEFINITION && definition.name.value === name);
    if (!fragment || fragment.kind !== Kind.FRAGMENT_DEFINITION || fragment.directives?.length) unsupported();
    return fragment;
  }

  /**
   * The fields one member of a union selects, by response key in document order (as
   * GraphQL collects them): `__typename` on the union, and what fragments on the member, or
   * on the union itself, select; fragments on the other members are skipped.
   */
  private memberFields(selectionSet: SelectionSetNode | undefined, member: ObjectTypeName, into = new Map<string, FieldNode>()): FieldNode[] {
    const { unionName, members } = ENTRIES;
    if (!selectionSet) unsupported();
    for (const selection of selectionSet.selections) {
      if (selection.directives?.length) unsupported();
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== '__typename') unsupported();
        addField(into, selection);
        continue;
      }
      let condition: string;
      let selections: SelectionSetNode;
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        condition = selection.typeCondition?.name.value ?? unionName;
        selections = selection.selectionSet;
      } else {
        const fragment = this.fragment(selection.name.value);
        condition = fragment.typeCondition.name.value;
        selections = fragment.selectionSet;
      }
      if (condition === member) this.fields(selections, member, into);
      else if (condition === unionName) this.memberFields(selections, member, into);
      else if (!Object.values<string>(members).includes(condition)) unsupported();
    }
    if (into.size > MAX_KEYS_PER_OBJECT) unsupported();
    return [...into.values()];
  }

  arguments(field: FieldNode): Record<string, unknown> {
    const args: Record<string, unknown> = {};
    for (const argument of field.arguments ?? []) args[argument.name.value] = valueFromASTUntyped(argument.value, this.variables);
    return args;
  }

  spend(bytes: number): void {
    this.worstBytes += this.multiplicity * bytes;
  }

  needs(action: WorkspaceAction): void {
    this.actions.set(action.type, action);
  }

  object(typeName: ObjectTypeName, selectionSet: SelectionSetNode | undefined): ObjectPlan {
    return this.objectOf(typeName, this.fields(selectionSet, typeName));
  }

  private objectOf(typeName: ObjectTypeName, selected: FieldNode[]): ObjectPlan {
    this.needs(OBJECT_ACTIONS[typeName]);
    const fields: ObjectFieldPlan[] = [];
    for (const field of selected) {
      const name = field.name.value;
      const key = keyOf(field);
      if (name === '__typename') {
        this.worstBytes += this.multiplicity * SHORT_FIELD_BYTES;
        fields.push({ key, kind: 'typename', typeName });
        continue;
      }
      if (typeName === ENTRIES.parent && name === ENTRIES.field) {
        this.worstBytes += this.multiplicity * SHORT_FIELD_BYTES;
        fields.push({ key, kind: 'entries', entries: this.entries(field) });
        continue;
      }
      const list = NESTED_LISTS[typeName][name];
      if (list) {
        this.worstBytes += this.multiplicity * SHORT_FIELD_BYTES;
        if (!field.selectionSet) unsupported();
        fields.push({ key, kind: 'connection', connection: this.connection(list, field) });
        continue;
      }
      const exposed = EXPOSED_FIELDS[typeName][name];
      // Plain fields take no arguments and select nothing.
      if (!exposed || field.arguments?.length || field.selectionSet) unsupported();
      this.worstBytes += this.multiplicity * exposed.worstBytes;
      fields.push({ key, kind: 'exposed', field: exposed });
    }
    return { typeName, fields };
  }

  /** Plans what each of a page's `size` items holds. */
  pageOf<T>(size: number, plan: () => T): T {
    const outer = this.multiplicity;
    this.multiplicity *= size;
    try {
      return plan();
    } finally {
      this.multiplicity = outer;
    }
  }

  /** A connection page: the rows of `list` (under the parent row, if any), forward from the start. */
  connection(list: ListSpec, field: FieldNode): ConnectionPlan {
    this.needs(list.action);
    const args = this.arguments(field);
    for (const [name, given] of Object.entries(args)) if (given != null && !PAGING.includes(name) && !list.filters.includes(name)) unsupported();
    for (const name of ['last', 'after', 'before']) if (args[name] != null) unsupported();
    const size = pageSize(args);
    const ordering = list.ordering(args);
    const fields = this.connectionFields(field, list.typeName, list.edgeTypeName, size, (selectionSet) => this.object(list.node, selectionSet));
    return {
      typeName: list.typeName,
      edgeTypeName: list.edgeTypeName,
      table: list.table,
      parentColumn: list.parentColumn,
      ordering,
      size,
      pathFilter: list.pathFilter(args),
      keptCount: list.parentColumn ? list.keptCount(args) : null,
      columns: this.pageColumns(list, ordering, fields),
      fields,
    };
  }

  /** A connection's fields: its name, totalCount, pageInfo, and edges with their nodes (`node` plans one). */
  private connectionFields<Node>(field: FieldNode, typeName: string, edgeTypeName: string, size: number, node: (selectionSet: SelectionSetNode | undefined) => Node): ConnectionFieldPlan<Node>[] {
    const fields: ConnectionFieldPlan<Node>[] = [];
    for (const connectionField of this.fields(field.selectionSet, typeName)) {
      const name = connectionField.name.value;
      const key = keyOf(connectionField);
      if (connectionField.arguments?.length) unsupported();
      if (name === '__typename') fields.push({ key, kind: 'typename', typeName });
      else if (name === 'totalCount') fields.push({ key, kind: 'totalCount' });
      else if (name === 'pageInfo') {
        const info = this.fields(connectionField.selectionSet, 'PageInfo').map((infoField) => {
          const infoName = infoField.name.value;
          if (infoField.arguments?.length) unsupported();
          if (infoName !== 'hasNextPage' && infoName !== 'hasPreviousPage' && infoName !== '__typename') unsupported();
          return { key: keyOf(infoField), kind: infoName === '__typename' ? ('typename' as const) : (infoName as 'hasNextPage' | 'hasPreviousPage') };
        });
        fields.push({ key, kind: 'pageInfo', fields: info });
      } else if (name === 'edges') {
        const edge = this.fields(connectionField.selectionSet, edgeTypeName).map((edgeField) => {
          if (edgeField.arguments?.length) unsupported();
          if (edgeField.name.value === '__typename') return { key: keyOf(edgeField), kind: 'typename' as const };
          if (edgeField.name.value !== 'node') unsupported();
          return { key: keyOf(edgeField), kind: 'node' as const, object: this.pageOf(size, () => node(edgeField.selectionSet)) };
        });
        fields.push({ key, kind: 'edges', fields: edge });
      } else unsupported();
    }
    return fields;
  }

  /** MemoryStore.entries: a folder level, forward from the start; each node plans both members of the union. */
  private entries(field: FieldNode): EntriesPlan {
    this.needs({ type: 'memories.read' });
    const args = this.arguments(field);
    for (const [name, given] of Object.entries(args)) if (given != null && name !== 'first' && name !== 'folder') unsupported();
    // The argument's default is "" (the root); a folder the domain refuses is the resolvers' to report.
    const folder = args.folder ?? '';
    if (typeof folder !== 'string') unsupported();
    try {
      checkFolder(folder);
    } catch {
      unsupported();
    }
    const size = pageSize(args);
    const { folder: folderType, memory: memoryType } = ENTRIES.members;
    const fields = this.connectionFields(field, ENTRIES.typeName, ENTRIES.edgeTypeName, size, (selectionSet) => ({
      folder: this.objectOf(folderType, this.memberFields(selectionSet, folderType)),
      memory: this.objectOf(memoryType, this.memberFields(selectionSet, memoryType)),
    }));
    // The statement builds one edge per row: one list of edges.
    if (fields.filter((entry) => entry.kind === 'edges').length > 1) unsupported();
    return { edgeTypeName: ENTRIES.edgeTypeName, folder, size, fields };
  }

  /**
   * The columns the page's rows carry through its subqueries: the id (nested lists join on
   * it), the sort keys, and what the nodes' fields read (their columns, the counters of
   * nested counts, the redaction that withholds content) — content, up to 100 KiB a row,
   * only when it is selected.
   */
  private pageColumns(list: ListSpec, ordering: KeysetOrdering<unknown>, fields: ConnectionFieldPlan[]): AnyPgColumn[] {
    const needed = new Map<string, AnyPgColumn>();
    const add = (column: AnyPgColumn) => needed.set(column.name, column);
    add(list.table.id);
    for (const key of ordering.keys) add(key.column as AnyPgColumn);
    for (const field of fields) {
      if (field.kind !== 'edges') continue;
      for (const edgeField of field.fields) {
        if (edgeField.kind !== 'node') continue;
        for (const nodeField of edgeField.object.fields) {
          if (nodeField.kind === 'exposed') {
            add(nodeField.field.column);
            if (nodeField.field.rendering.kind === 'unlessSet') add(nodeField.field.rendering.unless);
          } else if (nodeField.kind === 'connection' && nodeField.connection.keptCount) add(nodeField.connection.keptCount);
        }
      }
    }
    // In the table's column order: the statement text does not depend on the selection's order.
    const order = Object.values(getTableColumns(list.table) as Record<string, AnyPgColumn>).map((column) => column.name);
    return [...needed.values()].sort((left, right) => order.indexOf(left.name) - order.indexOf(right.name));
  }

  root(operation: OperationDefinitionNode): RootFieldPlan[] {
    return this.fields(operation.selectionSet, 'Query').map((field): RootFieldPlan => {
      const name = field.name.value;
      const key = keyOf(field);
      this.worstBytes += SHORT_FIELD_BYTES;
      if (name === '__typename') return { key, kind: 'typename' };
      if (name === SEARCH_FIELD) return { key, kind: 'search', search: planSearch(this, field) };
      if (name === 'memoryStores') {
        if (!field.selectionSet) unsupported();
        return { key, kind: 'list', connection: this.connection(STORES, field) };
      }
      const single = SINGLES[name];
      if (!single) unsupported();
      const args = this.arguments(field);
      for (const [argument, given] of Object.entries(args)) if (given != null && argument !== 'id') unsupported();
      // An id counts only by its kind, then as a parameter: compile.ts's ReadTemplate relies on it.
      if (typeof args.id !== 'string') unsupported();
      this.needs(single.action);
      const object = this.object(single.node, field.selectionSet);
      return isIdOfKind(args.id, single.kind) ? { key, kind: 'single', table: single.table, id: args.id, object } : { key, kind: 'none' };
    });
  }
}

/**
 * The plan of a query operation, its variables already coerced; null when the compiler
 * does not cover it (the resolvers answer).
 */
export function planRead(document: DocumentNode, operation: OperationDefinitionNode, coercedVariables: Record<string, unknown>): ReadPlan | null {
  if (operation.operation !== 'query' || operation.directives?.length) return null;
  try {
    const planner = new Planner(document, coercedVariables);
    const fields = planner.root(operation);
    return { fields, actions: [...planner.actions.values()], worstBytes: planner.worstBytes };
  } catch (error) {
    if (error instanceof Unsupported) return null;
    throw error;
  }
}
