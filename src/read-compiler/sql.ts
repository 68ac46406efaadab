import { getTableName } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { sql, type Statement as SQL } from '../db/statement.js';
import type { ApiKeyKind } from '../domain/viewer.js';
import { KEY_LOOKUP } from '../domain/api-keys.js';
import { workspaceChangeMarkSql } from '../domain/events.js';
import type { ExposedField } from '../graphql/exposed-fields.js';
import { MEMORY_FOLDER_COLUMN, memories, memoryFolders } from '../db/schema.js';
import type { ConnectionFieldPlan, ConnectionPlan, EntriesPlan, ObjectPlan, ReadPlan, ResponseKey } from './plan.js';
import { AnswerRows, concat, constant, jsonArray, jsonObject, literalText, nameJson, type Piece, type RowsWriter } from './json-text.js';

/**
 * The SQL step of a compiled read: one statement that authenticates the request and builds
 * the whole answer's JSON in PostgreSQL, from a plan (plan.ts). Its text depends only on the
 * plan's shape: values (ids, page sizes, prefixes, aliases) are parameters.
 *
 * The JSON is written as text, by concatenation: each value rendered once as JSON text
 * (to_json for text, which escapes as JSON does), objects and arrays joined around them
 * (string_agg). json_build_object and json_agg would give the same values, but they look up
 * how to render each argument's type on every call: on a dashboard of 2,400 objects the
 * statement then spends about a third more (measured with pgbench, the same rows). Every
 * piece is text that is never null (`||` with a null is null): a value that may be null is
 * written `null` in its place.
 */

/** Stands for the token's hash among the parameters until the request supplies it. */
export const TOKEN_PLACEHOLDER = Symbol('token hash');

/** The alias of the caller's API key row: the statement authenticates the request itself. */
const KEY = 'api_key';

const column = (row: string, target: AnyPgColumn) => sql.raw(`${row}."${target.name}"`);

/** A value as JSON text, by its column's type (numbers and booleans print as JSON does; the rest through to_json), null as `null`. */
function valueJson(value: SQL, target: AnyPgColumn, mayBeNull = !target.notNull): SQL {
  const json = target.dataType === 'number' || target.dataType === 'boolean' ? sql`${value}::text` : sql`to_json(${value})::text`;
  return mayBeNull ? sql`coalesce(${json}, 'null')` : json;
}

/** How each rendering of graphql/exposed-fields.ts writes its value as JSON text in SQL (the resolvers: exposedValue). */
function exposedValue(row: string, field: ExposedField): SQL {
  const value = column(row, field.column);
  const rendering = field.rendering;
  switch (rendering.kind) {
    case 'value':
      return valueJson(value, field.column);
    case 'enum':
      // The GraphQL name of each stored value, from the enum's one declaration (compared as
      // stored: the literals take the column's type, no cast to text on every row).
      return sql`coalesce(case ${value} ${sql.join(
        Object.entries(rendering.enumeration.values).map(([name, { value: stored }]) => sql`when ${literalText(stored)} then ${constant(JSON.stringify(name))}`),
        sql` `,
      )} end, 'null')`;
    case 'instant':
      // DateTime: RFC 3339 in UTC with milliseconds, as Date.prototype.toISOString writes it.
      return sql`coalesce('"' || to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')`;
    case 'metadata':
      // The JSONObject scalar's order, the resolvers' (drizzle/0009_read_functions.sql):
      // a function, so that its aggregate is not set up on every run of every statement.
      return sql`memstore_metadata_json(${value})`;
    case 'isSet':
      return sql`(case when ${value} is not null then 'true' else 'false' end)`;
    case 'unlessSet':
      return valueJson(sql`case when ${column(row, rendering.unless)} is null then ${value} end`, field.column, true);
  }
}

/**
 * A page's pageInfo, as an aggregate over the page's rows (a page of `size` rows and one
 * more): only hasNextPage reads them (`readsPage`); hasPreviousPage is false going forward
 * from the start.
 */
function pageInfoValue(fields: { key: ResponseKey; kind: 'typename' | 'hasNextPage' | 'hasPreviousPage' }[], size: number): { value: SQL; readsPage: boolean } {
  const info = fields.map((infoField) => {
    const infoValue = infoField.kind === 'hasNextPage' ? sql`(case when count(*) > ${size} then 'true' else 'false' end)` : infoField.kind === 'hasPreviousPage' ? 'false' : nameJson('PageInfo');
    return [infoField.key, infoValue] as const;
  });
  return { value: jsonObject(info), readsPage: fields.some((infoField) => infoField.kind === 'hasNextPage') };
}

/** An edge of a page: its node (as `node` writes it) and __typename, as selected. */
function edgeObject<Node>(fields: Extract<ConnectionFieldPlan<Node>, { kind: 'edges' }>['fields'], edgeTypeName: string, node: (node: Node) => SQL): SQL {
  return jsonObject(fields.map((edgeField) => [edgeField.key, edgeField.kind === 'node' ? node(edgeField.object) : nameJson(edgeTypeName)] as const));
}

/**
 * A page's field other than its edges: __typename, totalCount (as `count` gives it), or
 * pageInfo. `readsPage`: its value is an aggregate over the page's rows.
 */
function pageField(field: Exclude<ConnectionFieldPlan<unknown>, { kind: 'edges' }>, size: number, count: () => SQL): { value: Piece; readsPage: boolean } {
  if (field.kind === 'typename') return { value: nameJson(field.typeName), readsPage: false };
  if (field.kind === 'totalCount') return { value: sql`(${count()})::text`, readsPage: false };
  return pageInfoValue(field.fields, size);
}

const inWorkspace = (row: string, table: { workspaceId: AnyPgColumn }) => sql`${column(row, table.workspaceId)} = ${sql.raw(`${KEY}."${KEY_LOOKUP.columns.workspaceId.name}"`)}`;

class StatementWriter {
  private aliases = 0;

  object(plan: ObjectPlan, row: string): SQL {
    const parts = plan.fields.map((field) => {
      const value =
        field.kind === 'typename'
          ? nameJson(field.typeName)
          : field.kind === 'exposed'
            ? exposedValue(row, field.field)
            : field.kind === 'entries'
              ? this.entries(field.entries, row)
              : this.connection(field.connection, row);
      return [field.key, value] as const;
    });
    return jsonObject(parts);
  }

  /** A connection page: its rows (under the parent row, if any), forward from the start. */
  connection(plan: ConnectionPlan, parentRow: string | null): SQL {
    const page = this.page(plan, parentRow);
    const size = plan.size;
    const { object, usesPage, withPageInfo } = this.pageObject(plan.fields, size, page.alias, plan.edgeTypeName, {
      totalCount: () => this.count(plan, parentRow),
      edges: (edge) => sql`string_agg(${edge((node) => this.object(node, page.alias))}, ',' order by ${page.orderBy(page.alias)})`,
    });
    // Without edges or pageInfo there are no rows to read: only counts and names.
    if (!usesPage) return sql`(select ${object})`;
    return sql`(select ${object} from ${page.rows(withPageInfo)} ${sql.raw(page.alias)})`;
  }

  /**
   * A connection's page of rows: `rows(numbered)` is a subquery of its rows in list order, up
   * to a page — numbered, up to a page and one more (to know whether more follow), each
   * numbered by its place (page_position, from 1) — to be read as `alias`.
   */
  private page(plan: ConnectionPlan, parentRow: string | null) {
    const inner = `r${(this.aliases += 1)}`;
    const alias = `p${this.aliases}`;
    const orderBy = (row: string) =>
      sql.raw(plan.ordering.keys.map((key) => `${row}."${(key.column as AnyPgColumn).name}" ${plan.ordering.direction}`).join(', '));
    const table = sql.raw(`"${getTableName(plan.table)}"`);
    const columnList = sql.raw(plan.columns.map((target) => `${inner}."${target.name}"`).join(', '));
    const conditions = this.conditions(plan, parentRow, inner);
    return {
      alias,
      orderBy,
      rows: (numbered: boolean) =>
        numbered
          ? sql`(
      select ${columnList}, row_number() over (order by ${orderBy(inner)}) as page_position
      from (select ${columnList} from ${table} ${sql.raw(inner)}
        where ${conditions} order by ${orderBy(inner)} limit ${plan.size + 1}) ${sql.raw(inner)}
    )`
          : sql`(select ${columnList} from ${table} ${sql.raw(inner)}
        where ${conditions} order by ${orderBy(inner)} limit ${plan.size})`,
    };
  }

  /** Which rows of a connection's table are its items, as `row` (under the parent row, if any). */
  private conditions(plan: ConnectionPlan, parentRow: string | null, row: string): SQL {
    const parts = [inWorkspace(row, plan.table)];
    if (plan.parentColumn) parts.push(sql`${column(row, plan.parentColumn)} = ${sql.raw(`${parentRow}."id"`)}`);
    const filter = plan.pathFilter;
    if (filter?.range.kind === 'none') parts.push(sql`false`);
    if (filter?.range.kind === 'range') {
      const { from, below } = filter.range;
      const path = column(row, filter.column);
      parts.push(below === null ? sql`${path} >= ${from}` : sql`${path} >= ${from} and ${path} < ${below}`);
    }
    return sql.join(parts, sql` and `);
  }

  /** A connection's totalCount: its parent's kept counter, or a count of its items. */
  private count(plan: ConnectionPlan, parentRow: string | null): SQL {
    if (parentRow && plan.keptCount) return column(parentRow, plan.keptCount);
    const counted = `c${(this.aliases += 1)}`;
    return sql`(select count(*) from ${sql.raw(`"${getTableName(plan.table)}"`)} ${sql.raw(counted)} where ${this.conditions(plan, parentRow, counted)})`;
  }

  /**
   * A list at the root (memoryStores) as rows of the answer (AnswerRows): its object's other
   * fields as text, and each of its edges a row of its own, in list order.
   */
  private listRows(plan: ConnectionPlan): RowsWriter {
    const page = this.page(plan, null);
    const size = plan.size;
    const rows = page.rows(true);
    const position = sql.raw(`${page.alias}.page_position`);
    const entries = plan.fields.map((field): readonly [ResponseKey, Piece | RowsWriter] => {
      if (field.kind !== 'edges') {
        const { value, readsPage } = pageField(field, size, () => this.count(plan, null));
        return [field.key, readsPage ? sql`(select ${value} from ${rows} ${sql.raw(page.alias)})` : value];
      }
      const edge = edgeObject(field.fields, plan.edgeTypeName, (node) => this.object(node, page.alias));
      return [field.key, (answer) => {
        answer.text('[');
        answer.items(edge, position, sql`from ${rows} ${sql.raw(page.alias)} where ${position} <= ${size}`);
        answer.text(']');
      }];
    });
    return (answer) => answer.object(entries);
  }

  /**
   * The object of a page (a connection or a folder level) over the page's rows `page`:
   * __typename and pageInfo written alike, totalCount as `own` counts it, and the edges as
   * `own` aggregates them over the page (given how to write one edge from its node). With
   * pageInfo the page holds one row more than it shows, which the edges leave out.
   * `usesPage`: whether a field reads the page's rows.
   */
  private pageObject<Node>(
    fields: ConnectionFieldPlan<Node>[],
    size: number,
    page: string,
    edgeTypeName: string,
    own: { totalCount: () => SQL; edges: (edge: (node: (node: Node) => SQL) => SQL) => SQL },
  ): { object: SQL; usesPage: boolean; withPageInfo: boolean } {
    const withPageInfo = fields.some((field) => field.kind === 'pageInfo');
    let usesPage = false;
    const parts = fields.map((field) => {
      if (field.kind !== 'edges') {
        const { value, readsPage } = pageField(field, size, own.totalCount);
        usesPage ||= readsPage;
        return [field.key, value] as const;
      }
      usesPage = true;
      const edge = (node: (node: Node) => SQL) => edgeObject(field.fields, edgeTypeName, node);
      return [field.key, jsonArray(sql`${own.edges(edge)} ${withPageInfo ? sql`filter (where ${sql.raw(`${page}.page_position`)} <= ${size})` : sql``}`)] as const;
    });
    return { object: jsonObject(parts), usesPage, withPageInfo };
  }

  /**
   * A store's folder level (domain/folders.ts): up to a page (and one row more, for
   * hasNextPage) of the names of the folders directly in the folder, and as many of the
   * memories directly in it (by path, that is by name), each from its index; the first of
   * them, folders before memories; then, for those rows alone, their folder or memory and
   * its edge, as its member of the union selects it.
   */
  entries(plan: EntriesPlan, storeRow: string): SQL {
    const n = (this.aliases += 1);
    const [folderRow, memoryRow, page] = [`f${n}`, `m${n}`, `e${n}`];
    const size = plan.size;
    const store = sql.raw(`${storeRow}."id"`);
    const inFolder = {
      folders: (row: string) => sql`${inWorkspace(row, memoryFolders)} and ${column(row, memoryFolders.memoryStoreId)} = ${store} and ${column(row, memoryFolders.parent)} = ${plan.folder}`,
      memories: (row: string) =>
        sql`${inWorkspace(row, memories)} and ${column(row, memories.memoryStoreId)} = ${store} and ${sql.raw(`${row}."${MEMORY_FOLDER_COLUMN}"`)} = ${plan.folder}`,
    };
    const folderTable = sql.raw(`"${getTableName(memoryFolders)}"`);
    const memoryTable = sql.raw(`"${getTableName(memories)}"`);
    const at = (name: string) => sql.raw(`${page}.${name}`);
    const { object, usesPage, withPageInfo } = this.pageObject(plan.fields, size, page, plan.edgeTypeName, {
      totalCount: () => {
        const [folders, direct] = [`cf${n}`, `cm${n}`];
        return sql`((select count(*) from ${folderTable} ${sql.raw(folders)} where ${inFolder.folders(folders)})
          + (select count(*) from ${memoryTable} ${sql.raw(direct)} where ${inFolder.memories(direct)}))`;
      },
      // Each row's folder (by its folder and name, the index it was listed from) or memory (by its id), in the branch its slot takes.
      edges: (edge) => sql`string_agg(coalesce(case when ${at('slot')} = 0
          then (select ${edge((member) => this.object(member.folder, folderRow))} from ${folderTable} ${sql.raw(folderRow)}
            where ${inFolder.folders(folderRow)} and ${column(folderRow, memoryFolders.name)} = ${at('sort_key')})
          else (select ${edge((member) => this.object(member.memory, memoryRow))} from ${memoryTable} ${sql.raw(memoryRow)}
            where ${inWorkspace(memoryRow, memories)} and ${column(memoryRow, memories.id)} = ${at('key')}) end, 'null'),
        ',' order by ${at('slot')}, ${at('sort_key')})`,
    });
    if (!usesPage) return sql`(select ${object})`;
    const rows = withPageInfo ? size + 1 : size;
    const folderName = column(folderRow, memoryFolders.name);
    const memoryPath = column(memoryRow, memories.path);
    // The page's rows by their names (and a memory's id); only those are read whole.
    return sql`(select ${object} from (
        select u.slot, u.sort_key, u.key, row_number() over (order by u.slot, u.sort_key) as page_position from (
          (select 0 as slot, ${folderName} as sort_key, null::text as key
            from ${folderTable} ${sql.raw(folderRow)} where ${inFolder.folders(folderRow)} order by ${folderName} limit ${rows})
          union all
          (select 1, ${memoryPath}, ${column(memoryRow, memories.id)}
            from ${memoryTable} ${sql.raw(memoryRow)} where ${inFolder.memories(memoryRow)} order by ${memoryPath} limit ${rows})
        ) u order by u.slot, u.sort_key limit ${rows}
      ) ${sql.raw(page)})`;
  }

  /** The statement; without a plan, the key and the mark alone. */
  root(plan: ReadPlan | null, allowedKinds: readonly ApiKeyKind[], markKinds: readonly ApiKeyKind[]): SQL {
    const entries = (plan?.fields ?? []).map((field): readonly [ResponseKey, Piece | RowsWriter] => {
      if (field.kind === 'typename') return [field.key, nameJson('Query')];
      if (field.kind === 'none') return [field.key, 'null'];
      if (field.kind === 'list') return [field.key, this.listRows(field.connection)];
      if (field.kind === 'search') throw new Error('a search is answered by its own statement (search.ts)');
      const row = `o${(this.aliases += 1)}`;
      // No such row (or another workspace's): null.
      return [field.key, sql`coalesce((select ${this.object(field.object, row)} from ${sql.raw(`"${getTableName(field.table)}" ${row}`)}
      where ${inWorkspace(row, field.table)} and ${column(row, field.table.id)} = ${field.id}), 'null')`];
    });
    // With a list at the root, the answer is joined from rows (AnswerRows); else it is concatenated.
    const answer = entries.some(([, value]) => typeof value === 'function') ? new AnswerRows() : null;
    answer?.object(entries);
    // Only the kinds of key the access policy lets take every action of the plan get the data; for others the resolvers answer.
    const allowed = keyKindIn(allowedKinds);
    return sql`with ${keyTable()}
      select ${KEY_COLUMNS},
        ${answer ? sql`answer.data` : plan ? sql`case when ${allowed} then ${jsonObject(entries as (readonly [ResponseKey, Piece])[])} end` : sql`null::text`} as data,
        ${keyMark(markKinds)} as mark
      from ${sql.raw(KEY)}${answer ? sql` left join lateral ${answer.joined(allowed)} answer on true` : sql``}`;
  }
}

/** The caller's key row, as authenticate() looks it up (KEY_LOOKUP): the common table expression `api_key`, at most one row. */
export function keyTable(): SQL {
  const selected = Object.values(KEY_LOOKUP.columns).map((target) => `"${target.name}"`);
  return sql`${sql.raw(KEY)} as (
        select ${sql.raw(selected.join(', '))} from "${sql.raw(getTableName(KEY_LOOKUP.table))}"
        where "${sql.raw(KEY_LOOKUP.tokenColumn.name)}" = ${TOKEN_PLACEHOLDER} and "${sql.raw(KEY_LOOKUP.revokedColumn.name)}" is null limit 1)`;
}

/** The key row's columns, as the statement selects them (compile.ts reads them by KEY_LOOKUP's names). */
export const KEY_COLUMNS = sql.raw(
  Object.values(KEY_LOOKUP.columns)
    .map((target) => `${KEY}."${target.name}"`)
    .join(', '),
);

/** The key row, as a statement's FROM names it. */
export const KEY_ROW = sql.raw(KEY);

/** The caller's workspace id, from the key row. */
export const KEY_WORKSPACE = sql.raw(`${KEY}."${KEY_LOOKUP.columns.workspaceId.name}"`);

/** Whether the key is of one of these kinds. */
export function keyKindIn(kinds: readonly ApiKeyKind[]): SQL {
  return kinds.length === 0 ? sql`false` : sql.raw(`${KEY}."${KEY_LOOKUP.columns.kind.name}" in (${kinds.map((kind) => `'${kind}'`).join(', ')})`);
}

/** The workspace's change mark (domain/events.ts) for a key of these kinds, else null. */
export function keyMark(markKinds: readonly ApiKeyKind[]): SQL {
  return sql`case when ${keyKindIn(markKinds)} then ${sql.raw(workspaceChangeMarkSql(`${KEY}."${KEY_LOOKUP.columns.workspaceId.name}"`))} end`;
}

/** An object's JSON text, as a compiled read writes it, from the row `row` of its table. */
export function objectJson(plan: ObjectPlan, row: string): SQL {
  return new StatementWriter().object(plan, row);
}

/**
 * The statement of a plan, for keys of the allowed kinds: the key's columns, the answer's
 * JSON as `data` (null for a key of another kind) and, for keys of the mark kinds, the
 * workspace's change mark (domain/events.ts) as `mark`, both from the statement's one
 * snapshot.
 */
export function statementOf(plan: ReadPlan, allowedKinds: readonly ApiKeyKind[], markKinds: readonly ApiKeyKind[]): SQL {
  return new StatementWriter().root(plan, allowedKinds, markKinds);
}

/**
 * A plan's statement without the answer, for a conditional request: the key and the change
 * mark only. It depends on the kinds of key alone, not on what the plan reads.
 */
export function checkStatementOf(allowedKinds: readonly ApiKeyKind[], markKinds: readonly ApiKeyKind[]): SQL {
  return new StatementWriter().root(null, allowedKinds, markKinds);
}
