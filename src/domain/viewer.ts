/** Who is calling: resolved once per request from the bearer token. */
export interface Viewer {
  workspaceId: string;
  apiKeyId: string;
  kind: 'admin' | 'identity';
  /** Set for IDENTITY keys: the only identity the key may act for. */
  identityId: string | null;
}
