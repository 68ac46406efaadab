import { createHash } from 'node:crypto';
import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import { rowsOf, type Database } from '../db/client.js';
import { memories } from '../db/schema.js';
import { InvalidRequestError } from './errors.js';
import { isIdOfKind } from './ids.js';
import { SEARCH_QUERY_MAX_CHARACTERS, SEARCH_SNIPPET_MAX_LENGTH } from './limits.js';
import { pathPrefixRange } from './memories/reads.js';
import { cursorJson } from './pagination.js';
import { memoryRecordOfRow, type MemorySummary } from './memories/records.js';
import { characterCount, isStorableText } from './validation.js';
import type { Viewer } from './viewer.js';

/**
 * Full-text search over the live memories of a workspace (searchMemories): PostgreSQL's text
 * search over the generated `memories.search_vector` (drizzle/0004_memory_search.sql, a GIN
 * index), with the 'simple' configuration on both PGlite and PostgreSQL. The query is
 * web-search syntax (websearch_to_tsquery): words in any order, "quoted phrases",
 * -excluded words, `or`. Ranked by ts_rank_cd (cover density; path words weigh more than
 * content words), then path, then id: a stable order to page by.
 */

export interface SearchFilter {
  query: string;
  memoryStoreId?: string;
  pathPrefix?: string;
}

/** Where a page starts: after the hit with this score, path and id. */
export interface SearchCursor {
  score: number;
  path: string;
  id: string;
}

export interface TextRange {
  /** In UTF-16 code units of the snippet's text, end exclusive. */
  start: number;
  end: number;
}

export interface SearchSnippet {
  text: string;
  matches: TextRange[];
}

export interface SearchHit {
  memory: MemorySummary;
  score: number;
  snippet: SearchSnippet;
}

export interface SearchPage {
  hits: SearchHit[];
  /** How many live memories match the whole search. */
  total: number;
  hasNextPage: boolean;
  hasPreviousPage: boolean;
}

function refuse(field: string, message: string): never {
  throw new InvalidRequestError([{ field: [field], message }], `"${field}" ${message}.`);
}

/** The arguments every transport passes, checked: INVALID_REQUEST for what cannot be a search. */
export function checkSearchFilter(filter: SearchFilter): void {
  if (filter.query.trim() === '') refuse('query', 'must contain at least one word');
  if (characterCount(filter.query) > SEARCH_QUERY_MAX_CHARACTERS) refuse('query', `must be at most ${SEARCH_QUERY_MAX_CHARACTERS} characters`);
  if (!isStorableText(filter.query)) refuse('query', 'must be valid Unicode without NUL');
  if (filter.memoryStoreId !== undefined && !isIdOfKind(filter.memoryStoreId, 'memoryStore')) refuse('memoryStoreId', 'must be a `memstore_` id');
}


/** Separators inside a word that the index reads as spaces ("/" and "." everywhere, "-" in paths). */
const JOINED_WORD = /^[\p{L}\p{N}_]+(?:[-./][\p{L}\p{N}_]+)+$/u;

/**
 * The query as the index reads text: a word joined by "/", "." or "-" ("notes/beta.md",
 * "project-alpha") becomes the phrase of its parts, so it finds the same words in paths and
 * content; inside quotes the separators become spaces. Everything else is left to
 * websearch_to_tsquery.
 */
export function normalizeSearchQuery(query: string): string {
  return query
    .split('"')
    .map((part, index) => {
      if (index % 2 === 1) return part.replace(/(?<=[\p{L}\p{N}_])[-./](?=[\p{L}\p{N}_])/gu, ' ');
      return part
        .split(/(\s+)/)
        .map((token) => {
          const excluded = token.startsWith('-') ? '-' : '';
          const word = token.slice(excluded.length);
          return JOINED_WORD.test(word) ? `${excluded}"${word.replace(/[-./]/g, ' ')}"` : token;
        })
        .join('');
    })
    .join('"');
}

/**
 * A tagged-template SQL builder: drizzle's `sql` (searchMemories below) or db/statement.ts's
 * (compiled search reads, read-compiler/search.ts). Both write the one search statement
 * declared here.
 */
export interface SqlTag<S> {
  (strings: TemplateStringsArray, ...values: unknown[]): S;
  raw(text: string): S;
  join(parts: S[], separator: S): S;
}

const DRIZZLE: SqlTag<SQL> = Object.assign((strings: TemplateStringsArray, ...values: unknown[]) => sql(strings, ...values), {
  raw: (text: string) => sql.raw(text),
  join: (parts: SQL[], separator: SQL) => sql.join(parts, separator),
});

/** The query as a tsquery. */
export const searchQuerySql = <S>(tag: SqlTag<S>, query: string): S => tag`websearch_to_tsquery('simple'::regconfig, ${normalizeSearchQuery(query)}::text)`;

/**
 * The words a hit must contain, as the index reads them (lower-cased lexemes, excluded words
 * left out), from the query's tree (`querytree`); null for a query with none — only
 * punctuation, or only excluded words, which no index can answer: INVALID_REQUEST.
 */
export function searchedWordsOf(tree: unknown): SearchedWords | null {
  const text = String(tree ?? 'T');
  if (text === 'T' || text === '') return null;
  return new SearchedWords([...text.matchAll(/'((?:[^']|'')*)'/g)].map((match) => match[1]!.replaceAll("''", "'")));
}

function searchedWords(tree: unknown): SearchedWords {
  return searchedWordsOf(tree) ?? refuse('query', 'must contain at least one word to find (not only excluded words or punctuation)');
}

/** The memory columns a hit reads as they are (metadata and the instants are rendered apart). */
const HIT_COLUMNS = sql.raw(
  Object.values(getTableColumns(memories))
    .map((column) => column.name)
    .filter((name) => !['metadata', 'created_at', 'updated_at'].includes(name))
    .map((name) => `m.${name}`)
    .join(', '),
);

/** Who searches: SQL giving the workspace's id, and what else the matches are read with (a compiled read's key row and its condition). */
export interface SearchSource<S> {
  workspace: S;
  from: S | null;
  where: S | null;
}

/**
 * A search's ranked matches, as common table expressions: `ranked` (every live match's id,
 * path and score, read from the index: no content), `page` (from `after`, best first, ties
 * by path then id, up to `size` and one more, to know whether more follow) and `stats` (how
 * many match; whether a match precedes `after`). A query without words to find (its tree
 * 'T' or empty) reads no row, and a prefix no path can have matches nothing.
 */
export function searchTables<S>(tag: SqlTag<S>, source: SearchSource<S>, filter: SearchFilter, size: number, after: SearchCursor | null): S {
  const where = [tag`querytree(q.query) not in ('T', '')`, tag`m.workspace_id = ${source.workspace}`];
  if (source.where) where.push(source.where);
  if (filter.memoryStoreId !== undefined) where.push(tag`m.memory_store_id = ${filter.memoryStoreId}`);
  const range = pathPrefixRange(filter.pathPrefix);
  if (range.kind === 'none') where.push(tag`false`);
  if (range.kind === 'range') {
    where.push(tag`m.path >= ${range.from}`);
    if (range.below !== null) where.push(tag`m.path < ${range.below}`);
  }
  where.push(tag`m.search_vector @@ q.query`);
  const beyond = after
    ? tag`(r.score < ${after.score}::float8 or (r.score = ${after.score}::float8 and (r.path, r.id) > (${after.path}::text collate "C", ${after.id}::text collate "C")))`
    : tag`true`;
  return tag`ranked as materialized (
      select m.id, m.path, ts_rank_cd(m.search_vector, q.query)::float8 as score
      from memories m, ${searchQuerySql(tag, filter.query)} as q(query)${source.from ? tag`, ${source.from}` : tag``}
      where ${tag.join(where, tag` and `)}),
    page as (select r.id, r.path, r.score from ranked r where ${beyond} order by r.score desc, r.path asc, r.id asc limit ${size + 1}),
    stats as (select count(*)::int as total, coalesce(bool_or(not ${beyond}), false) as behind from ranked r)`;
}

/**
 * One page of hits, best first; `after` continues after a hit of an earlier page. One
 * statement (searchTables), which also gives the query's tree: its words mark the snippets.
 */
export async function searchMemories(db: Database, viewer: Viewer, filter: SearchFilter, size: number, after: SearchCursor | null): Promise<SearchPage> {
  checkSearchFilter(filter);
  const tables = searchTables(DRIZZLE, { workspace: sql`${viewer.workspaceId}`, from: null, where: null }, filter, size, after);
  const result = await db.execute(sql`
    with ${tables}
    select querytree(${searchQuerySql(DRIZZLE, filter.query)}) as tree, stats.total, stats.behind, p.score as score, ${HIT_COLUMNS}, m.metadata::text as metadata,
      (extract(epoch from m.created_at) * 1000)::float8 as created_at_ms, (extract(epoch from m.updated_at) * 1000)::float8 as updated_at_ms
    from stats
      left join page p on true
      left join memories m on m.workspace_id = ${viewer.workspaceId} and m.id = p.id
    order by p.score desc nulls last, p.path asc, p.id asc`);
  const rows = rowsOf(result);
  const words = searchedWords(rows[0]?.tree);
  const total = Number(rows[0]?.total ?? 0);
  const hasPreviousPage = after !== null && rows[0]?.behind === true;
  const found = rows.filter((row) => row.id != null);
  const hits = found.slice(0, size).map((row) => {
    const memory: MemorySummary = memoryRecordOfRow(row, { createdAt: 'created_at_ms', updatedAt: 'updated_at_ms' });
    return { memory, score: Number(row.score), snippet: snippetOf(memory.content!, words) };
  });
  return { hits, total, hasNextPage: found.length > size, hasPreviousPage };
}

// ---------------------------------------------------------------------------------------
// Cursors

/** The name of a search, which its cursors carry: a cursor of another search is refused. */
export function searchName(filter: SearchFilter): string {
  return createHash('sha256').update(JSON.stringify([filter.query, filter.memoryStoreId ?? null, filter.pathPrefix ?? null])).digest('base64url').slice(0, 12);
}

/** The cursor of a hit of the search named `search`: after it, the next page starts. */
export function searchCursorOf(search: string, score: number, path: string, id: string): string {
  return Buffer.from(JSON.stringify(['search', search, score, path, id]), 'utf8').toString('base64url');
}

/** Where a cursor of the search named `search` continues, or null when it is not one (another search's, or no cursor at all). */
export function searchCursorFrom(search: string, cursor: string): SearchCursor | null {
  const parsed = cursorJson(cursor);
  if (!Array.isArray(parsed) || parsed.length !== 5 || parsed[0] !== 'search' || parsed[1] !== search) return null;
  const [, , score, path, id] = parsed as unknown[];
  if (typeof score !== 'number' || !Number.isFinite(score) || typeof path !== 'string' || !path.isWellFormed() || path.includes('\u0000') || typeof id !== 'string' || !isIdOfKind(id, 'memory')) return null;
  return { score, path, id };
}

// ---------------------------------------------------------------------------------------
// Snippets

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The searched words, ready to find in text: each word's pattern is made once for a whole
 * search (making a pattern of Unicode classes costs about twice what running it over a
 * hit's content does).
 */
export class SearchedWords {
  readonly patterns: readonly RegExp[];

  constructor(lexemes: readonly string[]) {
    this.patterns = [...new Set(lexemes)]
      .filter((lexeme) => lexeme !== '')
      .map((lexeme) => new RegExp(`(?<![\\p{L}\\p{N}\\p{M}])${escapeRegExp(lexeme)}(?![\\p{L}\\p{N}\\p{M}])`, 'giu'));
  }
}

/**
 * Where the searched words occur in a text, as the parser splits words: a case-insensitive
 * match not inside a longer run of letters and digits. Overlapping matches are merged.
 */
export function matchRanges(text: string, words: SearchedWords): TextRange[] {
  const ranges: TextRange[] = [];
  // matchAll runs a copy of the pattern: the shared one keeps no state between texts.
  for (const pattern of words.patterns) for (const match of text.matchAll(pattern)) ranges.push({ start: match.index, end: match.index + match[0].length });
  ranges.sort((left, right) => left.start - right.start || left.end - right.end);
  const merged: TextRange[] = [];
  for (const range of ranges) {
    const last = merged.at(-1);
    if (last && range.start <= last.end) last.end = Math.max(last.end, range.end);
    else merged.push({ ...range });
  }
  return merged;
}

const isLowSurrogate = (text: string, index: number) => {
  const unit = text.charCodeAt(index);
  return unit >= 0xdc00 && unit <= 0xdfff;
};

/** How much text before the first match a snippet shows, when there is room. */
const LEAD_IN = 40;

/**
 * At most SEARCH_SNIPPET_MAX_LENGTH UTF-16 units of `content` around its best match — the
 * window holding the most matches, the earliest of those — and the matches inside it;
 * without a match in the content (the path matched), its beginning. Never splits a
 * surrogate pair.
 */
export function snippetOf(content: string, words: SearchedWords): SearchSnippet {
  const all = matchRanges(content, words);
  let start = 0;
  if (content.length > SEARCH_SNIPPET_MAX_LENGTH && all.length > 0) {
    // Each match's window, in order: its start never decreases, so the matches inside it
    // (merged ranges are ordered and apart: those ending by its end, less those starting
    // before its start) are counted with two indexes moving forward.
    let best = -1;
    let endingInside = 0;
    let startingBefore = 0;
    for (const anchor of all) {
      const from = Math.max(0, Math.min(anchor.start - LEAD_IN, content.length - SEARCH_SNIPPET_MAX_LENGTH));
      while (endingInside < all.length && all[endingInside]!.end <= from + SEARCH_SNIPPET_MAX_LENGTH) endingInside += 1;
      while (startingBefore < all.length && all[startingBefore]!.start < from) startingBefore += 1;
      const inside = Math.max(0, endingInside - startingBefore);
      if (inside > best) {
        best = inside;
        start = from;
      }
    }
  }
  if (start > 0 && isLowSurrogate(content, start)) start += 1;
  let end = Math.min(content.length, start + SEARCH_SNIPPET_MAX_LENGTH);
  if (end < content.length && isLowSurrogate(content, end)) end -= 1;
  const text = content.slice(start, end);
  const matches = all.filter((range) => range.start >= start && range.end <= end).map((range) => ({ start: range.start - start, end: range.end - start }));
  return { text, matches };
}
