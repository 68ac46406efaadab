import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { isIdOfKind } from '../../domain/ids.js';
import { CONTENT_FIELD_COST, MAX_RESPONSE_BYTES } from '../../domain/limits.js';
import { isVersionCountKept, redactMemoryVersion, type MemoryVersionRecord, type MemoryVersionSummary, type VersionFilter } from '../../domain/versions.js';
import { writerOf, type Actor } from '../../domain/viewer.js';
import { builder } from '../builder.js';
import { SPENDS_OWN_BUDGET } from '../response-budget.js';
import { invalidRequest, mutationResult } from '../errors.js';
import { parseConnectionArguments, toConnection, type CursorFormat } from '../pagination.js';
import { MemoryRef, MemoryStoreRef, MemoryVersionRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// Actors

const ApiKeyActorRef = builder.objectRef<Extract<Actor, { kind: 'apiKey' }>>('ApiKeyActor').implement({
  description: 'A write made through the API with an API key.',
  isTypeOf: (actor) => (actor as Actor).kind === 'apiKey',
  fields: (t) => ({ apiKeyId: t.exposeID('apiKeyId', { description: 'The id of the API key that made it.' }) }),
});

const SessionActorRef = builder.objectRef<Extract<Actor, { kind: 'session' }>>('SessionActor').implement({
  description: 'A write made by an agent in a session.',
  isTypeOf: (actor) => (actor as Actor).kind === 'session',
  fields: (t) => ({ sessionId: t.exposeID('sessionId', { description: 'The `sesn_` id of the session.' }) }),
});

const ActorUnion = builder.unionType('Actor', {
  description: 'Who made a change: an API key or an agent session.',
  types: [ApiKeyActorRef, SessionActorRef],
});

function actorOf(apiKeyId: string | null, sessionId: string | null): Actor | null {
  if (apiKeyId !== null) return { kind: 'apiKey', apiKeyId };
  if (sessionId !== null) return { kind: 'session', sessionId };
  return null;
}

// ---------------------------------------------------------------------------------------
// The type

export const MemoryOperationEnum = builder.enumType('MemoryOperation', {
  description: 'What produced a version.',
  values: {
    CREATED: { value: 'created', description: 'createMemory (or an agent\'s first write of a path).' },
    UPDATED: { value: 'updated', description: 'updateMemory: new content, metadata or path.' },
    DELETED: { value: 'deleted', description: 'deleteMemory: the version holds the last state.' },
  } as const,
});

builder.node(MemoryVersionRef, {
  description: 'An immutable snapshot of a memory, written with every create, update and delete. Only redaction changes it; only deleting the store removes it.',
  id: { resolve: (version) => version.id, description: 'The version id: `memver_` followed by 20 lowercase base36 characters.' },
  isTypeOf: (value) => isIdOfKind((value as MemoryVersionSummary).id ?? '', 'memoryVersion'),
  fields: (t) => ({
    memoryStoreId: t.exposeID('memoryStoreId', { description: 'The store of the memory.' }),
    memoryStore: t.field({
      type: MemoryStoreRef,
      description: 'The store of the memory.',
      resolve: async (version, _args, context) => (await context.loaders.memoryStore.load(version.memoryStoreId))!,
    }),
    memoryId: t.exposeID('memoryId', { description: 'The memory this is a version of (kept after the memory is deleted).' }),
    memory: t.field({
      type: MemoryRef,
      nullable: true,
      description: 'The live memory, or null once it is deleted.',
      resolve: (version, _args, context) => context.loaders.memory.load(version.memoryId),
    }),
    path: t.exposeString('path', { description: 'The memory\'s path when this version was written.' }),
    content: t.string({
      nullable: true,
      description: `The content this version captured; null only when redacted. Loaded only when selected (it costs ${CONTENT_FIELD_COST} toward the query cost limit, and its size counts toward the ${MAX_RESPONSE_BYTES} bytes of text an answer may carry).`,
      complexity: CONTENT_FIELD_COST,
      extensions: SPENDS_OWN_BUDGET,
      resolve: async (version, _args, context) => {
        if (version.redactedAt !== null) return null;
        // Spent before loading: content past the budget is never read.
        context.budget.spend(version.contentSizeBytes);
        return version.content !== undefined ? version.content : context.loaders.versionContent.load(version.id);
      },
    }),
    contentSizeBytes: t.exposeInt('contentSizeBytes', { description: 'The size of the captured content in UTF-8 bytes (kept after redaction).' }),
    contentSha256: t.exposeString('contentSha256', { description: 'SHA-256 of the captured content (kept after redaction).' }),
    operation: t.field({ type: MemoryOperationEnum, description: 'What produced the version.', resolve: (version) => version.operation }),
    redacted: t.boolean({ description: 'Whether the content was redacted.', resolve: (version) => version.redactedAt !== null }),
    redactedAt: t.field({ type: 'DateTime', nullable: true, description: 'When it was redacted; null if it was not.', resolve: (version) => version.redactedAt }),
    redactedBy: t.field({
      type: ActorUnion,
      nullable: true,
      description: 'Who redacted it; null if it was not.',
      resolve: (version) => actorOf(version.redactedByApiKeyId, version.redactedBySessionId),
    }),
    createdAt: t.field({ type: 'DateTime', description: 'When the version was written.', resolve: (version) => version.createdAt }),
    createdBy: t.field({
      type: ActorUnion,
      description: 'Who wrote it: the API key of an API write, or the session of an agent write.',
      resolve: (version) => actorOf(version.createdByApiKeyId, version.createdBySessionId)!,
    }),
  }),
});

// ---------------------------------------------------------------------------------------
// Memory.versions, Memory.latestVersion and MemoryStore.versions

const MemoryVersionConnection = builder.connectionObject(
  { type: MemoryVersionRef, name: 'MemoryVersionConnection', description: 'A page of memory versions, newest first.' },
  { name: 'MemoryVersionEdge', description: 'A memory version and its cursor.' },
);

const memoryVersionCursor: CursorFormat<MemoryVersionSummary> = {
  tag: 'memory-versions',
  kinds: ['number'],
  keyOf: (version) => [version.sequence],
};

const storeVersionCursor: CursorFormat<MemoryVersionSummary> = {
  tag: 'store-versions',
  kinds: ['date', 'string'],
  keyOf: (version) => [version.createdAt, version.id],
};

/** The author filters both version lists take (API.md §7). */
const authorArguments = builder.args((t) => ({
  apiKeyId: t.id({ description: 'Only versions written through this API key (`key_` id).' }),
  sessionId: t.id({ description: 'Only versions written by an agent in this session (`sesn_` id).' }),
}));

function authorFilter(args: { apiKeyId?: string | null; sessionId?: string | null }): Pick<VersionFilter, 'apiKeyId' | 'sessionId'> {
  if (args.apiKeyId != null && !isIdOfKind(args.apiKeyId, 'apiKey')) throw invalidRequest(`"apiKeyId" must be a \`key_\` id (got "${args.apiKeyId}").`);
  if (args.sessionId != null && !isIdOfKind(args.sessionId, 'session')) throw invalidRequest(`"sessionId" must be a \`sesn_\` id (got "${args.sessionId}").`);
  return { apiKeyId: args.apiKeyId ?? undefined, sessionId: args.sessionId ?? undefined };
}

builder.objectFields(MemoryRef, (t) => ({
  versions: t.connection(
    {
      type: MemoryVersionRef,
      description: 'The memory\'s versions, newest first (in the order they were committed).',
      args: { operation: t.arg({ type: MemoryOperationEnum, description: 'Only versions of this operation.' }), ...authorArguments },
      resolve: async (memory, args, context) => {
        const window = parseConnectionArguments(memoryVersionCursor, args);
        const filter: VersionFilter = { operation: args.operation ?? undefined, ...authorFilter(args) };
        const page = await context.loaders.versionsOfMemory({ filter, window }).load(memory.id);
        return toConnection(memoryVersionCursor, page, async () =>
          isVersionCountKept(filter) ? memory.versionSequence : context.loaders.versionCountOfMemory(filter).load(memory.id),
        );
      },
    },
    MemoryVersionConnection,
  ),
}));

builder.objectFields(MemoryStoreRef, (t) => ({
  versions: t.connection(
    {
      type: MemoryVersionRef,
      description: 'Versions of the store\'s memories, deleted memories included, newest first (ties by id).',
      args: {
        memoryId: t.arg.id({ description: 'Only versions of this memory (live or deleted).' }),
        operation: t.arg({ type: MemoryOperationEnum, description: 'Only versions of this operation.' }),
        createdAfter: t.arg({ type: 'DateTime', description: 'Only versions written strictly after this instant.' }),
        createdBefore: t.arg({ type: 'DateTime', description: 'Only versions written strictly before this instant.' }),
        ...authorArguments,
      },
      resolve: async (store, args, context) => {
        const window = parseConnectionArguments(storeVersionCursor, args);
        if (args.memoryId != null && !isIdOfKind(args.memoryId, 'memory')) {
          throw invalidRequest(`"memoryId" must be a \`mem_\` id (got "${args.memoryId}").`);
        }
        const filter: VersionFilter = {
          memoryId: args.memoryId ?? undefined,
          operation: args.operation ?? undefined,
          createdAfter: args.createdAfter ?? undefined,
          createdBefore: args.createdBefore ?? undefined,
          ...authorFilter(args),
        };
        const page = await context.loaders.versionsOfStore({ filter, window }).load(store.id);
        return toConnection(storeVersionCursor, page, () => context.loaders.versionCountOfStore(filter).load(store.id));
      },
    },
    MemoryVersionConnection,
  ),
}));

// ---------------------------------------------------------------------------------------
// Query and mutation

builder.queryField('memoryVersion', (t) =>
  t.field({
    type: MemoryVersionRef,
    nullable: true,
    description: 'The version with this id, or null.',
    args: { id: t.arg.id({ required: true, description: 'A `memver_` id.' }) },
    resolve: (_root, { id }, context) => (isIdOfKind(id, 'memoryVersion') ? context.loaders.memoryVersion.load(id) : null),
  }),
);

const RedactMemoryVersionInput = builder.inputType('RedactMemoryVersionInput', {
  description: 'The version to redact.',
  fields: (t) => ({ id: t.id({ required: true, description: 'The `memver_` id of the version.' }) }),
});

const RedactMemoryVersionSuccess = builder.objectRef<{ memoryVersion: MemoryVersionRecord }>('RedactMemoryVersionSuccess').implement({
  description: 'The version\'s content is gone for good.',
  fields: (t) => ({
    memoryVersion: t.field({ type: MemoryVersionRef, description: 'The redacted version.', resolve: (result) => result.memoryVersion }),
  }),
});

builder.mutationField('redactMemoryVersion', (t) =>
  t.field({
    type: RedactMemoryVersionSuccess,
    description:
      'Removes a version\'s content for compliance: content becomes null, redacted true, redactedAt set; path, size, sha and operation stay, and the live memory is not touched. Allowed on archived stores; a second redaction is a CONFLICT.',
    args: { input: t.arg({ type: RedactMemoryVersionInput, required: true, description: 'The version to redact.' }) },
    errors: mutationResult('redactMemoryVersion', [NotFoundError, ConflictError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ memoryVersion: await redactMemoryVersion(db, writerOf(viewer), input.id, now) }),
  }),
);
