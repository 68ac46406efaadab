import type { Viewer } from '../domain/viewer.js';

/** A key as the hub's check of keys knows it (event-hub.ts checkKeys). */
export type HeldKey = Pick<Viewer, 'workspaceId' | 'apiKeyId'>;

/**
 * What holds keys beside the streams (the WebSocket transport: its sockets' keys), checked
 * with the streams' keys by the hub, one statement for all.
 */
export interface KeyHolder {
  keys(): Iterable<HeldKey>;
  /** The keys of the last check that are revoked (some may not be this holder's). */
  revoked(keys: readonly HeldKey[]): void;
}
