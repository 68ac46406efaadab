import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONTENT_MAX_BYTES, MEMORY_METADATA_MAX_KEYS, PATH_MAX_BYTES, PATH_MAX_SEGMENTS, PATH_SEGMENT_MAX_BYTES } from '../src/domain/limits.js';
import { checkContent, checkMetadata, IssueList, pathViolations, type PathRule } from '../src/domain/validation.js';

/** UTF-8 length computed from code points by hand (independent of Buffer). */
function referenceUtf8Bytes(value: string): number {
  let bytes = 0;
  for (const character of value) {
    const code = character.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

const segmentCharacter = fc.constantFrom('a', 'Z', '0', '-', '_', '.', ' ', 'é', '日', '😀', '\u00A0', '~', '\uFE0F');
/** Segments that satisfy every rule: not empty, not "." or "..", not padded, short enough. */
const validSegment = fc
  .array(segmentCharacter, { minLength: 1, maxLength: 12 })
  .map((characters) => characters.join(''))
  .filter((segment) => segment !== '.' && segment !== '..' && segment.trim() === segment);
const validPath = fc
  .array(validSegment, { minLength: 1, maxLength: 8 })
  .map((segments) => segments.join('/'));

/** Applies one violation to a valid path; returns the broken path and the rule it breaks. */
/** Characters a path may not hold besides "\\" and NUL: controls, invisible formatting characters, line separators. */
const INVISIBLE = ['\u0001', '\t', '\n', '\u001F', '\u007F', '\u0085', '\u009F', '\u00AD', '\u061C', '\u200B', '\u200C', '\u200D', '\u200E', '\u200F', '\u202A', '\u202E', '\u2028', '\u2029', '\u2060', '\u2066', '\u2069', '\uFEFF', '\u{E0001}', '\u{E007F}'];

const violation: fc.Arbitrary<[string, PathRule]> = fc.tuple(validPath, fc.integer({ min: 0, max: 10 }), fc.nat()).map(([path, kind, position]) => {
  const segments = path.split('/');
  const at = position % (segments.length + 1);
  const insert = (segment: string) => [...segments.slice(0, at), segment, ...segments.slice(at)].join('/');
  switch (kind) {
    case 0:
      return [`/${path}`, 'absolute'];
    case 1: {
      // Between two segments or at the end: a leading empty segment would be an absolute path.
      const between = 1 + (position % segments.length);
      return [[...segments.slice(0, between), '', ...segments.slice(between)].join('/'), 'emptySegment'];
    }
    case 2:
      return [insert('.'), 'dotSegment'];
    case 3:
      return [insert('..'), 'dotSegment'];
    case 4:
      return [insert(position % 2 === 0 ? ' pad' : 'pad '), 'paddedSegment'];
    case 5:
      return [insert(position % 2 === 0 ? 'back\\slash' : 'nul\u0000'), 'forbiddenCharacter'];
    case 6:
      return [insert('é'.repeat(Math.floor(PATH_SEGMENT_MAX_BYTES / 2) + 1)), 'longSegment'];
    case 7:
      return [Array.from({ length: PATH_MAX_SEGMENTS + 1 }, () => 'a').join('/'), 'tooManySegments'];
    case 8:
      return [Array.from({ length: 6 }, () => '日'.repeat(60)).join('/'), 'tooLong'];
    case 10:
      return [insert(`in${INVISIBLE[position % INVISIBLE.length]}side`), 'invisibleCharacter'];
    default:
      return [`${path}/`, 'emptySegment'];
  }
});

function referencePathIsValid(path: string): boolean {
  if (path === '' || path.startsWith('/') || path.includes('\\') || path.includes('\u0000')) return false;
  if (/[\p{Cc}\p{Cf}\u2028\u2029]/u.test(path)) return false;
  if (referenceUtf8Bytes(path) > PATH_MAX_BYTES) return false;
  const segments = path.split('/');
  if (segments.length > PATH_MAX_SEGMENTS) return false;
  return segments.every(
    (segment) => segment !== '' && segment !== '.' && segment !== '..' && !/^\s|\s$/u.test(segment) && referenceUtf8Bytes(segment) <= PATH_SEGMENT_MAX_BYTES,
  );
}

describe('path validation (the seed\'s path constraints)', () => {
  it('accepts generated valid paths', () => {
    fc.assert(
      fc.property(validPath, (path) => {
        expect(referencePathIsValid(path)).toBe(true);
        expect(pathViolations(path)).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });

  it('rejects generated violations with the rule they break', () => {
    fc.assert(
      fc.property(violation, ([path, rule]) => {
        expect(referencePathIsValid(path)).toBe(false);
        expect(pathViolations(path)).toContain(rule);
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees with the reference on arbitrary strings', () => {
    const anyPath = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'grapheme', maxLength: 30 }), fc.array(fc.constantFrom('a', '/', '.', ' ', '\\', '\u0000', 'é'), { maxLength: 12 }).map((parts) => parts.join('')));
    fc.assert(
      fc.property(anyPath, (path) => {
        fc.pre(path.isWellFormed());
        expect(pathViolations(path).length === 0).toBe(referencePathIsValid(path));
      }),
      { numRuns: 3000 },
    );
  });

  it('sits exactly on the byte limits', () => {
    const segment = 'é'.repeat(127) + 'a'; // 255 bytes
    expect(referenceUtf8Bytes(segment)).toBe(PATH_SEGMENT_MAX_BYTES);
    expect(pathViolations(segment)).toEqual([]);
    expect(pathViolations(`${segment}a`)).toEqual(['longSegment']);
    const path = [segment, segment, segment, 'a'.repeat(PATH_SEGMENT_MAX_BYTES - 1), 'b'].join('/');
    expect(referenceUtf8Bytes(path)).toBe(PATH_MAX_BYTES);
    expect(pathViolations(path)).toEqual([]);
    expect(pathViolations(`${path}b`)).toEqual(['tooLong']);
  });
});

describe('content validation (the seed\'s content constraints)', () => {
  const referenceContentIsValid = (content: string) =>
    content.isWellFormed() &&
    ![...content].some((character) => {
      const code = character.codePointAt(0)!;
      return (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f;
    }) &&
    referenceUtf8Bytes(content) <= CONTENT_MAX_BYTES;

  it('agrees with the reference, at and around the size limit', () => {
    const near = fc.tuple(fc.integer({ min: -4, max: 4 }), fc.constantFrom('a', 'é', '日', '😀')).map(([delta, character]) => {
      const width = referenceUtf8Bytes(character);
      return character.repeat(Math.floor(CONTENT_MAX_BYTES / width)) + 'a'.repeat(Math.max(0, (CONTENT_MAX_BYTES % width) + delta));
    });
    const small = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('line\r\nnext\ttab', 'bell\u0007', 'del\u007f', '\ud83d'));
    fc.assert(
      fc.property(fc.oneof(near, small), (content) => {
        const issues = new IssueList();
        checkContent(issues, ['content'], content);
        expect(issues.issues.length === 0).toBe(referenceContentIsValid(content));
      }),
      { numRuns: 1500 },
    );
  });
});

describe('memory metadata validation', () => {
  it(`accepts up to ${MEMORY_METADATA_MAX_KEYS} string entries including created_by, and rejects more`, () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }).filter((key) => /^[\w -]+$/.test(key)), fc.string({ maxLength: 20 }).filter((value) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(value)), { maxKeys: MEMORY_METADATA_MAX_KEYS + 4 }), (metadata) => {
        const withCreatedBy = Object.keys(metadata).length < MEMORY_METADATA_MAX_KEYS ? { ...metadata, created_by: 'me' } : metadata;
        const issues = new IssueList();
        checkMetadata(issues, ['metadata'], withCreatedBy, { maxKeys: MEMORY_METADATA_MAX_KEYS });
        const tooMany = Object.keys(withCreatedBy).length > MEMORY_METADATA_MAX_KEYS;
        expect(issues.issues.map((issue) => issue.field)).toEqual(tooMany ? [['metadata']] : []);
      }),
      { numRuns: 1000 },
    );
  });
});
