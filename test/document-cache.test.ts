import { GraphQLError, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_CACHE_BYTES } from '../src/domain/limits.js';
import { ByteBoundedCache, createParseCache, documentBytes } from '../src/graphql/document-cache.js';

/**
 * The cache of parsed documents is bounded by the memory it holds, not by its number of
 * entries: a query text may be up to the 1 MiB body limit (a comment is not even a token),
 * and a cached document keeps its text.
 */

describe('the document cache', () => {
  it(`holds at most ${MAX_DOCUMENT_CACHE_BYTES} bytes of documents, however large the query texts`, () => {
    const cache = createParseCache();
    for (let index = 0; index < 200; index += 1) {
      const text = `{ __typename } # ${String(index).padStart(6, '0')} ${'x'.repeat(900 * 1024)}`;
      cache.set(text, parse(text));
      expect(cache.bytes).toBeLessThanOrEqual(MAX_DOCUMENT_CACHE_BYTES);
    }
    // About 1.8 MB each: under twenty fit; 1,000 such texts would pin 1.8 GB in a cache of 1,000 entries.
    expect(cache.size).toBeLessThan(20);
    expect(cache.size).toBeGreaterThan(5);
  });

  it('holds parse errors of large texts within the same bound', () => {
    const cache = createParseCache();
    for (let index = 0; index < 200; index += 1) {
      const text = `{ ${index} } ${'x'.repeat(900 * 1024)}`;
      cache.set(text, new GraphQLError(`Syntax Error: Expected Name, found Int "${index}".`));
      expect(cache.bytes).toBeLessThanOrEqual(MAX_DOCUMENT_CACHE_BYTES);
    }
    expect(cache.size).toBeLessThan(20);
  });

  it('keeps many ordinary documents, and drops the least recently used first', () => {
    const cache = new ByteBoundedCache<string>(300, (key, value) => key.length + value.length);
    cache.set('a', 'x'.repeat(99));
    cache.set('b', 'x'.repeat(99));
    cache.set('c', 'x'.repeat(99));
    expect(cache.get('a')).toBeDefined();
    cache.set('d', 'x'.repeat(99));
    expect(cache.get('b')).toBeUndefined();
    expect([cache.get('a'), cache.get('c'), cache.get('d')].every((value) => value !== undefined)).toBe(true);
    expect(cache.bytes).toBe(300);
    // An entry larger than the whole budget is not kept, and evicts nothing.
    cache.set('huge', 'x'.repeat(400));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.size).toBe(3);
  });

  it('charges a document for its text and its tokens', () => {
    const small = '{ memoryStores { totalCount } }';
    const tokens = '{ memoryStores { totalCount } }'.match(/[{}]|\w+/g)!.length;
    expect(documentBytes(small, parse(small))).toBe(2 * small.length + 160 * (tokens + 2));
    const comment = `{ __typename } # ${'y'.repeat(1000)}`;
    expect(documentBytes(comment, parse(comment))).toBeGreaterThan(2 * comment.length);
  });
});
