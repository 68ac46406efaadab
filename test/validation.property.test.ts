import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from '../src/domain/limits.js';
import { checkMetadata, checkText, IssueList } from '../src/domain/validation.js';

/**
 * Reference predicates written independently of src/domain/validation.ts: they walk UTF-16
 * units by hand instead of using regular expressions and isWellFormed.
 */
function referenceIsCleanText(value: string): boolean {
  for (let index = 0; index < value.length; index += 1) {
    const unit = value.charCodeAt(index);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(index + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      index += 1;
      continue;
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return false;
    if ((unit < 0x20 && unit !== 0x09 && unit !== 0x0a && unit !== 0x0d) || unit === 0x7f) return false;
  }
  return true;
}

function referenceCharacters(value: string): number {
  let count = 0;
  for (let index = 0; index < value.length; index += 1) {
    const unit = value.charCodeAt(index);
    if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < value.length) {
      const next = value.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) index += 1;
    }
    count += 1;
  }
  return count;
}

const WHITESPACE = new Set([0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff]);
function referenceIsBlank(value: string): boolean {
  for (const character of value) {
    const code = character.codePointAt(0)!;
    if (!(WHITESPACE.has(code) || (code >= 0x2000 && code <= 0x200a))) return false;
  }
  return true;
}

function referenceNameIsValid(value: string): boolean {
  return referenceIsCleanText(value) && !referenceIsBlank(value) && referenceCharacters(value) <= STORE_NAME_MAX_CHARACTERS;
}

/** Strings that hit the edges: control characters, lone and paired surrogates, whitespace, long runs. */
const edgyCharacter = fc.oneof(
  fc.constantFrom('\u0000', '\u0001', '\t', '\n', '\r', '\u001f', '\u007f', ' ', '\u00a0', '\u3000', '\ud800', '\udfff', '😀', 'é', 'a', 'Z'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);
const edgyString = (maxLength: number) =>
  fc.oneof(
    fc.array(edgyCharacter, { maxLength }).map((parts) => parts.join('')),
    fc.string({ unit: 'grapheme', maxLength }),
    fc.tuple(fc.integer({ min: 0, max: 3 }), fc.constantFrom('a', '😀', ' ')).map(([extra, character]) => character.repeat(STORE_NAME_MAX_CHARACTERS - 1 + extra)),
  );

describe('text validation (store name rule)', () => {
  it('accepts exactly the strings the reference accepts', () => {
    fc.assert(
      fc.property(edgyString(40), (value) => {
        const issues = new IssueList();
        checkText(issues, ['name'], value, { maxCharacters: STORE_NAME_MAX_CHARACTERS, allowBlank: false });
        expect(issues.issues.length === 0).toBe(referenceNameIsValid(value));
        for (const issue of issues.issues) expect(issue.field).toEqual(['name']);
      }),
      { numRuns: 3000 },
    );
  });

  it('accepts generated valid names', () => {
    const validCharacter = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }).filter((character) => referenceIsCleanText(character));
    fc.assert(
      fc.property(fc.array(validCharacter, { minLength: 1, maxLength: 60 }).map((parts) => `x${parts.join('')}`), (value) => {
        fc.pre(referenceCharacters(value) <= STORE_NAME_MAX_CHARACTERS);
        const issues = new IssueList();
        checkText(issues, ['name'], value, { maxCharacters: STORE_NAME_MAX_CHARACTERS, allowBlank: false });
        expect(issues.issues).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('metadata validation (store rule)', () => {
  const referenceIssueFields = (metadata: Record<string, unknown>): string[][] => {
    const fields: string[][] = [];
    if (Object.keys(metadata).length > STORE_METADATA_MAX_KEYS) fields.push(['metadata']);
    for (const [key, value] of Object.entries(metadata)) {
      const keyCharacters = referenceCharacters(key);
      const keyBad = key === 'created_by' || !referenceIsCleanText(key) || keyCharacters < 1 || keyCharacters > METADATA_KEY_MAX_CHARACTERS;
      const valueBad = typeof value !== 'string' || !referenceIsCleanText(value) || referenceCharacters(value) > METADATA_VALUE_MAX_CHARACTERS;
      // One issue per problem; the reserved key is reported alone.
      if (key === 'created_by') fields.push(['metadata', key]);
      else {
        if (keyBad) fields.push(['metadata', key]);
        if (valueBad) fields.push(['metadata', key]);
      }
    }
    return fields;
  };

  const key = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.constantFrom('', 'created_by', 'k'.repeat(METADATA_KEY_MAX_CHARACTERS), 'k'.repeat(METADATA_KEY_MAX_CHARACTERS + 1), 'bad\u0001', '\ud800'),
  );
  const value = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.constantFrom('v'.repeat(METADATA_VALUE_MAX_CHARACTERS), 'v'.repeat(METADATA_VALUE_MAX_CHARACTERS + 1), 'tab\tok', 'nul\u0000'),
    fc.constantFrom<unknown>(1, null, true, ['x'], { nested: 'x' }),
  );

  it('reports the same fields as the reference for generated maps', () => {
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: STORE_METADATA_MAX_KEYS + 3 }), (metadata) => {
        const issues = new IssueList();
        checkMetadata(issues, ['metadata'], metadata, { maxKeys: STORE_METADATA_MAX_KEYS, reservedKey: 'created_by' });
        expect(issues.issues.map((issue) => issue.field)).toEqual(referenceIssueFields(metadata));
      }),
      { numRuns: 2000 },
    );
  });
});
