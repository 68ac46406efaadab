import { hash } from 'node:crypto';
import { CHANGE_MARK_UNSETTLED } from '../domain/events.js';

/**
 * Conditional reads: the entity tag (ETag) of an answer the read compiler builds, and the
 * test of a request's `If-None-Match` against it. A tag names one answer of one key: the
 * server's schema, the representation, the key, the compiled statement with its parameters,
 * the response's extensions and the workspace's change mark (domain/events.ts) read in the answer's own snapshot. The
 * answer of an equal tag is therefore the same answer, and a request that names the current
 * tag is answered `304 Not Modified` after one cheap statement (the key and the mark),
 * without building the answer. No tag is given while the mark is unsettled.
 */
export class AnswerTags {
  private readonly server: string;

  /** `sdl`: the schema's text; a new schema (a new memstore) never takes the tags of the old one. */
  constructor(sdl: string) {
    this.server = hash('sha256', sdl, 'base64url');
  }

  /**
   * The weak tag `W/"…"` of an answer, or null when it has none (no mark, or an unsettled one).
   * `extensions`: the response's own, as its body carries them (the query's cost estimate,
   * which two documents compiled to one statement may differ in).
   */
  tag(mark: string | null, key: { workspaceId: string; apiKeyId: string }, shape: string, representation: string, extensions: string): string | null {
    if (mark === null || mark === CHANGE_MARK_UNSETTLED) return null;
    const digest = hash('sha256', JSON.stringify([this.server, representation, key.workspaceId, key.apiKeyId, shape, extensions, mark]), 'base64url');
    return `W/"${digest}"`;
  }
}

/**
 * Whether an `If-None-Match` value names this tag: a comma-separated list of entity tags,
 * compared weakly (RFC 9110 §13.1.2: `W/"x"` and `"x"` are the same tag). `*` names none:
 * it asks whether any answer exists, which a query over POST does not ask.
 */
export function namesTag(ifNoneMatch: string, tag: string): boolean {
  const opaque = tag.startsWith('W/') ? tag.slice(2) : tag;
  // Opaque tags are quoted and may hold commas: read them one by one, not by splitting.
  for (const [, listed] of ifNoneMatch.matchAll(ENTITY_TAG)) if (listed === opaque) return true;
  return false;
}

const ENTITY_TAG = /(?:W\/)?("[^"]*")/g;

/**
 * What an answer with a tag varies by, besides its URL and body: the key (Authorization) and
 * the representation (Accept). Sent with the tagged answer and with its 304 (RFC 9110 §15.4.5).
 */
export const TAGGED_ANSWER_VARY = 'Authorization, Accept';

/**
 * Adds TAGGED_ANSWER_VARY to the `Vary` of a response that carries an answer's tag (a weak
 * one: the schema file's tag is strong, and varies by nothing), after what another stage set
 * there (CORS's `Origin`, which it sets rather than adds to).
 */
export function keepTaggedAnswerVary(headers: Headers): void {
  if (!headers.get('etag')?.startsWith('W/')) return;
  const vary = headers.get('vary');
  if (vary === null) headers.set('vary', TAGGED_ANSWER_VARY);
  else if (!/\bauthorization\b/i.test(vary)) headers.set('vary', `${vary}, ${TAGGED_ANSWER_VARY}`);
}
