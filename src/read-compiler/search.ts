import type { StatementScope } from '../db/deadline.js';
import { sql, type Statement as SQL } from '../db/statement.js';
import { searchCursorOf, searchedWordsOf, searchQuerySql, searchTables, snippetOf, type SearchedWords, type SqlTag } from '../domain/search.js';
import type { ApiKeyKind } from '../domain/viewer.js';
import type { ObjectPlan, ReadPlan, RootFieldPlan, SearchPlan } from './plan.js';
import type { SelectionPlan as SelectionPlanOf } from './search-plan.js';
import { KEY_COLUMNS, KEY_ROW, KEY_WORKSPACE, keyKindIn, keyMark, keyTable, objectJson } from './sql.js';
import { keepAnswered, parametersBytes, statementShape, statementText, viewerOfRow, withToken, type CompiledAnswer, type CompiledRead, type StatementRunners, type StatementText } from './statements.js';

type SelectionPlan = SelectionPlanOf<ObjectPlan>;

/**
 * A compiled search read: `searchMemories` (search-plan.ts) answered by one statement that
 * authenticates the request, ranks the matches as searchMemories does (the same
 * declaration, domain/search.ts searchTables, written with the compiler's builder) and
 * writes each hit's memory as a compiled read writes it; then the snippets, scores and
 * cursors are made from its rows by the domain's own functions, as the resolvers make
 * them. test/compiled-reads.test.ts holds the answers to the resolvers'.
 */

const STATEMENT: SqlTag<SQL> = sql;

/** The row alias of a hit's memory in the statement. */
const HIT = 'hit';

/**
 * The statement: the key's columns and change mark on every row; for a key of the allowed
 * kinds, the search's total and its query's tree, then one row per hit of the page (and
 * one more), best first, with its memory's JSON and, when snippets are shown, its content.
 */
function searchStatementOf(plan: SearchPlan, allowedKinds: readonly ApiKeyKind[], markKinds: readonly ApiKeyKind[]): SQL {
  const allowed = keyKindIn(allowedKinds);
  const tables = searchTables(STATEMENT, { workspace: KEY_WORKSPACE, from: KEY_ROW, where: allowed }, plan.filter, plan.size, plan.after);
  return sql`with ${keyTable()}, ${tables}
    select ${KEY_COLUMNS}, ${keyMark(markKinds)} as mark, stats.total, stats.behind,
      case when ${allowed} then querytree(${searchQuerySql(STATEMENT, plan.filter.query)}) end as tree,
      p.score as hit_score, p.path as hit_path, p.id as hit_id, ${plan.snippets ? sql.raw(`${HIT}.content`) : sql`null::text`} as content, ${plan.node ? objectJson(plan.node, HIT) : sql`null::text`} as hit_json
    from ${KEY_ROW}
      left join stats on ${allowed}
      left join page p on true
      left join memories ${sql.raw(HIT)} on ${sql.raw(HIT)}.workspace_id = ${KEY_WORKSPACE} and ${sql.raw(HIT)}.id = p.id
    order by p.score desc nulls last, p.path asc, p.id asc`;
}

/**
 * The statement of a conditional request: the key's columns, its change mark and the
 * query's tree, which tells whether the query has words to find. A query without words has
 * no answer of the compiled read's (the resolvers refuse it), so it must not have a tag.
 */
function searchCheckOf(plan: SearchPlan, allowedKinds: readonly ApiKeyKind[], markKinds: readonly ApiKeyKind[]): SQL {
  return sql`with ${keyTable()}
    select ${KEY_COLUMNS}, ${keyMark(markKinds)} as mark, case when ${keyKindIn(allowedKinds)} then querytree(${searchQuerySql(STATEMENT, plan.filter.query)}) end as tree
    from ${KEY_ROW}`;
}

/** The words a statement's row says its query searches for: null for another kind of key (no tree) or a query without words. */
const wordsOfRow = (row: Record<string, unknown>) => (row.tree == null ? null : searchedWordsOf(row.tree));

/** The JSON text of an object as `fields` select it from `value` (a field's value by its name; a node as the statement wrote it). */
function writeObject(fields: SelectionPlan, value: Record<string, unknown>): string {
  let text = '{';
  fields.forEach((field, index) => {
    text += `${index === 0 ? '' : ','}${JSON.stringify(field.key.alias ?? field.key.name)}:`;
    if (field.kind === 'typename') text += JSON.stringify(field.typeName);
    else if (field.kind === 'node') text += value.node as string;
    else if (field.kind === 'leaf') text += JSON.stringify(value[field.key.name] ?? null);
    else {
      const inner = value[field.key.name];
      text += Array.isArray(inner) ? `[${inner.map((item: Record<string, unknown>) => writeObject(field.fields, item)).join(',')}]` : writeObject(field.fields, inner as Record<string, unknown>);
    }
  });
  return `${text}}`;
}

/** A boolean column's value, as a database's runner gives it (true, or PostgreSQL's text 't'). */
const isTrue = (value: unknown) => value === true || value === 't';

/** What the page's rows hold, as the connection's fields read it: the same values the resolvers serve. */
function connectionOf(plan: SearchPlan, rows: Record<string, unknown>[], words: SearchedWords): Record<string, unknown> {
  const hits = rows.filter((row) => row.hit_id != null);
  const edges = hits.slice(0, plan.size).map((row) => {
    const score = Number(row.hit_score);
    return {
      cursor: searchCursorOf(plan.name, score, row.hit_path as string, row.hit_id as string),
      score,
      node: row.hit_json,
      get snippet() {
        return snippetOf(row.content as string, words);
      },
    };
  });
  return {
    totalCount: Number(rows[0]!.total),
    pageInfo: { hasNextPage: hits.length > plan.size, hasPreviousPage: plan.after !== null && isTrue(rows[0]!.behind), startCursor: edges[0]?.cursor ?? null, endCursor: edges.at(-1)?.cursor ?? null },
    edges,
  };
}

/** About the memory of a compiled search besides its parameters: itself, its plan and its filter's text. */
const SEARCH_READ_BYTES = 2048;

export class CompiledSearch implements CompiledRead {
  private shapeText: string | null = null;
  /** The conditional request's statement (searchCheckOf), made on first use: most requests are not conditional. */
  private checkStatement: { statement: StatementText; params: unknown[] } | null = null;

  private constructor(
    private readonly runners: StatementRunners,
    private readonly statement: StatementText,
    private readonly params: unknown[],
    private readonly allowed: ApiKeyKind[],
    private readonly marked: ApiKeyKind[],
    private readonly root: RootFieldPlan[],
    private readonly plan: SearchPlan,
    /** The text of the document it was compiled from, which its plan keeps alive (documentTextBytes). */
    private readonly documentBytes: number,
  ) {}

  /** The compiled read of a plan whose root is one search (and names of the root type), or null for any other plan. */
  static of(runners: StatementRunners, plan: ReadPlan, allowed: ApiKeyKind[], marked: ApiKeyKind[], documentBytes: number): CompiledSearch | null {
    const searches = plan.fields.filter((field) => field.kind === 'search');
    if (searches.length !== 1 || plan.fields.some((field) => field.kind !== 'search' && field.kind !== 'typename')) return null;
    const search = searches[0]!.search;
    const { text, params } = searchStatementOf(search, allowed, marked).toQuery();
    return new CompiledSearch(runners, statementText(text), params, allowed, marked, plan.fields, search, documentBytes);
  }

  /** A statement's rows, with the token's SHA-256 in its place. */
  private async rowsOf(statement: StatementText, params: unknown[], tokenSha256: string, scope: StatementScope | undefined): Promise<Record<string, unknown>[]> {
    const rows = await this.runners.run(statement.text, withToken(params, tokenSha256), { prepare: statement.kept, scope });
    if (rows.length > 0) keepAnswered(statement);
    return rows;
  }

  async read(tokenSha256: string, scope?: StatementScope): Promise<CompiledAnswer | null> {
    const rows = await this.rowsOf(this.statement, this.params, tokenSha256, scope);
    const first = rows[0];
    if (!first) return null;
    const viewer = viewerOfRow(first);
    // Another kind of key, or a query without words to find (INVALID_REQUEST): the resolvers answer.
    const words = wordsOfRow(first);
    if (!words) return { viewer, data: null, mark: null };
    let data = '{';
    this.root.forEach((field, index) => {
      data += `${index === 0 ? '' : ','}${JSON.stringify(field.key.alias ?? field.key.name)}:`;
      data += field.kind === 'search' ? writeObject(this.plan.fields, connectionOf(this.plan, rows, words)) : JSON.stringify('Query');
    });
    return { viewer, data: `${data}}`, mark: (first.mark as string | null) ?? null };
  }

  /** The key, and the change mark only when read would answer: never for a query without words, whose answer is the resolvers' refusal. */
  async check(tokenSha256: string, scope?: StatementScope): Promise<CompiledAnswer | null> {
    if (this.checkStatement === null) {
      const { text, params } = searchCheckOf(this.plan, this.allowed, this.marked).toQuery();
      this.checkStatement = { statement: statementText(text), params };
    }
    const [first] = await this.rowsOf(this.checkStatement.statement, this.checkStatement.params, tokenSha256, scope);
    if (!first) return null;
    return { viewer: viewerOfRow(first), data: null, mark: wordsOfRow(first) ? ((first.mark as string | null) ?? null) : null };
  }

  /**
   * The statement and its parameters, what the answer selects besides the nodes (which the
   * statement writes), and the search's name, which its cursors carry: searches written
   * apart may read alike ("project-alpha" and "project.alpha"; no prefix and "").
   */
  get shape(): string {
    if (this.shapeText === null) {
      const selected = JSON.stringify([this.root.map((field) => [field.key, field.kind]), this.plan.fields], (key, value: unknown) => (key === 'object' ? null : value));
      this.shapeText = `${statementShape(this.statement, this.params)} ${selected} ${this.plan.name}`;
    }
    return this.shapeText;
  }

  get proven(): boolean {
    return this.statement.kept;
  }

  get bytes(): number {
    return SEARCH_READ_BYTES + parametersBytes(this.params, 128) + 4 * (this.plan.filter.query.length + (this.plan.filter.pathPrefix?.length ?? 0)) + this.documentBytes + (this.statement.kept ? 0 : 4 * this.statement.text.length);
  }
}
