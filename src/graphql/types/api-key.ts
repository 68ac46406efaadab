import { ConflictError, InvalidRequestError, NotFoundError } from '../../domain/errors.js';
import { API_KEY_LIST, countApiKeys, createApiKey, listApiKeys, revokeApiKey, type ApiKeyFilter, type ApiKeySummary } from '../../domain/api-keys.js';
import { API_KEY_NAME_MAX_CHARACTERS } from '../../domain/limits.js';
import { builder } from '../builder.js';
import { mutationResult } from '../errors.js';
import { parseConnectionArguments, toConnection } from '../pagination.js';

const ApiKeyKindEnum = builder.enumType('ApiKeyKind', {
  description: 'What an API key may do.',
  values: {
    ADMIN: { value: 'admin', description: 'Everything in its workspace.' },
    IDENTITY: { value: 'identity', description: 'Only list, mount and unmount stores and create sessions for its one identity.' },
  } as const,
});

const ApiKeyRef = builder.objectRef<ApiKeySummary>('ApiKey').implement({
  description: 'An API key of the workspace. Its secret is shown once, by createApiKey, and stored only as a SHA-256 hash.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The key id: `key_` followed by 20 lowercase base36 characters (not the secret).' }),
    name: t.exposeString('name', { description: 'A label for people.' }),
    kind: t.field({ type: ApiKeyKindEnum, description: 'ADMIN or IDENTITY.', resolve: (key) => key.kind }),
    identityId: t.exposeID('identityId', { nullable: true, description: 'The identity an IDENTITY key acts for; null for ADMIN keys.' }),
    createdAt: t.field({ type: 'DateTime', description: 'When the key was created.', resolve: (key) => key.createdAt }),
    revoked: t.boolean({ description: 'Whether the key is revoked (requests with it are refused).', resolve: (key) => key.revokedAt !== null }),
    revokedAt: t.field({ type: 'DateTime', nullable: true, description: 'When it was revoked; null while it works.', resolve: (key) => key.revokedAt }),
  }),
});

builder.queryField('apiKeys', (t) =>
  t.connection(
    {
      type: ApiKeyRef,
      description: 'The workspace\'s API keys, newest first (ADMIN keys only). Never the secrets.',
      args: {
        kind: t.arg({ type: ApiKeyKindEnum, description: 'Only keys of this kind.' }),
        includeRevoked: t.arg.boolean({ defaultValue: true, required: true, description: 'Whether revoked keys are listed.' }),
      },
      resolve: async (_root, args, { db, viewer }) => {
        const window = parseConnectionArguments(API_KEY_LIST.ordering, args);
        const filter: ApiKeyFilter = { kind: args.kind ?? undefined, includeRevoked: args.includeRevoked };
        const page = await listApiKeys(db, viewer, filter, window);
        return toConnection(API_KEY_LIST.ordering, page, () => countApiKeys(db, viewer, filter));
      },
    },
    { name: 'ApiKeyConnection', description: 'A page of API keys.' },
    { name: 'ApiKeyEdge', description: 'An API key and its cursor.' },
  ),
);

const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  description: 'A new API key of the caller\'s workspace.',
  fields: (t) => ({
    name: t.string({ required: true, description: `A label: 1–${API_KEY_NAME_MAX_CHARACTERS} characters, not blank.` }),
    kind: t.field({ type: ApiKeyKindEnum, required: true, description: 'ADMIN or IDENTITY.' }),
    identityId: t.id({ description: 'Required for IDENTITY keys (`idn_` followed by 1–64 letters or digits); left out for ADMIN keys.' }),
  }),
});

const RevokeApiKeyInput = builder.inputType('RevokeApiKeyInput', {
  description: 'The key to revoke.',
  fields: (t) => ({ id: t.id({ required: true, description: 'The `key_` id of the key.' }) }),
});

const CreateApiKeySuccess = builder.objectRef<{ apiKey: ApiKeySummary; token: string }>('CreateApiKeySuccess').implement({
  description: 'The key exists; `token` is its secret, shown this once.',
  fields: (t) => ({
    apiKey: t.field({ type: ApiKeyRef, description: 'The new key.', resolve: (result) => result.apiKey }),
    token: t.exposeString('token', { description: 'The secret (`msk_` + 40 base62 characters), for `Authorization: Bearer`. It cannot be shown again.' }),
  }),
});

const RevokeApiKeySuccess = builder.objectRef<{ apiKey: ApiKeySummary }>('RevokeApiKeySuccess').implement({
  description: 'The key is revoked: its next request is refused with 401.',
  fields: (t) => ({ apiKey: t.field({ type: ApiKeyRef, description: 'The revoked key.', resolve: (result) => result.apiKey }) }),
});

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: CreateApiKeySuccess,
    description: 'Creates an ADMIN or IDENTITY key of the caller\'s workspace (ADMIN keys only).',
    args: { input: t.arg({ type: CreateApiKeyInput, required: true, description: 'The key to create.' }) },
    errors: mutationResult('createApiKey', [InvalidRequestError]),
    resolve: (_root, { input }, { db, viewer, now }) => createApiKey(db, viewer, input, now),
  }),
  revokeApiKey: t.field({
    type: RevokeApiKeySuccess,
    description: 'Revokes a key, effective on its next request (ADMIN keys only). Already revoked, or the workspace\'s last active ADMIN key: CONFLICT.',
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true, description: 'The key to revoke.' }) },
    errors: mutationResult('revokeApiKey', [NotFoundError, ConflictError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ apiKey: await revokeApiKey(db, viewer, input.id, now) }),
  }),
}));
