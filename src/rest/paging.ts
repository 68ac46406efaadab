import { DEFAULT_PAGE_SIZE } from '../domain/limits.js';
import type { KeyValue, Page, PageWindow } from '../domain/pagination.js';
import { RestRequestError, validationFailed } from './errors.js';

/**
 * Id-keyed pages over the same keyset lists as GraphQL's connections: `after_id` and
 * `before_id` name an item of the list, whose position (its sort-key values) `positionOf`
 * finds — also for an item since deleted, where the list can still tell where it was.
 */
export interface PageArguments {
  limit?: number;
  after_id?: string;
  before_id?: string;
}

export async function pageWindow(args: PageArguments, positionOf: (id: string) => Promise<KeyValue[] | null>): Promise<PageWindow> {
  if (args.after_id !== undefined && args.before_id !== undefined) {
    throw new RestRequestError(400, 'invalid_request_error', 'validation_failed', 'Give after_id or before_id, not both.', [
      { field: ['before_id'], message: 'must not be given with after_id' },
    ]);
  }
  const size = args.limit ?? DEFAULT_PAGE_SIZE;
  const cursor = args.after_id ?? args.before_id;
  if (cursor === undefined) return { size, backward: false, after: null, before: null };
  const field = args.after_id !== undefined ? 'after_id' : 'before_id';
  const position = await positionOf(cursor);
  if (position === null) throw validationFailed([{ field: [field], message: `"${cursor}" is not an item of this list` }]);
  return args.after_id !== undefined ? { size, backward: false, after: position, before: null } : { size, backward: true, after: null, before: position };
}

/** `has_more`: more items after the page going forward, before it going backward. */
export function hasMore(window: PageWindow, page: Page<unknown>): boolean {
  return window.backward ? page.hasPreviousPage : page.hasNextPage;
}
