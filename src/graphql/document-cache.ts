import { GraphQLError, TokenKind, type DocumentNode } from 'graphql';
import { MAX_DOCUMENT_CACHE_BYTES } from '../domain/limits.js';

/**
 * The parsed documents of recent query texts, bounded by the memory they hold rather than
 * by their number: a query text may be up to the body limit (a 1 MiB comment is one token),
 * and a document keeps its text. Least recently used entries go first; an entry larger
 * than the whole budget is not kept at all.
 */
export class ByteBoundedCache<Value> {
  private readonly entries = new Map<string, { value: Value; bytes: number }>();
  private total = 0;

  constructor(
    readonly maxBytes: number,
    private readonly sizeOf: (key: string, value: Value) => number,
  ) {}

  get(key: string): Value | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Whether the key is kept (its place in the order stays as it is). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  set(key: string, value: Value): void {
    const bytes = this.sizeOf(key, value);
    this.delete(key);
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { value, bytes });
    this.total += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.total -= entry.bytes;
    }
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.total -= entry.bytes;
  }

  /** The bytes the entries are charged with. */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** What one token of a parsed document costs, roughly: its token object and its share of the AST. */
const BYTES_PER_TOKEN = 160;

/**
 * The memory a cached document holds: its text (two bytes a character, at worst), its tokens
 * and nodes, and the values of its strings, which the parser copies out of the text.
 */
export function documentBytes(text: string, document: DocumentNode | null): number {
  let bytes = 2 * text.length;
  for (let token = document?.loc?.startToken ?? null; token; token = token.next) {
    bytes += BYTES_PER_TOKEN;
    if (token.kind === TokenKind.STRING || token.kind === TokenKind.BLOCK_STRING) bytes += 2 * (token.value?.length ?? 0);
  }
  return bytes;
}

/**
 * The text a parsed document keeps alive, in bytes (two a character, at worst): the parser's
 * names and strings are slices of it, so whatever keeps one of them keeps all of it.
 */
export function documentTextBytes(document: DocumentNode): number {
  return 2 * (document.loc?.source.body.length ?? 0);
}

/** Parsed documents, and parse errors, by query text: one cache for every path a request takes. */
export function createParseCache(): ByteBoundedCache<DocumentNode | GraphQLError> {
  return new ByteBoundedCache<DocumentNode | GraphQLError>(MAX_DOCUMENT_CACHE_BYTES, (text, parsed) =>
    parsed instanceof GraphQLError ? 2 * text.length + 2 * parsed.message.length + 512 : documentBytes(text, parsed),
  );
}
