import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { isIdOfKind } from '../../domain/ids.js';
import { CONTENT_FIELD_COST, MAX_RESPONSE_BYTES } from '../../domain/limits.js';
import {
  isVersionCountKept,
  redactMemoryVersion,
  versionFilterOf,
  VERSIONS_OF_MEMORY,
  VERSIONS_OF_STORE,
  type MemoryVersionRecord,
  type MemoryVersionSummary,
} from '../../domain/versions.js';
import type { Actor } from '../../domain/viewer.js';
import { builder } from '../builder.js';
import { exposedValue, MEMORY_OPERATION, MEMORY_VERSION_FIELDS } from '../exposed-fields.js';
import { enumTypeOf, exposeFields } from './exposed.js';
import { SPENDS_OWN_BUDGET } from '../response-budget.js';
import { mutationResult } from '../errors.js';
import { parseConnectionArguments, toConnection } from '../pagination.js';
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

export const MemoryOperationEnum = enumTypeOf(MEMORY_OPERATION);

builder.node(MemoryVersionRef, {
  description: 'An immutable snapshot of a memory, written with every create, update and delete. Only redaction changes it; only deleting the store removes it.',
  id: { resolve: (version) => exposedValue(MEMORY_VERSION_FIELDS.id, version) as string, description: 'The version id: `memver_` followed by 20 lowercase base36 characters.' },
  isTypeOf: (value) => isIdOfKind((value as MemoryVersionSummary).id ?? '', 'memoryVersion'),
  fields: (t) => ({
    ...exposeFields(t, MEMORY_VERSION_FIELDS, { memoryStoreId: 'The store of the memory.' }),
    memoryStore: t.field({
      type: MemoryStoreRef,
      description: 'The store of the memory.',
      resolve: async (version, _args, context) => (await context.loaders.memoryStore.load(version.memoryStoreId))!,
    }),
    ...exposeFields(t, MEMORY_VERSION_FIELDS, { memoryId: 'The memory this is a version of (kept after the memory is deleted).' }),
    memory: t.field({
      type: MemoryRef,
      nullable: true,
      description: 'The live memory, or null once it is deleted.',
      resolve: (version, _args, context) => context.loaders.memory.load(version.memoryId),
    }),
    content: t.string({
      nullable: true,
      description: `The content this version captured; null only when redacted. Loaded only when selected (it costs ${CONTENT_FIELD_COST} toward the query cost limit, and its size counts toward the ${MAX_RESPONSE_BYTES} bytes of text an answer may carry).`,
      complexity: CONTENT_FIELD_COST,
      extensions: SPENDS_OWN_BUDGET,
      resolve: async (version, _args, context) => {
        // A redacted version's content is null without being read.
        if (exposedValue(MEMORY_VERSION_FIELDS.content, { redactedAt: version.redactedAt, content: '' }) === null) return null;
        // Spent before loading: content past the budget is never read.
        context.budget.spend(version.contentSizeBytes);
        const content = version.content !== undefined ? version.content : await context.loaders.versionContent.load(version.id);
        return exposedValue(MEMORY_VERSION_FIELDS.content, { redactedAt: version.redactedAt, content }) as string | null;
      },
    }),
    ...exposeFields(t, MEMORY_VERSION_FIELDS, {
      path: 'The memory\'s path when this version was written.',
      contentSizeBytes: 'The size of the captured content in UTF-8 bytes (kept after redaction).',
      contentSha256: 'SHA-256 of the captured content (kept after redaction).',
      operation: 'What produced the version.',
      number: 'Its place in its memory\'s history: 1 for the first CREATED version, then 2, 3, … in commit order. Numbers never repeat or skip within a memory (a restored memory continues its numbering).',
      redacted: 'Whether the content was redacted.',
      redactedAt: 'When it was redacted; null if it was not.',
    }),
    redactedBy: t.field({
      type: ActorUnion,
      nullable: true,
      description: 'Who redacted it; null if it was not.',
      resolve: (version) => actorOf(version.redactedByApiKeyId, version.redactedBySessionId),
    }),
    ...exposeFields(t, MEMORY_VERSION_FIELDS, { createdAt: 'When the version was written.' }),
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

/** The author filters both version lists take. */
const authorArguments = builder.args((t) => ({
  apiKeyId: t.id({ description: 'Only versions written through this API key (`key_` id).' }),
  sessionId: t.id({ description: 'Only versions written by an agent in this session (`sesn_` id).' }),
}));

builder.objectFields(MemoryRef, (t) => ({
  versions: t.connection(
    {
      type: MemoryVersionRef,
      description: 'The memory\'s versions, newest first (in the order they were committed).',
      args: { operation: t.arg({ type: MemoryOperationEnum, description: 'Only versions of this operation.' }), ...authorArguments },
      resolve: async (memory, args, context) => {
        const window = parseConnectionArguments(VERSIONS_OF_MEMORY.ordering, args);
        const filter = versionFilterOf(args);
        const page = await context.loaders.versionsOfMemory({ filter, window }).load(memory.id);
        return toConnection(VERSIONS_OF_MEMORY.ordering, page, async () =>
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
        const window = parseConnectionArguments(VERSIONS_OF_STORE.ordering, args);
        const filter = versionFilterOf(args);
        const page = await context.loaders.versionsOfStore({ filter, window }).load(store.id);
        return toConnection(VERSIONS_OF_STORE.ordering, page, () => context.loaders.versionCountOfStore(filter).load(store.id));
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
    resolve: (_root, { id }, context) => context.loaders.memoryVersion.load(id),
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
    resolve: async (_root, { input }, { db, viewer, now }) => ({ memoryVersion: await redactMemoryVersion(db, viewer, input.id, now) }),
  }),
);
