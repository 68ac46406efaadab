import { ConflictError, InvalidRequestError, NotFoundError, PreconditionFailedError } from '../../domain/errors.js';
import type { Context } from '../../context.js';
import { isIdOfKind } from '../../domain/ids.js';
import {
  CONTENT_FIELD_COST,
  CONTENT_MAX_BYTES,
  MAX_RESPONSE_BYTES,
  MEMORY_METADATA_MAX_KEYS,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  PATH_MAX_BYTES,
  PATH_MAX_SEGMENTS,
  PATH_SEGMENT_MAX_BYTES,
} from '../../domain/limits.js';
import { isMemoryCountKept } from '../../domain/memories/reads.js';
import { MEMORY_LISTS, type MemoryRecord, type MemorySummary, type WrittenMemory } from '../../domain/memories/records.js';
import { createMemory, deleteMemory, updateMemory } from '../../domain/memories/writes.js';
import type { MemoryVersionRecord } from '../../domain/versions.js';
import { builder } from '../builder.js';
import { exposedValue, MEMORY_FIELDS } from '../exposed-fields.js';
import { exposeFields } from './exposed.js';
import { SPENDS_OWN_BUDGET } from '../response-budget.js';
import { mutationResult } from '../errors.js';
import { answerPriming } from '../resolver-guards.js';
import { memoryPathKey } from '../loaders.js';
import { parseConnectionArguments, toConnection } from '../pagination.js';
import { MemoryRef, MemoryStoreRef, MemoryVersionRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// The type

const pathRules = `a relative path of at most ${PATH_MAX_BYTES} UTF-8 bytes and ${PATH_MAX_SEGMENTS} segments of at most ${PATH_SEGMENT_MAX_BYTES} bytes; no empty, "." or ".." segments, no segments with leading or trailing whitespace, no "\\\\", NUL or other control characters, no invisible formatting characters (bidirectional controls, zero-width characters, soft hyphen, byte order mark: Unicode category Cf) and no line or paragraph separators; case-sensitive`;
const contentRules = `UTF-8 text of at most ${CONTENT_MAX_BYTES} bytes (100 KiB), no control characters other than \\n \\r \\t`;
const metadataRules = `at most ${MEMORY_METADATA_MAX_KEYS} keys of 1–${METADATA_KEY_MAX_CHARACTERS} characters with string values of at most ${METADATA_VALUE_MAX_CHARACTERS} characters; "created_by" is an ordinary key here`;

builder.node(MemoryRef, {
  description: 'A file of agent memory: a path in a store and its UTF-8 text. Every create, update and delete leaves a MemoryVersion.',
  id: { resolve: (memory) => exposedValue(MEMORY_FIELDS.id, memory) as string, description: 'The memory id: `mem_` followed by 20 lowercase base36 characters. Renames keep it.' },
  isTypeOf: (value) => isIdOfKind((value as MemorySummary).id ?? '', 'memory'),
  fields: (t) => ({
    ...exposeFields(t, MEMORY_FIELDS, { memoryStoreId: 'The store holding the memory.' }),
    memoryStore: t.field({
      type: MemoryStoreRef,
      description: 'The store holding the memory.',
      resolve: async (memory, _args, context) => (await context.loaders.memoryStore.load(memory.memoryStoreId))!,
    }),
    content: t.string({
      description: `The text. It is loaded only when selected; selecting it in long lists is what makes them expensive (it costs ${CONTENT_FIELD_COST} toward the query cost limit, and its size counts toward the ${MAX_RESPONSE_BYTES} bytes of text an answer may carry: past them, RESPONSE_TOO_LARGE).`,
      complexity: CONTENT_FIELD_COST,
      extensions: SPENDS_OWN_BUDGET,
      resolve: async (memory, _args, context) => {
        // Spent before loading: content past the budget is never read.
        context.budget.spend(memory.contentSizeBytes);
        const content = memory.content ?? (await context.loaders.memoryContent.load(memory.id)) ?? '';
        return exposedValue(MEMORY_FIELDS.content, { content }) as string;
      },
    }),
    ...exposeFields(t, MEMORY_FIELDS, {
      path: `Where the memory lives in its store: ${pathRules}.`,
      contentSizeBytes: 'The size of the content in UTF-8 bytes.',
      contentSha256: 'Lower-case hex SHA-256 of the content\'s UTF-8 bytes; pass it as expectedContentSha256 for optimistic concurrency.',
      metadata: 'String key/value pairs, replaced as a whole by updates.',
      createdAt: 'When the memory was first created (its first CREATED version; a memory brought back by restoreMemoryVersion keeps it).',
      updatedAt: 'When its newest version was written.',
    }),
    latestVersion: t.field({
      type: MemoryVersionRef,
      description: 'The newest version: the one holding the memory\'s current state. In the answer of createMemory or updateMemory, the version that write made (as the other fields are as that write left them).',
      resolve: async (memory, _args, context) => (await context.loaders.latestVersion.load(memory.id))!,
    }),
  }),
});

// ---------------------------------------------------------------------------------------
// MemoryStore.memories and MemoryStore.memory

const MemoryOrderEnum = builder.enumType('MemoryOrder', {
  description: 'The order of MemoryStore.memories.',
  values: {
    PATH_ASC: { description: 'By path in byte (code-point) order, not locale order: "B" before "a", "a/b" before "a_b".' },
    PATH_DESC: { description: 'By path, reversed byte order.' },
    UPDATED_AT_DESC: { description: 'Most recently changed first (ties by id).' },
    CREATED_AT_DESC: { description: 'Most recently created first (ties by id).' },
  } as const,
});

builder.objectFields(MemoryStoreRef, (t) => ({
  memories: t.connection(
    {
      type: MemoryRef,
      description: 'The store\'s live memories, by path unless `orderBy` says otherwise.',
      args: {
        pathPrefix: t.arg.string({ description: 'Only memories whose path starts with this string (a plain prefix: "a/b" matches "a/bc.md").' }),
        orderBy: t.arg({ type: MemoryOrderEnum, defaultValue: 'PATH_ASC', required: true, description: 'The order of the list.' }),
      },
      resolve: async (store, args, context) => {
        const { ordering } = MEMORY_LISTS[args.orderBy];
        const window = parseConnectionArguments(ordering, args);
        const filter = { pathPrefix: args.pathPrefix ?? undefined };
        const page = await context.loaders.memoriesOfStore({ order: args.orderBy, filter, window }).load(store.id);
        return toConnection(ordering, page, async () => (isMemoryCountKept(filter) ? store.entryCount : context.loaders.memoryCountOfStore(filter).load(store.id)));
      },
    },
    { name: 'MemoryConnection', description: 'A page of memories.' },
    { name: 'MemoryEdge', description: 'A memory and its cursor.' },
  ),
  memory: t.field({
    type: MemoryRef,
    nullable: true,
    description: 'The live memory at exactly this path (case-sensitive), or null.',
    args: { path: t.arg.string({ required: true, description: 'The memory\'s path.' }) },
    resolve: (store, { path }, context) => context.loaders.memoryByPath.load(memoryPathKey(store.id, path)),
  }),
}));

// ---------------------------------------------------------------------------------------
// Query

builder.queryField('memory', (t) =>
  t.field({
    type: MemoryRef,
    nullable: true,
    description: 'The live memory with this id, or null (also once it is deleted).',
    args: { id: t.arg.id({ required: true, description: 'A `mem_` id.' }) },
    resolve: (_root, { id }, context) => context.loaders.memory.load(id),
  }),
);

// ---------------------------------------------------------------------------------------
// Mutations

const CreateMemoryInput = builder.inputType('CreateMemoryInput', {
  description: 'A new memory.',
  fields: (t) => ({
    memoryStoreId: t.id({ required: true, description: 'The active store to create it in.' }),
    path: t.string({ required: true, description: `Its path: ${pathRules}. No live memory of the store may have it.` }),
    content: t.string({ required: true, description: `Its text: ${contentRules}.` }),
    metadata: t.field({ type: 'JSONObject', description: `String key/value pairs: ${metadataRules}. Omitted or null: {}.` }),
  }),
});

const UpdateMemoryInput = builder.inputType('UpdateMemoryInput', {
  description:
    'Changes to a memory: give at least one of content, metadata, path. A field left out keeps its value; null is refused. An update that changes nothing succeeds without writing a version.',
  fields: (t) => ({
    id: t.id({ required: true, description: 'The memory to change.' }),
    content: t.string({ description: `The new text: ${contentRules}.` }),
    metadata: t.field({ type: 'JSONObject', description: `Replaces the whole map: ${metadataRules}.` }),
    path: t.string({ description: `Renames the memory (it keeps its id): ${pathRules}. A path taken by another live memory is a CONFLICT.` }),
    expectedContentSha256: t.string({
      description:
        'Apply only if the stored content still has this SHA-256 (64 hex digits); otherwise PreconditionFailedError — unless the memory already is exactly as requested, which succeeds without a new version.',
    }),
  }),
});

const DeleteMemoryInput = builder.inputType('DeleteMemoryInput', {
  description: 'The memory to delete.',
  fields: (t) => ({
    id: t.id({ required: true, description: 'The memory to delete.' }),
    expectedContentSha256: t.string({ description: 'Delete only if the stored content still has this SHA-256; otherwise PreconditionFailedError.' }),
  }),
});

/**
 * A write's answer: the memory as the write left it, whose latestVersion is the version the
 * write made. That version is handed to the loaders the answer reads with, made after the
 * write (freshLoadsPerMutation), as it was written: the answer reads no statement for it,
 * and names this write's version even if another write has made a newer one since (as the
 * memory's other fields are this write's).
 */
function answerOfWrite({ memory, version }: WrittenMemory): { memory: MemoryRecord } {
  return answerPriming({ memory }, (loaders) => {
    if (version) loaders.latestVersion.prime(memory.id, version);
  });
}

const memorySuccess = (name: string, description: string) =>
  builder.objectRef<{ memory: MemoryRecord }>(name).implement({
    description,
    fields: (t) => ({ memory: t.field({ type: MemoryRef, description: 'The memory as it is now.', resolve: (result) => result.memory }) }),
  });

const CreateMemorySuccess = memorySuccess('CreateMemorySuccess', 'The memory was created with a CREATED version.');
const UpdateMemorySuccess = memorySuccess('UpdateMemorySuccess', 'The memory is as requested (with an UPDATED version if anything changed).');

const DeleteMemorySuccess = builder.objectRef<{ deletedMemoryId: string; version: MemoryVersionRecord }>('DeleteMemorySuccess').implement({
  description: 'The memory is gone; its path is free again. Its history stays.',
  fields: (t) => ({
    deletedMemoryId: t.exposeID('deletedMemoryId', { description: 'The id the memory had (a re-created memory gets a new one).' }),
    version: t.field({
      type: MemoryVersionRef,
      description: 'The DELETED version, holding the memory\'s last path, content, size and sha.',
      resolve: (result) => result.version,
    }),
  }),
});


builder.mutationFields((t) => ({
  createMemory: t.field({
    type: CreateMemorySuccess,
    description: 'Creates a memory and its CREATED version, and adds it to the store\'s entryCount and totalSize, in one transaction. A taken path or an archived store is a CONFLICT.',
    args: { input: t.arg({ type: CreateMemoryInput, required: true, description: 'The memory to create.' }) },
    errors: mutationResult('createMemory', [InvalidRequestError, NotFoundError, ConflictError]),
    resolve: async (_root, { input }, context) => answerOfWrite(await createMemory(context.db, context.viewer, input, context.now, context.memoryWrites)),
  }),
  updateMemory: t.field({
    type: UpdateMemorySuccess,
    description: 'Changes a memory\'s content, metadata or path, writing an UPDATED version with the new state. An archived store is a CONFLICT.',
    args: { input: t.arg({ type: UpdateMemoryInput, required: true, description: 'The memory and its changes.' }) },
    errors: mutationResult('updateMemory', [InvalidRequestError, NotFoundError, ConflictError, PreconditionFailedError]),
    resolve: async (_root, { input }, context) => answerOfWrite(await updateMemory(context.db, context.viewer, input, context.now, context.memoryWrites)),
  }),
  deleteMemory: t.field({
    type: DeleteMemorySuccess,
    description: 'Deletes a memory, writing a DELETED version with its last state. An archived store is a CONFLICT.',
    args: { input: t.arg({ type: DeleteMemoryInput, required: true, description: 'The memory to delete.' }) },
    errors: mutationResult('deleteMemory', [InvalidRequestError, NotFoundError, ConflictError, PreconditionFailedError]),
    resolve: (_root, { input }, { db, viewer, now }) => deleteMemory(db, viewer, input, now),
  }),
}));
