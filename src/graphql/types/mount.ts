import { ConflictError, InvalidRequestError, NotFoundError } from '../../domain/errors.js';
import { MAX_EXPLICIT_MOUNTS_PER_PAIR } from '../../domain/limits.js';
import { countMountsOfPair, MOUNTS_OF_PAIR, MOUNTS_OF_STORE, listMountsOfPair, mountMemoryStore, unmountMemoryStore, type MountRecord } from '../../domain/mounts.js';
import { builder } from '../builder.js';
import { mutationResult } from '../errors.js';
import { parseConnectionArguments, toConnection } from '../pagination.js';
import { MemoryStoreMountRef, MemoryStoreRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// The type

export const MountAccessEnum = builder.enumType('MountAccess', {
  description: 'What an agent may do with a mounted store in its sessions.',
  values: {
    READ_WRITE: { value: 'read_write', description: 'Read and write: only the pair\'s system-managed default store.' },
    READ_ONLY: { value: 'read_only', description: 'Read only: every explicitly mounted store.' },
  } as const,
});

MemoryStoreMountRef.implement({
  description: 'A store mounted on an (identity, template) pair: its memories appear in the pair\'s sessions.',
  fields: (t) => ({
    memoryStoreId: t.exposeID('memoryStoreId', { description: 'The mounted store.' }),
    memoryStore: t.field({
      type: MemoryStoreRef,
      nullable: true,
      description: 'The mounted store, or null if it cannot be read.',
      resolve: (mount, _args, context) => context.loaders.memoryStore.load(mount.memoryStoreId),
    }),
    identityId: t.exposeID('identityId', { description: 'The identity of the pair.' }),
    templateId: t.exposeID('templateId', { description: 'The template of the pair.' }),
    access: t.field({ type: MountAccessEnum, description: 'READ_WRITE for the default slot, READ_ONLY otherwise.', resolve: (mount) => mount.access }),
    systemManaged: t.exposeBoolean('systemManaged', { description: 'True for the pair\'s default slot (its system-managed store).' }),
    name: t.string({
      description: 'The store\'s name, read from the store (best effort: "" if it cannot be read).',
      resolve: async (mount, _args, context) => (await context.loaders.memoryStore.load(mount.memoryStoreId))?.name ?? '',
    }),
    status: t.string({
      description: 'The store\'s status in lower case, "active" or "archived", as the Forward REST API writes it (best effort: "" if it cannot be read).',
      resolve: async (mount, _args, context) => (await context.loaders.memoryStore.load(mount.memoryStoreId))?.status ?? '',
    }),
    entryCount: t.int({
      description: 'The store\'s entryCount (best effort: 0 if it cannot be read).',
      resolve: async (mount, _args, context) => (await context.loaders.memoryStore.load(mount.memoryStoreId))?.entryCount ?? 0,
    }),
    createdAt: t.field({ type: 'DateTime', description: 'When the store was mounted (the first time, for repeated mounts).', resolve: (mount) => mount.createdAt }),
  }),
});

export const MemoryStoreMountConnection = builder.connectionObject(
  { type: MemoryStoreMountRef, name: 'MemoryStoreMountConnection', description: 'A page of mounts.' },
  { name: 'MemoryStoreMountEdge', description: 'A mount and its cursor.' },
);

// ---------------------------------------------------------------------------------------
// Lists

builder.queryField('memoryStoreMounts', (t) =>
  t.connection(
    {
      type: MemoryStoreMountRef,
      description: 'The stores mounted on an (identity, template) pair: its default slot first, then the explicit mounts in ascending mount time.',
      args: {
        identityId: t.arg.id({ required: true, description: 'An `idn_` id.' }),
        templateId: t.arg.id({ required: true, description: 'A `tmpl_` id.' }),
      },
      resolve: async (_root, args, context) => {
        const pair = { identityId: args.identityId, templateId: args.templateId };
        const window = parseConnectionArguments(MOUNTS_OF_PAIR.ordering, args);
        const { db, viewer } = context;
        const page = await listMountsOfPair(db, viewer, pair, window);
        return toConnection(MOUNTS_OF_PAIR.ordering, page, () => countMountsOfPair(db, viewer, pair));
      },
    },
    MemoryStoreMountConnection,
  ),
);

builder.objectFields(MemoryStoreRef, (t) => ({
  mounts: t.connection(
    {
      type: MemoryStoreMountRef,
      description: 'The (identity, template) pairs mounting this store, in ascending mount time.',
      resolve: async (store, args, context) => {
        const window = parseConnectionArguments(MOUNTS_OF_STORE.ordering, args);
        const page = await context.loaders.mountsOfStore(window).load(store.id);
        return toConnection(MOUNTS_OF_STORE.ordering, page, () => context.loaders.mountingPairCount.load(store.id));
      },
    },
    MemoryStoreMountConnection,
  ),
}));

// ---------------------------------------------------------------------------------------
// Mutations

const mountInput = (name: string, description: string) =>
  builder.inputType(name, {
    description,
    fields: (t) => ({
      memoryStoreId: t.id({ required: true, description: 'The store.' }),
      identityId: t.id({ required: true, description: 'The identity of the pair: `idn_` followed by 1–64 letters or digits.' }),
      templateId: t.id({ required: true, description: 'The template of the pair: `tmpl_` followed by 1–64 letters or digits.' }),
    }),
  });

const MountMemoryStoreInput = mountInput('MountMemoryStoreInput', 'The store to mount and the pair to mount it on.');
const UnmountMemoryStoreInput = mountInput('UnmountMemoryStoreInput', 'The store to unmount and the pair it is mounted on.');

const MountMemoryStoreSuccess = builder.objectRef<{ mount: MountRecord }>('MountMemoryStoreSuccess').implement({
  description: 'The store is mounted on the pair.',
  fields: (t) => ({ mount: t.field({ type: MemoryStoreMountRef, description: 'The mount (the existing one if the store was mounted already).', resolve: (result) => result.mount }) }),
});

const UnmountMemoryStoreSuccess = builder.objectRef<{ unmountedMemoryStoreId: string }>('UnmountMemoryStoreSuccess').implement({
  description: 'The store is no longer mounted on the pair (sessions started before keep their snapshot).',
  fields: (t) => ({ unmountedMemoryStoreId: t.exposeID('unmountedMemoryStoreId', { description: 'The store that was unmounted.' }) }),
});

builder.mutationFields((t) => ({
  mountMemoryStore: t.field({
    type: MountMemoryStoreSuccess,
    description: `Mounts an active store on an (identity, template) pair, READ_ONLY. Idempotent: mounting again returns the first mount; mounting the pair's own default store returns its default slot. An archived store, or a pair that already has ${MAX_EXPLICIT_MOUNTS_PER_PAIR} explicit mounts, is a CONFLICT.`,
    args: { input: t.arg({ type: MountMemoryStoreInput, required: true, description: 'The store and the pair.' }) },
    errors: mutationResult('mountMemoryStore', [InvalidRequestError, NotFoundError, ConflictError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ mount: await mountMemoryStore(db, viewer, input, now) }),
  }),
  unmountMemoryStore: t.field({
    type: UnmountMemoryStoreSuccess,
    description: 'Unmounts an explicitly mounted store from a pair. Not mounted there: NOT_FOUND; the pair\'s default slot: CONFLICT.',
    args: { input: t.arg({ type: UnmountMemoryStoreInput, required: true, description: 'The store and the pair.' }) },
    errors: mutationResult('unmountMemoryStore', [InvalidRequestError, NotFoundError, ConflictError]),
    resolve: async (_root, { input }, { db, viewer }) => ({ unmountedMemoryStoreId: await unmountMemoryStore(db, viewer, input) }),
  }),
}));
