import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SEARCH_SNIPPET_MAX_LENGTH } from '../src/domain/limits.js';
import { matchRanges, SearchedWords, snippetOf, type TextRange } from '../src/domain/search.js';

/**
 * Snippets against their definition: the window of at most SEARCH_SNIPPET_MAX_LENGTH units
 * that starts LEAD_IN units before a match (within the content), holding the most matches,
 * the earliest of those — counted here by brute force, match by match.
 */

const LEAD_IN = 40;

function referenceStart(content: string, all: TextRange[]): number {
  if (content.length <= SEARCH_SNIPPET_MAX_LENGTH || all.length === 0) return 0;
  let best = -1;
  let start = 0;
  for (const anchor of all) {
    const from = Math.max(0, Math.min(anchor.start - LEAD_IN, content.length - SEARCH_SNIPPET_MAX_LENGTH));
    let inside = 0;
    for (const range of all) if (range.start >= from && range.end <= from + SEARCH_SNIPPET_MAX_LENGTH) inside += 1;
    if (inside > best) [best, start] = [inside, from];
  }
  return start;
}

/** Texts of words the searches find (few, so that windows differ), near-misses, filler, separators and characters of two UTF-16 units. */
const content = fc
  .array(
    fc.oneof(
      { arbitrary: fc.constantFrom('fox', 'Fox', 'FOX', 'dog', 'x', 'é', 'éfox', 'fox😀'), weight: 1 },
      { arbitrary: fc.constantFrom('foxes', ' ', '  ', '-', '.', '😀', '\n', 'lorem ipsum ', 'a'.repeat(30)), weight: 4 },
    ),
    { maxLength: 300 },
  )
  .map((parts) => parts.join(''));
/** "fox" after gaps of spaces, often of the lengths that put a match just on a window's edge (40 units before a match, 200 after). */
const spaced = fc
  .array(fc.oneof(fc.constantFrom(0, 1, 36, 37, 38, 117, 156, 157, 158, 160, 194, 196, 197, 198), fc.nat(260)), { maxLength: 40 })
  .map((gaps) => gaps.map((gap) => `${' '.repeat(gap)}fox`).join(''));
const lexemes = fc.subarray(['fox', 'dog', 'x', 'é', 'a'], { minLength: 1 });

describe('search snippets', () => {
  it('cut the window with the most matches, the earliest of those, as the definition counts them', () => {
    fc.assert(
      fc.property(fc.oneof(content, spaced), lexemes, (text, words) => {
        const ready = new SearchedWords(words);
        const all = matchRanges(text, ready);
        const snippet = snippetOf(text, ready);
        let start = referenceStart(text, all);
        if (start > 0 && /[\udc00-\udfff]/.test(text[start]!)) start += 1;
        expect(text.slice(start).startsWith(snippet.text)).toBe(true);
        expect(snippet.text.length).toBeGreaterThanOrEqual(Math.min(text.length - start, SEARCH_SNIPPET_MAX_LENGTH) - 1);
        expect(snippet.matches).toEqual(
          all.filter((range) => range.start >= start && range.end <= start + snippet.text.length).map((range) => ({ start: range.start - start, end: range.end - start })),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('find the same matches whether the words are made ready once for many texts or afresh for each', () => {
    fc.assert(
      fc.property(fc.array(content, { minLength: 1, maxLength: 5 }), lexemes, (texts, words) => {
        const ready = new SearchedWords(words);
        for (const text of texts) expect(matchRanges(text, ready)).toEqual(matchRanges(text, new SearchedWords(words)));
      }),
      { numRuns: 300 },
    );
  });
});
