import { getTableColumns, getTableName } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import {
  getVariableValues,
  Kind,
  valueFromASTUntyped,
  type DocumentNode,
  type FieldNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { RunStatement, RunStatementRaw } from '../db/client.js';
import { memories, memoryStores, memoryVersions } from '../db/schema.js';
import { sql, type Statement as SQL } from '../db/statement.js';
import { isIdOfKind, type IdKind } from '../domain/ids.js';
import {
  CONTENT_MAX_BYTES,
  DEFAULT_PAGE_SIZE,
  EXTERNAL_ID_BODY_MAX_CHARACTERS,
  MAX_PAGE_SIZE,
  MAX_PREPARED_STATEMENT_TEXTS,
  MAX_RESPONSE_BYTES,
  MEMORY_METADATA_MAX_KEYS,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  PATH_MAX_BYTES,
  STORE_DESCRIPTION_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from '../domain/limits.js';
import { isMemoryCountKept, MEMORY_LISTS, prefixUpperBound, type MemoryOrder } from '../domain/memories.js';
import type { KeysetOrdering } from '../domain/pagination.js';
import { MEMORY_STORE_LIST } from '../domain/stores.js';
import { isVersionCountKept, VERSIONS_OF_MEMORY } from '../domain/versions.js';
import type { Viewer } from '../domain/viewer.js';

/**
 * Reads compiled to one SQL statement that builds the response's JSON in PostgreSQL, as a
 * hand-written query would: stores, their memories and versions — their plain fields, and
 * connections paged forward with `first` (`edges { node }`, `pageInfo { hasNextPage
 * hasPreviousPage }`, `totalCount`). The result is exactly what the resolvers produce for
 * the same query (test/compiled-reads.test.ts compares the two). Anything else — another
 * field, a cursor, an argument beyond `first` and the plain filters, a directive, an
 * IDENTITY key — returns null, and the resolvers answer. No data is cached: every request
 * reads the database under the caller's workspace.
 */

/** Thrown inside the compiler for anything it does not cover; the caller falls back. */
class Unsupported extends Error {}

function unsupported(): never {
  throw new Unsupported();
}

/** A SQL expression yielding a JSON value, given the SQL alias of the current row. */
type FieldCompiler = (row: string, field: FieldNode, compiler: Compiler) => SQL;

interface ObjectSpec {
  typeName: string;
  /** Plain fields by name, and connections by their spec. */
  fields: Record<string, FieldCompiler | ConnectionSpec>;
}

const column = (row: string, target: AnyPgColumn) => sql.raw(`${row}."${target.name}"`);
const plain = (target: AnyPgColumn): FieldCompiler => (row) => column(row, target);
const upper = (target: AnyPgColumn): FieldCompiler => (row) => sql`upper(${column(row, target)}::text)`;
/** DateTime: RFC 3339 in UTC with milliseconds, as Date.prototype.toISOString writes it. */
const instant = (target: AnyPgColumn): FieldCompiler => (row) =>
  sql`to_char(${column(row, target)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Metadata in the order the resolvers' answer has it. Theirs is a JavaScript object parsed
 * from jsonb's text: array-index keys (0 … 2^32 − 2) first, ascending as numbers, then the
 * others in jsonb's order (by UTF-8 length, then bytes). The JSONObject scalar describes it;
 * test/hardening-edges.test.ts holds the two paths to it.
 */
const metadataObject = (target: AnyPgColumn): FieldCompiler => (row) =>
  sql`(select coalesce(json_object_agg(e.key, e.value order by
      (case when e.key ~ '^(0|[1-9][0-9]{0,9})$' then nullif(least(e.key::bigint, 4294967295), 4294967295) end) nulls last,
      octet_length(e.key), e.key collate "C"), '{}'::json) from jsonb_each(${column(row, target)}) e)`;

/**
 * A field's key in the answer. The field's own name is written into the statement (names
 * come from the schema: a fixed set); an alias, which the client picks, is a parameter, so
 * that queries differing only in their aliases share one statement text (and one prepared
 * statement per connection).
 */
function responseKey(field: FieldNode): SQL {
  return field.alias ? sql`${field.alias.value}::text` : literalName(field.name.value);
}

/**
 * A GraphQL name (a response key or type name) as a SQL string literal. Names match
 * [_A-Za-z][_0-9A-Za-z]*, so they need no escaping; written inline rather than as
 * parameters, they cost nothing per row.
 */
function literalName(text: string): SQL {
  if (!/^[_A-Za-z][_0-9A-Za-z]*$/.test(text)) unsupported();
  return sql.raw(`'${text}'::text`);
}

/** `column = value` for the current workspace, as a SQL condition on `row`. */
const inWorkspace = (row: string, table: { workspaceId: AnyPgColumn }) => sql`${column(row, table.workspaceId)} = ${sql.raw(`${KEY}."workspace_id"`)}`;

/** The alias of the caller's API key row: the statement authenticates the request itself. */
const KEY = 'api_key';

interface ConnectionSpec {
  typeName: string;
  edgeTypeName: string;
  table: PgTable & { workspaceId: AnyPgColumn };
  node: () => ObjectSpec;
  /** The column that points at the parent row (by the parent's id), or null at the root. */
  parentColumn: AnyPgColumn | null;
  /** The order, after checking the field's other arguments; unsupported() for any it cannot take. */
  ordering(args: Record<string, unknown>): Pick<KeysetOrdering<unknown>, 'columns' | 'direction'>;
  /** Extra conditions from the field's arguments, on the row alias. */
  filter?(row: string, args: Record<string, unknown>): SQL | undefined;
  /**
   * The parent's column that holds `totalCount` when a counter kept with every write answers
   * it (the rules of isMemoryCountKept and isVersionCountKept), or null when it must count.
   */
  keptCount?: { parentColumn: string; applies(args: Record<string, unknown>): boolean };
}

/** The requested page size: `first`, or the default. Any other paging argument is unsupported. */
function pageSize(args: Record<string, unknown>): number {
  for (const name of ['last', 'after', 'before']) if (args[name] != null) unsupported();
  const first = args.first ?? DEFAULT_PAGE_SIZE;
  // Out-of-range sizes are refused by the resolvers, with their message.
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) unsupported();
  return first;
}

function only(args: Record<string, unknown>, allowed: string[]): void {
  for (const [name, value] of Object.entries(args)) if (value != null && !allowed.includes(name)) unsupported();
}

const PAGING = ['first', 'last', 'after', 'before'];

const versionNode: ObjectSpec = {
  typeName: 'MemoryVersion',
  fields: {
    id: plain(memoryVersions.id),
    memoryStoreId: plain(memoryVersions.memoryStoreId),
    memoryId: plain(memoryVersions.memoryId),
    path: plain(memoryVersions.path),
    content: (row) => sql`case when ${column(row, memoryVersions.redactedAt)} is null then ${column(row, memoryVersions.content)} end`,
    contentSizeBytes: plain(memoryVersions.contentSizeBytes),
    contentSha256: plain(memoryVersions.contentSha256),
    operation: upper(memoryVersions.operation),
    redacted: (row) => sql`${column(row, memoryVersions.redactedAt)} is not null`,
    redactedAt: instant(memoryVersions.redactedAt),
    createdAt: instant(memoryVersions.createdAt),
  },
};

const versionsOfMemory: ConnectionSpec = {
  typeName: 'MemoryVersionConnection',
  edgeTypeName: 'MemoryVersionEdge',
  table: memoryVersions,
  node: () => versionNode,
  parentColumn: memoryVersions.memoryId,
  ordering: (args) => {
    only(args, PAGING);
    return VERSIONS_OF_MEMORY.ordering;
  },
  // Only paging arguments get here: no filter, so the version sequence is the count.
  keptCount: { parentColumn: memories.versionSequence.name, applies: () => isVersionCountKept({}) },
};

const memoryNode: ObjectSpec = {
  typeName: 'Memory',
  fields: {
    id: plain(memories.id),
    memoryStoreId: plain(memories.memoryStoreId),
    path: plain(memories.path),
    content: plain(memories.content),
    contentSizeBytes: plain(memories.contentSizeBytes),
    contentSha256: plain(memories.contentSha256),
    metadata: metadataObject(memories.metadata),
    createdAt: instant(memories.createdAt),
    updatedAt: instant(memories.updatedAt),
    versions: versionsOfMemory,
  },
};

const memoriesOfStore: ConnectionSpec = {
  typeName: 'MemoryConnection',
  edgeTypeName: 'MemoryEdge',
  table: memories,
  node: () => memoryNode,
  parentColumn: memories.memoryStoreId,
  ordering: (args) => {
    only(args, [...PAGING, 'orderBy', 'pathPrefix']);
    const order = (args.orderBy ?? 'PATH_ASC') as MemoryOrder;
    if (!(order in MEMORY_LISTS)) unsupported();
    return MEMORY_LISTS[order].ordering;
  },
  filter: (row, args) => {
    const prefix = args.pathPrefix;
    if (prefix == null || prefix === '') return undefined;
    if (typeof prefix !== 'string') unsupported();
    // As pathPrefixFilter: a prefix no path can have matches nothing.
    if (!prefix.isWellFormed() || prefix.includes('\u0000')) return sql`false`;
    const path = column(row, memories.path);
    const bound = prefixUpperBound(prefix);
    return bound === null ? sql`${path} >= ${prefix}` : sql`${path} >= ${prefix} and ${path} < ${bound}`;
  },
  keptCount: {
    parentColumn: memoryStores.entryCount.name,
    applies: (args) => isMemoryCountKept({ pathPrefix: typeof args.pathPrefix === 'string' ? args.pathPrefix : undefined }),
  },
};

const storeNode: ObjectSpec = {
  typeName: 'MemoryStore',
  fields: {
    id: plain(memoryStores.id),
    name: plain(memoryStores.name),
    description: plain(memoryStores.description),
    status: upper(memoryStores.status),
    entryCount: plain(memoryStores.entryCount),
    totalSize: plain(memoryStores.totalSize),
    metadata: metadataObject(memoryStores.metadata),
    systemManaged: plain(memoryStores.systemManaged),
    identityId: plain(memoryStores.identityId),
    createdAt: instant(memoryStores.createdAt),
    updatedAt: instant(memoryStores.updatedAt),
    archivedAt: instant(memoryStores.archivedAt),
    memories: memoriesOfStore,
  },
};

const allStores: ConnectionSpec = {
  typeName: 'MemoryStoreConnection',
  edgeTypeName: 'MemoryStoreEdge',
  table: memoryStores,
  node: () => storeNode,
  parentColumn: null,
  ordering: (args) => {
    only(args, PAGING);
    return MEMORY_STORE_LIST.ordering;
  },
};

/** `json_build_object` takes at most 100 arguments: 50 keys. */
const MAX_KEYS_PER_OBJECT = 50;

/**
 * The most bytes a compiled field can add to the answer (its JSON text at worst: every
 * character four bytes of UTF-8 and escaped): the answer's worst case must stay within
 * MAX_RESPONSE_BYTES, or the resolvers answer, spending the request's budget as they go.
 */
const TEXT_WORST = (characters: number) => characters * 4 * 2;
const METADATA_WORST = (keys: number) => keys * (TEXT_WORST(METADATA_KEY_MAX_CHARACTERS + METADATA_VALUE_MAX_CHARACTERS) + 6);
const FIELD_WORST_BYTES: Record<string, number> = {
  'MemoryStore.name': TEXT_WORST(STORE_NAME_MAX_CHARACTERS),
  'MemoryStore.description': TEXT_WORST(STORE_DESCRIPTION_MAX_CHARACTERS),
  'MemoryStore.metadata': METADATA_WORST(STORE_METADATA_MAX_KEYS + 1),
  'MemoryStore.identityId': 2 * (EXTERNAL_ID_BODY_MAX_CHARACTERS + 8),
  'Memory.path': 2 * PATH_MAX_BYTES,
  'Memory.content': 2 * CONTENT_MAX_BYTES,
  'Memory.metadata': METADATA_WORST(MEMORY_METADATA_MAX_KEYS),
  'MemoryVersion.path': 2 * PATH_MAX_BYTES,
  'MemoryVersion.content': 2 * CONTENT_MAX_BYTES,
};
/** Ids, hashes, numbers, instants, enums, names of types: and the field's key. */
const SHORT_FIELD_WORST_BYTES = 80;

class Compiler {
  private aliases = 0;
  /** How many times the field being compiled can appear in the answer (the pages around it). */
  private multiplicity = 1;
  /** The answer's size at worst, so far. */
  worstBytes = 0;

  constructor(
    private readonly document: DocumentNode,
    private readonly variables: Record<string, unknown>,
  ) {}

  /** The fields of a selection set on `typeName`, by response key; fragments of that very type are inlined. */
  fields(selectionSet: SelectionSetNode | undefined, typeName: string, into = new Map<string, FieldNode>()): Map<string, FieldNode> {
    if (!selectionSet) unsupported();
    for (const selection of selectionSet.selections) {
      if (selection.directives?.length) unsupported();
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        // The same key twice must be merged as GraphQL does: left to the resolvers.
        if (into.has(key)) unsupported();
        into.set(key, selection);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (selection.typeCondition && selection.typeCondition.name.value !== typeName) unsupported();
        this.fields(selection.selectionSet, typeName, into);
      } else {
        const fragment = this.document.definitions.find(
          (definition) => definition.kind === Kind.FRAGMENT_DEFINITION && definition.name.value === selection.name.value,
        );
        if (!fragment || fragment.kind !== Kind.FRAGMENT_DEFINITION || fragment.typeCondition.name.value !== typeName || fragment.directives?.length) {
          unsupported();
        }
        this.fields(fragment.selectionSet, typeName, into);
      }
    }
    if (into.size > MAX_KEYS_PER_OBJECT) unsupported();
    return into;
  }

  arguments(field: FieldNode): Record<string, unknown> {
    const args: Record<string, unknown> = {};
    for (const argument of field.arguments ?? []) args[argument.name.value] = valueFromASTUntyped(argument.value, this.variables);
    return args;
  }

  object(spec: ObjectSpec, row: string, selectionSet: SelectionSetNode | undefined): SQL {
    const parts: SQL[] = [];
    for (const field of this.fields(selectionSet, spec.typeName).values()) {
      const name = field.name.value;
      this.worstBytes += this.multiplicity * (FIELD_WORST_BYTES[`${spec.typeName}.${name}`] ?? SHORT_FIELD_WORST_BYTES);
      let value: SQL;
      if (name === '__typename') value = literalName(spec.typeName);
      else {
        const compile = spec.fields[name];
        if (!compile) unsupported();
        const isConnection = typeof compile !== 'function';
        // Plain fields take no arguments.
        if (field.arguments?.length && !isConnection) unsupported();
        if (!field.selectionSet !== !isConnection) unsupported();
        value = isConnection ? this.connection(compile, field, row) : compile(row, field, this);
      }
      parts.push(sql`${responseKey(field)}, ${value}`);
    }
    return sql`json_build_object(${sql.join(parts, sql`, `)})`;
  }

  /** Compiles what each of a page's `size` items holds. */
  private pageOf<T>(size: number, compile: () => T): T {
    const outer = this.multiplicity;
    this.multiplicity *= size;
    try {
      return compile();
    } finally {
      this.multiplicity = outer;
    }
  }

  /** A connection page: the rows of `spec` (under the parent row, if any), forward from the start. */
  connection(spec: ConnectionSpec, field: FieldNode, parentRow: string | null): SQL {
    const args = this.arguments(field);
    const size = pageSize(args);
    const ordering = spec.ordering(args);
    const inner = `r${(this.aliases += 1)}`;
    const page = `p${this.aliases}`;
    const orderBy = (row: string) =>
      sql.raw(ordering.columns.map((target) => `${row}."${(target as AnyPgColumn).name}" ${ordering.direction}`).join(', '));
    const conditions = (row: string) => {
      const parts = [inWorkspace(row, spec.table)];
      if (spec.parentColumn) parts.push(sql`${column(row, spec.parentColumn)} = ${sql.raw(`${parentRow}."id"`)}`);
      const extra = spec.filter?.(row, args);
      if (extra) parts.push(extra);
      return sql.join(parts, sql` and `);
    };
    const table = sql.raw(`"${getTableName(spec.table)}"`);
    // Only the columns the answer needs travel through the page's subqueries: content (up to
    // 100 KiB a row) only when it is selected.
    const needed = this.nodeColumns(field, spec);
    for (const target of ordering.columns) needed.add((target as AnyPgColumn).name);
    const columns = [...needed].map((name) => `"${name}"`);

    const parts: SQL[] = [];
    let usesPage = false;
    const selected = [...this.fields(field.selectionSet, spec.typeName).values()];
    const withPageInfo = selected.some((selection) => selection.name.value === 'pageInfo');
    for (const connectionField of this.fields(field.selectionSet, spec.typeName).values()) {
      const name = connectionField.name.value;
      let value: SQL;
      if (connectionField.arguments?.length) unsupported();
      if (name === '__typename') value = literalName(spec.typeName);
      else if (name === 'totalCount') {
        const counted = `c${(this.aliases += 1)}`;
        value =
          parentRow && spec.keptCount?.applies(args)
            ? sql.raw(`${parentRow}."${spec.keptCount.parentColumn}"`)
            : sql`(select count(*) from ${table} ${sql.raw(counted)} where ${conditions(counted)})`;
      } else if (name === 'pageInfo') {
        const info: SQL[] = [];
        for (const infoField of this.fields(connectionField.selectionSet, 'PageInfo').values()) {
          const infoName = infoField.name.value;
          if (infoField.arguments?.length) unsupported();
          // Only hasNextPage reads the page (as an aggregate over it); the rest are constants.
          if (infoName === 'hasNextPage') usesPage = true;
          const infoValue =
            infoName === 'hasNextPage'
              ? sql`count(*) > ${size}`
              : infoName === 'hasPreviousPage'
                ? sql`false`
                : infoName === '__typename'
                  ? literalName('PageInfo')
                  : unsupported();
          info.push(sql`${responseKey(infoField)}, ${infoValue}`);
        }
        value = sql`json_build_object(${sql.join(info, sql`, `)})`;
      } else if (name === 'edges') {
        usesPage = true;
        const edge: SQL[] = [];
        for (const edgeField of this.fields(connectionField.selectionSet, spec.edgeTypeName).values()) {
          const edgeName = edgeField.name.value;
          if (edgeField.arguments?.length) unsupported();
          const edgeValue =
            edgeName === 'node'
              ? this.pageOf(size, () => this.object(spec.node(), page, edgeField.selectionSet))
              : edgeName === '__typename'
                ? literalName(spec.edgeTypeName)
                : unsupported();
          edge.push(sql`${responseKey(edgeField)}, ${edgeValue}`);
        }
        const edges = sql`json_agg(json_build_object(${sql.join(edge, sql`, `)}) order by ${orderBy(page)})`;
        // With pageInfo the page holds one row more than it shows (see below).
        value = sql`coalesce(${edges} ${withPageInfo ? sql`filter (where ${sql.raw(`${page}.page_position`)} <= ${size})` : sql``}, '[]'::json)`;
      } else unsupported();
      parts.push(sql`${responseKey(connectionField)}, ${value}`);
    }
    const object = sql`json_build_object(${sql.join(parts, sql`, `)})`;
    // Without edges or pageInfo there are no rows to read: only counts and names.
    if (!usesPage) return sql`(select ${object})`;
    const columnList = sql.raw(columns.map((name) => `${inner}.${name}`).join(', '));
    if (!withPageInfo) {
      return sql`(select ${object} from (select ${columnList} from ${table} ${sql.raw(inner)}
        where ${conditions(inner)} order by ${orderBy(inner)} limit ${size}) ${sql.raw(page)})`;
    }
    // The page plus one row (to know whether more follow), numbered in list order.
    return sql`(select ${object} from (
      select ${sql.raw(columns.map((name) => `${inner}.${name}`).join(', '))}, row_number() over (order by ${orderBy(inner)}) as page_position
      from (select ${sql.raw(columns.map((name) => `${inner}.${name}`).join(', '))} from ${table} ${sql.raw(inner)}
        where ${conditions(inner)} order by ${orderBy(inner)} limit ${size + 1}) ${sql.raw(inner)}
    ) ${sql.raw(page)})`;
  }

  /**
   * The columns the selected node fields read (fields named as their columns, and the
   * redaction column behind `redacted` and a version's `content`), with the row's id for
   * nested lists: only these travel through the page's subqueries — content, up to 100 KiB
   * a row, only when it is selected.
   */
  private nodeColumns(field: FieldNode, spec: ConnectionSpec): Set<string> {
    const byField = getTableColumns(spec.table) as Record<string, AnyPgColumn>;
    const needed = new Set<string>([byField.id!.name]);
    for (const edges of this.fields(field.selectionSet, spec.typeName).values()) {
      if (edges.name.value !== 'edges') continue;
      for (const node of this.fields(edges.selectionSet, spec.edgeTypeName).values()) {
        if (node.name.value !== 'node') continue;
        for (const nodeField of this.fields(node.selectionSet, spec.node().typeName).values()) {
          const name = nodeField.name.value;
          if (byField[name]) needed.add(byField[name]!.name);
          // A nested connection whose totalCount a counter of this row answers reads that column.
          const nested = spec.node().fields[name];
          if (nested && typeof nested !== 'function' && nested.keptCount) needed.add(nested.keptCount.parentColumn);
          if ((name === 'redacted' || name === 'content') && byField.redactedAt) needed.add(byField.redactedAt.name);
        }
      }
    }
    return needed;
  }

  /** One object by id, or JSON null. */
  single(spec: ObjectSpec, table: PgTable & { workspaceId: AnyPgColumn; id: AnyPgColumn }, kind: IdKind, field: FieldNode): SQL {
    const args = this.arguments(field);
    only(args, ['id']);
    if (typeof args.id !== 'string') unsupported();
    // As the resolvers: an id of another kind, or no id at all (NUL, odd characters), is null
    // without asking the database (which cannot even receive a NUL).
    if (!isIdOfKind(args.id, kind)) return sql`null::json`;
    const row = `o${(this.aliases += 1)}`;
    return sql`(select ${this.object(spec, row, field.selectionSet)} from ${sql.raw(`"${getTableName(table)}" ${row}`)}
      where ${inWorkspace(row, table)} and ${column(row, table.id)} = ${args.id})`;
  }

  root(operation: OperationDefinitionNode): SQL {
    const parts: SQL[] = [];
    for (const field of this.fields(operation.selectionSet, 'Query').values()) {
      const name = field.name.value;
      const value =
        name === 'memoryStores'
          ? this.connection(allStores, field, null)
          : name === 'memoryStore'
            ? this.single(storeNode, memoryStores, 'memoryStore', field)
            : name === 'memory'
              ? this.single(memoryNode, memories, 'memory', field)
              : name === '__typename'
                ? literalName('Query')
                : unsupported();
      parts.push(sql`${responseKey(field)}, ${value}`);
    }
    // The same lookup as authenticate(): an unrevoked key with this token's hash. Only ADMIN
    // keys get the data here; for others the resolvers apply the access rules.
    return sql`with ${sql.raw(KEY)} as (
        select "workspace_id", "id", "kind", "identity_id" from "api_keys" where "token_sha256" = ${TOKEN_PLACEHOLDER} and "revoked_at" is null limit 1)
      select ${sql.raw(KEY)}."workspace_id", ${sql.raw(KEY)}."id", ${sql.raw(KEY)}."kind", ${sql.raw(KEY)}."identity_id",
        case when ${sql.raw(KEY)}."kind" = 'admin' then json_build_object(${sql.join(parts, sql`, `)})::text end as data
      from ${sql.raw(KEY)}`;
  }
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

/** Stands for the token's hash among the parameters until the request supplies it. */
const TOKEN_PLACEHOLDER = Symbol('token hash');

/**
 * Runs the compiled statement for a token's SHA-256: null when no unrevoked key has it;
 * else the key as a viewer, and the response's `data` as JSON text (null for a key that is
 * not ADMIN: the resolvers must answer).
 */
export type CompiledRead = (tokenSha256: string) => Promise<{ viewer: Viewer; data: string | Uint8Array | null } | null>;

/** The statement that answers this query with its own authentication, or null when the resolvers must. */
export function compileRead(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  run: RunStatement,
  runRaw?: RunStatementRaw,
): CompiledRead | null {
  if (operation.operation !== 'query' || operation.directives?.length) return null;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) return null;
  let statement: SQL;
  try {
    const compiler = new Compiler(document, coerced.coerced);
    statement = compiler.root(operation);
    // An answer that could pass the budget is built by the resolvers, which spend it as they go.
    if (compiler.worstBytes > MAX_RESPONSE_BYTES) return null;
  } catch (error) {
    if (error instanceof Unsupported) return null;
    throw error;
  }
  const { text, params } = statement.toQuery();
  const tokenIndex = params.indexOf(TOKEN_PLACEHOLDER);
  const options = { prepare: mayPrepare(text) };
  return async (tokenSha256) => {
    const values = [...params];
    values[tokenIndex] = tokenSha256;
    if (runRaw) {
      const [raw] = await runRaw(text, values, options);
      if (!raw) return null;
      const decode = (bytes: Uint8Array | null | undefined) => (bytes == null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
      const viewer: Viewer = { workspaceId: decode(raw[0])!, apiKeyId: decode(raw[1])!, kind: decode(raw[2]) as Viewer['kind'], identityId: decode(raw[3]) };
      return { viewer, data: raw[4] ?? null };
    }
    const [row] = await run(text, values, options);
    if (!row) return null;
    const viewer: Viewer = {
      workspaceId: row.workspace_id as string,
      apiKeyId: row.id as string,
      kind: row.kind as Viewer['kind'],
      identityId: (row.identity_id as string | null) ?? null,
    };
    return { viewer, data: (row.data as string | null) ?? null };
  };
}
