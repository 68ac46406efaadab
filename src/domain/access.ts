import { PermissionError } from './errors.js';
import type { ApiKeyKind, Viewer } from './viewer.js';

/**
 * Who may do what, in one place. Every transport (GraphQL fields, compiled reads, REST
 * routes, subscriptions) names the action a request takes and asks `can`; domain entry
 * points that change data ask too (`assertCan`). ADMIN keys may take every action in their
 * workspace. IDENTITY keys may only list, mount and unmount stores and create sessions for
 * their own identity.
 */
export type Action =
  /** Read stores: lists, by id, a mount's or a session's store. */
  | { type: 'memoryStores.read' }
  /** Create, change, archive and delete stores. */
  | { type: 'memoryStores.write' }
  /** Read memories (their content included) and the merged files of a session. */
  | { type: 'memories.read' }
  /** Create, change and delete memories. */
  | { type: 'memories.write' }
  /** Read versions and their content. */
  | { type: 'memoryVersions.read' }
  /** Redact a version's content. */
  | { type: 'memoryVersions.redact' }
  /** Look any object up by its id (node, nodes). */
  | { type: 'nodes.read' }
  /** Read a session by id. */
  | { type: 'sessions.read' }
  /** Start a session of a pair of this identity. */
  | { type: 'sessions.create'; identityId: string }
  /** An agent's writes through its session. */
  | { type: 'sessions.writeMemory' }
  /** List the mounts of a pair of this identity. */
  | { type: 'mounts.read'; identityId: string }
  /** Mount a store on, or unmount it from, a pair of this identity. */
  | { type: 'mounts.write'; identityId: string }
  /** List, create and revoke API keys. */
  | { type: 'apiKeys.manage' }
  /** Follow the live stream of the workspace's changes (Subscription.memoryEvents). */
  | { type: 'memoryEvents.subscribe' };

export type ActionType = Action['type'];

/** Actions whose answer does not depend on which identity a key acts for. */
export type WorkspaceAction = Exclude<Action, { identityId: string }>;

/** The actions an IDENTITY key may take, for its own identity only. */
const IDENTITY_ACTIONS: ReadonlySet<ActionType> = new Set(['sessions.create', 'mounts.read', 'mounts.write']);

const IDENTITY_SCOPE = 'it may only list, mount and unmount stores and create sessions for its own identity';

/** Why the viewer may not take the action, or null when it may. */
export function refusal(viewer: Pick<Viewer, 'kind' | 'identityId'>, action: Action): string | null {
  if (viewer.kind === 'admin') return null;
  if (!IDENTITY_ACTIONS.has(action.type)) return `This is an IDENTITY key: ${IDENTITY_SCOPE}.`;
  if ('identityId' in action && action.identityId !== viewer.identityId) return `This IDENTITY key acts for ${viewer.identityId} only.`;
  return null;
}

export function can(viewer: Pick<Viewer, 'kind' | 'identityId'>, action: Action): boolean {
  return refusal(viewer, action) === null;
}

/** Throws PermissionError (FORBIDDEN) unless the viewer may take the action. */
export function assertCan(viewer: Pick<Viewer, 'kind' | 'identityId'>, action: Action): void {
  const reason = refusal(viewer, action);
  if (reason !== null) throw new PermissionError(reason);
}

export const API_KEY_KINDS: readonly ApiKeyKind[] = ['admin', 'identity'];

/**
 * The kinds of key that may take all of these actions, whichever identity they act for:
 * for a transport that learns the key's kind only when it runs (a compiled read
 * authenticates in its own statement).
 */
export function kindsAllowedToTakeAll(actions: readonly WorkspaceAction[]): ApiKeyKind[] {
  return API_KEY_KINDS.filter((kind) => actions.every((action) => can({ kind, identityId: null }, action)));
}
