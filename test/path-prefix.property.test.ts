import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PATH_MAX_BYTES } from '../src/domain/limits.js';
import { pathPrefixRange, prefixUpperBound } from '../src/domain/memories/reads.js';

/** Code-point order (what the path index's "C" collation gives UTF-8 text). */
function compareCodePoints(a: string, b: string): number {
  const left = [...a].map((character) => character.codePointAt(0)!);
  const right = [...b].map((character) => character.codePointAt(0)!);
  for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
    if (left[index] !== right[index]) return left[index]! - right[index]!;
  }
  return left.length - right.length;
}

/** Code points near the edges that matter: the surrogate gap and the last code point. */
const edgeCharacter = fc.constantFrom('a', '\u{d7ff}', '\u{e000}', '\u{ffff}', '\u{10000}', '\u{10fffe}', '\u{10ffff}');
const prefixText = fc.array(fc.oneof(edgeCharacter, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), { minLength: 1, maxLength: 12 }).map((parts) => parts.join(''));

describe('the upper bound of a path prefix', () => {
  it('is above every string that starts with the prefix and at or below every greater string that does not (property)', () => {
    fc.assert(
      fc.property(prefixText, fc.string({ unit: 'grapheme', maxLength: 6 }), fc.string({ unit: 'grapheme', maxLength: 8 }), (prefix, rest, other) => {
        const bound = prefixUpperBound(prefix);
        const extended = prefix + rest;
        if (bound === null) {
          // Only a prefix of nothing but the last code point has none.
          expect([...prefix].every((character) => character === '\u{10ffff}')).toBe(true);
          return;
        }
        expect(bound.isWellFormed()).toBe(true);
        expect(compareCodePoints(extended, bound)).toBeLessThan(0);
        if (!other.startsWith(prefix) && compareCodePoints(other, prefix) > 0) expect(compareCodePoints(other, bound)).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('handles a prefix of 250,000 astral characters without running out of stack', () => {
    const prefix = '\u{1f600}'.repeat(250_000);
    expect(prefixUpperBound(prefix)).toBe(`${'\u{1f600}'.repeat(249_999)}\u{1f601}`);
    expect(prefixUpperBound(`ab${'\u{10ffff}'.repeat(100_000)}`)).toBe('ac');
  });

  it('makes a prefix longer than any path (PATH_MAX_BYTES of UTF-8) a range of nothing', () => {
    expect(pathPrefixRange('a'.repeat(PATH_MAX_BYTES))).toEqual({ kind: 'range', from: 'a'.repeat(PATH_MAX_BYTES), below: `${'a'.repeat(PATH_MAX_BYTES - 1)}b` });
    expect(pathPrefixRange('a'.repeat(PATH_MAX_BYTES + 1))).toEqual({ kind: 'none' });
    expect(pathPrefixRange('é'.repeat(PATH_MAX_BYTES / 2 + 1))).toEqual({ kind: 'none' });
  });
});
