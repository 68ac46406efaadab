import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, SEARCH_QUERY_MAX_CHARACTERS, SEARCH_SNIPPET_MAX_LENGTH } from '../../domain/limits.js';
import { searchCursorFrom, searchCursorOf, searchMemories, searchName, type SearchCursor, type SearchFilter, type SearchHit, type SearchSnippet, type TextRange } from '../../domain/search.js';
import { builder } from '../builder.js';
import { invalidRequest } from '../errors.js';
import { MemoryRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// searchMemories

const TextRangeRef = builder.objectRef<TextRange>('TextRange').implement({
  description: 'A range of a text, in UTF-16 code units (JavaScript string indices), end exclusive: text.slice(start, end).',
  fields: (t) => ({
    start: t.exposeInt('start', { description: 'The first code unit of the range.' }),
    end: t.exposeInt('end', { description: 'The code unit just after the range.' }),
  }),
});

const SearchSnippetRef = builder.objectRef<SearchSnippet>('SearchSnippet').implement({
  description: `At most ${SEARCH_SNIPPET_MAX_LENGTH} UTF-16 code units of a memory's content, cut from it unchanged (no ellipsis, never splitting a character), and where the searched words occur in it.`,
  fields: (t) => ({
    text: t.exposeString('text', {
      description: 'The part of the content around its best match (the window holding the most matches, the earliest of those); the content\'s beginning when only its path matched.',
    }),
    matches: t.field({ type: [TextRangeRef], description: 'Where the searched words occur in `text`, in order, overlapping occurrences merged.', resolve: (snippet) => snippet.matches }),
  }),
});

interface SearchEdge {
  cursor: string;
  hit: SearchHit;
}

const MemorySearchEdgeRef = builder.objectRef<SearchEdge>('MemorySearchEdge').implement({
  description: 'A memory that matches a search, how well, and where.',
  fields: (t) => ({
    cursor: t.exposeString('cursor', { description: 'An opaque cursor: pass it as `after` (with the same search) to continue after this hit.' }),
    node: t.field({ type: MemoryRef, description: 'The matching memory.', resolve: (edge) => edge.hit.memory }),
    score: t.float({
      description: 'How well it matches: PostgreSQL\'s ts_rank_cd (cover density: more occurrences, closer together, score higher; words of the path count more than words of the content). Comparable within one search only.',
      resolve: (edge) => edge.hit.score,
    }),
    snippet: t.field({ type: SearchSnippetRef, description: 'The content around the best match.', resolve: (edge) => edge.hit.snippet }),
  }),
});

interface SearchConnection {
  edges: SearchEdge[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: () => Promise<number>;
}

const MemorySearchConnectionRef = builder.objectRef<SearchConnection>('MemorySearchConnection').implement({
  description: 'A page of search hits, best match first (ties by path, then id).',
  fields: (t) => ({
    edges: t.field({ type: [MemorySearchEdgeRef], description: 'The hits of this page, in order.', resolve: (connection) => connection.edges }),
    pageInfo: t.field({ type: builder.pageInfoRef(), description: 'Where this page stands in the list.', resolve: (connection) => connection.pageInfo }),
    totalCount: t.int({ description: 'How many live memories match the whole search (ignoring first/after).', resolve: (connection) => connection.totalCount() }),
  }),
});

function encodeCursor(search: string, hit: SearchHit): string {
  return searchCursorOf(search, hit.score, hit.memory.path, hit.memory.id);
}

function decodeCursor(search: string, cursor: string): SearchCursor {
  const after = searchCursorFrom(search, cursor);
  if (!after) throw invalidRequest('"after" is not a cursor of this search: use a cursor returned by searchMemories with the same query and filters.');
  return after;
}

builder.queryField('searchMemories', (t) =>
  t.field({
    type: MemorySearchConnectionRef,
    description:
      'Full-text search over the path and content of the workspace\'s live memories (or one store\'s), best match first, ties by path, then id. `query` is web-search syntax: words in any order (all must occur), "quoted phrases" (adjacent, in order), -excluded words, `or` between alternatives. ' +
      'Words match as whole, exact tokens, ignoring case only: no stemming and no stop words, in any language and script (accents are kept, so "café" does not match "cafe"; Cyrillic, CJK and other scripts match as the runs of letters they are written in). Punctuation separates words; in paths "/", ".", "_" and "-" do too. ' +
      `A query without a word to find (empty, only punctuation, or only excluded words) is INVALID_REQUEST. ADMIN keys only. Answered from a full-text index. Pages forward: \`first\` 0–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}) and \`after\`.`,
    args: {
      query: t.arg.string({ required: true, description: `What to find: at most ${SEARCH_QUERY_MAX_CHARACTERS} characters of web-search syntax.` }),
      memoryStoreId: t.arg.id({ description: 'Only memories of this store (a store of another workspace: no hits).' }),
      pathPrefix: t.arg.string({ description: 'Only memories whose path starts with this string (a plain prefix, as in MemoryStore.memories).' }),
      first: t.arg.int({ description: `The page size: 0–${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.` }),
      after: t.arg.string({ description: 'Only hits after the hit with this cursor (of the same search).' }),
    },
    resolve: async (_root, args, context) => {
      const size = args.first ?? DEFAULT_PAGE_SIZE;
      if (!Number.isInteger(size) || size < 0 || size > MAX_PAGE_SIZE) throw invalidRequest(`"first" must be between 0 and ${MAX_PAGE_SIZE} (got ${size}).`);
      const filter: SearchFilter = { query: args.query, memoryStoreId: args.memoryStoreId ?? undefined, pathPrefix: args.pathPrefix ?? undefined };
      const search = searchName(filter);
      const after = args.after == null ? null : decodeCursor(search, args.after);
      const page = await searchMemories(context.db, context.viewer, filter, size, after);
      const edges = page.hits.map((hit) => ({ cursor: encodeCursor(search, hit), hit }));
      return {
        edges,
        pageInfo: { hasNextPage: page.hasNextPage, hasPreviousPage: page.hasPreviousPage, startCursor: edges[0]?.cursor ?? null, endCursor: edges.at(-1)?.cursor ?? null },
        totalCount: async () => page.total,
      };
    },
  }),
);
