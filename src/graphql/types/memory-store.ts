import {
  archiveMemoryStore,
  countMemoryStores,
  createMemoryStore,
  deleteMemoryStore,
  listMemoryStores,
  MEMORY_STORE_LIST,
  updateMemoryStore,
  type MemoryStoreFilter,
  type MemoryStoreRecord,
} from '../../domain/stores.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../domain/errors.js';
import { isIdOfKind } from '../../domain/ids.js';
import {
  DEFAULT_PAGE_SIZE,
  IDEMPOTENCY_KEY_MAX_CHARACTERS,
  MAX_PAGE_SIZE,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  STORE_DESCRIPTION_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from '../../domain/limits.js';
import { builder } from '../builder.js';
import { exposedValue, MEMORY_STORE_FIELDS, MEMORY_STORE_STATUS } from '../exposed-fields.js';
import { enumTypeOf, exposeFields } from './exposed.js';
import { mutationResult } from '../errors.js';
import { parseConnectionArguments, toConnection } from '../pagination.js';
import { MemoryStoreRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// The type

export const MemoryStoreStatusEnum = enumTypeOf(MEMORY_STORE_STATUS);

const BindingInfoRef = builder.objectRef<MemoryStoreRecord>('MemoryStoreBindingInfo').implement({
  description: 'How the store is bound to (identity, template) pairs.',
  fields: (t) => ({
    identityTemplateCount: t.int({
      description:
        'How many (identity, template) pairs mount the store now, its default slot included. Archive and delete refuse while any explicit (non-default) mount remains.',
      resolve: (store, _args, context) => context.loaders.mountingPairCount.load(store.id),
    }),
  }),
});


builder.node(MemoryStoreRef, {
  description: 'A container of memories (files of an agent). It holds no content itself and can be mounted onto (identity, template) pairs.',
  id: { resolve: (store) => exposedValue(MEMORY_STORE_FIELDS.id, store) as string, description: 'The store id: `memstore_` followed by 20 lowercase base36 characters.' },
  isTypeOf: (value) => isIdOfKind((value as MemoryStoreRecord).id ?? '', 'memoryStore'),
  fields: (t) => ({
    ...exposeFields(t, MEMORY_STORE_FIELDS, {
      name: `Display name: 1–${STORE_NAME_MAX_CHARACTERS} characters, not blank.`,
      description: `Free text of at most ${STORE_DESCRIPTION_MAX_CHARACTERS} characters; "" when none was given.`,
      status: 'ACTIVE or ARCHIVED.',
      entryCount: 'How many memories the store holds now.',
      totalSize: 'The sum of the content sizes of its memories, in UTF-8 bytes.',
      metadata: `String key/value pairs. Always holds the server's "created_by": "forward" besides at most ${STORE_METADATA_MAX_KEYS} caller keys.`,
      systemManaged: 'True for the default store the server created for an (identity, template) pair when its first session started.',
      identityId: 'The identity owning a system-managed default store; null for stores created through the API.',
      createdAt: 'When the store was created.',
      updatedAt: 'When its name, description, metadata or status last changed.',
      archivedAt: 'When the store was archived; null while it is active.',
    }),
    bindingInfo: t.field({ type: BindingInfoRef, description: 'Its bindings to (identity, template) pairs.', resolve: (store) => store }),
  }),
});

// ---------------------------------------------------------------------------------------
// Queries

builder.queryFields((t) => ({
  memoryStore: t.field({
    type: MemoryStoreRef,
    nullable: true,
    description: 'The store with this id, or null when there is none in the caller\'s workspace.',
    args: { id: t.arg.id({ required: true, description: 'A `memstore_` id.' }) },
    resolve: (_root, { id }, context) => context.loaders.memoryStore.load(id),
  }),
  memoryStores: t.connection(
    {
      type: MemoryStoreRef,
      description: `The workspace's memory stores, newest first (ties by id). \`first\`/\`last\` take 0–${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}).`,
      args: {
        systemManaged: t.arg.boolean({ description: 'Only default stores (true) or only stores created through the API (false).' }),
        status: t.arg({ type: MemoryStoreStatusEnum, description: 'Only stores in this state.' }),
        namePrefix: t.arg.string({ description: 'Only stores whose name starts with this text, ignoring case (a plain prefix, no wildcards).' }),
        createdAfter: t.arg({ type: 'DateTime', description: 'Only stores created strictly after this instant.' }),
        createdBefore: t.arg({ type: 'DateTime', description: 'Only stores created strictly before this instant.' }),
      },
      resolve: async (_root, args, context) => {
        const window = parseConnectionArguments(MEMORY_STORE_LIST.ordering, args);
        const filter: MemoryStoreFilter = {
          systemManaged: args.systemManaged ?? undefined,
          status: args.status ?? undefined,
          namePrefix: args.namePrefix ?? undefined,
          createdAfter: args.createdAfter ?? undefined,
          createdBefore: args.createdBefore ?? undefined,
        };
        const { db, viewer } = context;
        const page = await listMemoryStores(db, viewer, filter, window);
        for (const store of page.rows) context.loaders.memoryStore.prime(store.id, store);
        return toConnection(MEMORY_STORE_LIST.ordering, page, () => countMemoryStores(db, viewer, filter));
      },
    },
    { name: 'MemoryStoreConnection', description: 'A page of memory stores.' },
    { name: 'MemoryStoreEdge', description: 'A memory store and its cursor.' },
  ),
}));

// ---------------------------------------------------------------------------------------
// Mutations

const metadataRules = `keys of 1–${METADATA_KEY_MAX_CHARACTERS} characters, string values of at most ${METADATA_VALUE_MAX_CHARACTERS} characters, no control characters other than \\n \\r \\t`;

const CreateMemoryStoreInput = builder.inputType('CreateMemoryStoreInput', {
  description: 'A new memory store.',
  fields: (t) => ({
    name: t.string({ required: true, description: `1–${STORE_NAME_MAX_CHARACTERS} characters, not blank, no control characters other than \\n \\r \\t.` }),
    description: t.string({ description: `At most ${STORE_DESCRIPTION_MAX_CHARACTERS} characters, no control characters other than \\n \\r \\t. Omitted or null: "".` }),
    metadata: t.field({
      type: 'JSONObject',
      description: `At most ${STORE_METADATA_MAX_KEYS} keys (${metadataRules}). "created_by" is reserved: the server sets it to "forward".`,
    }),
    idempotencyKey: t.string({
      description: `1–${IDEMPOTENCY_KEY_MAX_CHARACTERS} characters. Repeating a request with the same key and the same input within 24 hours returns the store the first request created instead of a new one; the same key with a different input is a CONFLICT.`,
    }),
  }),
});

const UpdateMemoryStoreInput = builder.inputType('UpdateMemoryStoreInput', {
  description: 'Changes to a memory store: give at least one of name, description, metadata. A field left out keeps its value; null is refused.',
  fields: (t) => ({
    id: t.id({ required: true, description: 'The store to change.' }),
    name: t.string({ description: `1–${STORE_NAME_MAX_CHARACTERS} characters, not blank.` }),
    description: t.string({ description: `At most ${STORE_DESCRIPTION_MAX_CHARACTERS} characters ("" clears it).` }),
    metadata: t.field({
      type: 'JSONObject',
      description: `Replaces the whole map (at most ${STORE_METADATA_MAX_KEYS} keys; ${metadataRules}); "created_by": "forward" is kept by the server and may not be given.`,
    }),
  }),
});

const MemoryStoreIdInput = (name: string, description: string) =>
  builder.inputType(name, {
    description,
    fields: (t) => ({ id: t.id({ required: true, description: 'The store\'s `memstore_` id.' }) }),
  });

const ArchiveMemoryStoreInput = MemoryStoreIdInput('ArchiveMemoryStoreInput', 'The store to archive.');
const DeleteMemoryStoreInput = MemoryStoreIdInput('DeleteMemoryStoreInput', 'The store to delete.');

const storeSuccess = (name: string, description: string) =>
  builder.objectRef<{ memoryStore: MemoryStoreRecord }>(name).implement({
    description,
    fields: (t) => ({ memoryStore: t.field({ type: MemoryStoreRef, description: 'The store as it is now.', resolve: (result) => result.memoryStore }) }),
  });

const CreateMemoryStoreSuccess = storeSuccess('CreateMemoryStoreSuccess', 'The store was created (or, for a repeated idempotencyKey, found).');
const UpdateMemoryStoreSuccess = storeSuccess('UpdateMemoryStoreSuccess', 'The store was changed.');
const ArchiveMemoryStoreSuccess = storeSuccess('ArchiveMemoryStoreSuccess', 'The store is archived.');

const DeleteMemoryStoreSuccess = builder.objectRef<{ deletedMemoryStoreId: string }>('DeleteMemoryStoreSuccess').implement({
  description: 'The store, its memories and all their versions are gone.',
  fields: (t) => ({ deletedMemoryStoreId: t.exposeID('deletedMemoryStoreId', { description: 'The id the store had.' }) }),
});

builder.mutationFields((t) => ({
  createMemoryStore: t.field({
    type: CreateMemoryStoreSuccess,
    description: 'Creates a memory store (ACTIVE, empty, "created_by": "forward" added to its metadata).',
    args: { input: t.arg({ type: CreateMemoryStoreInput, required: true, description: 'The store to create.' }) },
    errors: mutationResult('createMemoryStore', [InvalidRequestError, ConflictError, NotFoundError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ memoryStore: await createMemoryStore(db, viewer, input, now) }),
  }),
  updateMemoryStore: t.field({
    type: UpdateMemoryStoreSuccess,
    description: 'Changes the name, description or metadata of an active store. Archived stores → ConflictError.',
    args: { input: t.arg({ type: UpdateMemoryStoreInput, required: true, description: 'The store and its changes.' }) },
    errors: mutationResult('updateMemoryStore', [InvalidRequestError, NotFoundError, ConflictError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ memoryStore: await updateMemoryStore(db, viewer, input, now) }),
  }),
  archiveMemoryStore: t.field({
    type: ArchiveMemoryStoreSuccess,
    description:
      'Archives a store for good (there is no unarchive). ConflictError when it is already archived or still explicitly mounted. Archiving a default store releases its pair\'s default slot: the pair\'s next session gets a new, empty default store.',
    args: { input: t.arg({ type: ArchiveMemoryStoreInput, required: true, description: 'The store to archive.' }) },
    errors: mutationResult('archiveMemoryStore', [NotFoundError, ConflictError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ memoryStore: await archiveMemoryStore(db, viewer, input.id, now) }),
  }),
  deleteMemoryStore: t.field({
    type: DeleteMemoryStoreSuccess,
    description: 'Deletes an active store with its memories and versions. ConflictError when it is archived or still explicitly mounted.',
    args: { input: t.arg({ type: DeleteMemoryStoreInput, required: true, description: 'The store to delete.' }) },
    errors: mutationResult('deleteMemoryStore', [NotFoundError, ConflictError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ deletedMemoryStoreId: await deleteMemoryStore(db, viewer, input.id, now) }),
  }),
}));
