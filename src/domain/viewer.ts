/** ADMIN keys may do everything in their workspace; IDENTITY keys act for one identity (access.ts). */
export type ApiKeyKind = 'admin' | 'identity';

/** Who is calling: resolved once per request from the bearer token. */
export interface Viewer {
  workspaceId: string;
  apiKeyId: string;
  kind: ApiKeyKind;
  /** Set for IDENTITY keys: the only identity the key may act for. */
  identityId: string | null;
}

/** Who made a version (or redacted it): an API key, or an agent session. */
export type Actor = { kind: 'apiKey'; apiKeyId: string } | { kind: 'session'; sessionId: string };

/** A write's author and the workspace it happens in. */
export interface Writer {
  workspaceId: string;
  actor: Actor;
}

export function writerOf(viewer: Viewer): Writer {
  return { workspaceId: viewer.workspaceId, actor: { kind: 'apiKey', apiKeyId: viewer.apiKeyId } };
}
