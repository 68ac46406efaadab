import { ConflictError, InvalidRequestError, NotFoundError, PreconditionFailedError } from '../../domain/errors.js';
import { isIdOfKind } from '../../domain/ids.js';
import { SANDBOX_MEMORY_ROOT } from '../../domain/limits.js';
import type { DeletedMemory, MemoryRecord } from '../../domain/memories/records.js';
import {
  countSessionFiles,
  createSession,
  deleteSessionMemory,
  injectedMountRecord,
  listSessionFiles,
  SESSION_FILES_ORDER,
  writeSessionMemory,
  type SessionFile,
} from '../../domain/sessions.js';
import { builder } from '../builder.js';
import { mutationResult } from '../errors.js';
import { parseConnectionArguments, toConnection } from '../pagination.js';
import { MountAccessEnum } from './mount.js';
import { MemoryRef, MemoryStoreMountRef, MemoryStoreRef, MemoryVersionRef, SessionRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// The types

const EnvironmentTypeEnum = builder.enumType('EnvironmentType', {
  description: 'Where a session runs, which decides whether memory is injected into its sandbox.',
  values: {
    MANAGED: { value: 'managed', description: 'A managed (cloud) environment: all active mounts of the pair are injected.' },
    SELF_HOSTED: { value: 'self_hosted', description: 'A self-hosted environment: no store is injected; mounts and stores still work through the API.' },
  } as const,
});

const SessionFileRef = builder.objectRef<SessionFile>('SessionFile').implement({
  description: 'A file in the agent\'s merged memory folder: the visible memory at a path and the entries it hides.',
  fields: (t) => ({
    path: t.exposeString('path', { description: 'The memory path.' }),
    sandboxPath: t.string({ description: `Where the agent reads it: "${SANDBOX_MEMORY_ROOT}" followed by the path.`, resolve: (file) => `${SANDBOX_MEMORY_ROOT}${file.path}` }),
    memory: t.field({ type: MemoryRef, description: 'The visible memory: from the earliest-mounted store holding the path.', resolve: (file) => file.memory }),
    access: t.field({ type: MountAccessEnum, description: 'The access of the store the visible memory comes from.', resolve: (file) => file.access }),
    shadowed: t.field({
      type: [MemoryRef],
      description: 'Memories at the same path in later-mounted stores, hidden by `memory`, in precedence order.',
      resolve: (file) => file.shadowed,
    }),
  }),
});

builder.node(SessionRef, {
  description: 'The memory side of an agent session of an (identity, template) pair.',
  id: { resolve: (session) => session.id, description: 'The session id: `sesn_` followed by 20 lowercase base36 characters.' },
  isTypeOf: (value) => isIdOfKind((value as { id?: string }).id ?? '', 'session'),
  fields: (t) => ({
    identityId: t.exposeID('identityId', { description: 'The identity of the pair.' }),
    templateId: t.exposeID('templateId', { description: 'The template of the pair.' }),
    environment: t.field({ type: EnvironmentTypeEnum, description: 'Where the session runs.', resolve: (session) => session.environment }),
    createdAt: t.field({ type: 'DateTime', description: 'When the session was created.', resolve: (session) => session.createdAt }),
    defaultMemoryStoreId: t.exposeID('defaultMemoryStoreId', { description: 'The id of the pair\'s default store at the time (readable by IDENTITY keys too).' }),
    defaultMemoryStore: t.field({
      type: MemoryStoreRef,
      nullable: true,
      description:
        'The pair\'s system-managed default store at the time: the only store the agent writes to. Null once that store has been deleted (deleteMemoryStore may delete a default store, and a session outlives it).',
      resolve: (session, _args, context) => context.loaders.memoryStore.load(session.defaultMemoryStoreId),
    }),
    memoryInjected: t.boolean({ description: 'Whether stores were injected into the sandbox (false for SELF_HOSTED).', resolve: (session) => session.memoryInjected }),
    mounts: t.field({
      type: [MemoryStoreMountRef],
      description: 'The mounts injected when the session was created, in list order (default slot first); empty for SELF_HOSTED. Later mounts and unmounts do not change it.',
      resolve: (session) => session.injectedMounts.map((mount) => injectedMountRecord(session, mount)),
    }),
    files: t.connection(
      {
        type: SessionFileRef,
        description:
          'The flat folder the agent sees: the injected stores\' memories merged by path, in path (byte) order. Where several stores hold a path, the store mounted earliest wins (the default slot by its creation time; ties by store id).',
        args: { pathPrefix: t.arg.string({ description: 'Only paths starting with this string (a plain prefix).' }) },
        resolve: async (session, args, context) => {
          const window = parseConnectionArguments(SESSION_FILES_ORDER, args);
          const filter = { pathPrefix: args.pathPrefix ?? undefined };
          const page = await listSessionFiles(context.db, context.viewer, session, filter, window);
          return toConnection(SESSION_FILES_ORDER, page, () => countSessionFiles(context.db, context.viewer, session, filter));
        },
      },
      { name: 'SessionFileConnection', description: 'A page of session files.' },
      { name: 'SessionFileEdge', description: 'A session file and its cursor.' },
    ),
  }),
});

// ---------------------------------------------------------------------------------------
// Query

builder.queryField('session', (t) =>
  t.field({
    type: SessionRef,
    nullable: true,
    description: 'The session with this id, or null.',
    args: { id: t.arg.id({ required: true, description: 'A `sesn_` id.' }) },
    resolve: (_root, { id }, context) => context.loaders.session.load(id),
  }),
);

// ---------------------------------------------------------------------------------------
// Mutations

const CreateSessionInput = builder.inputType('CreateSessionInput', {
  description: 'A new session of an (identity, template) pair.',
  fields: (t) => ({
    identityId: t.id({ required: true, description: 'The identity: `idn_` followed by 1–64 letters or digits.' }),
    templateId: t.id({ required: true, description: 'The template: `tmpl_` followed by 1–64 letters or digits.' }),
    environment: t.field({ type: EnvironmentTypeEnum, required: true, description: 'Where the session runs.' }),
  }),
});

const WriteSessionMemoryInput = builder.inputType('WriteSessionMemoryInput', {
  description: 'An agent\'s write of a file in its session\'s default store.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    path: t.string({ required: true, description: 'The path to create or update (the path rules of createMemory).' }),
    content: t.string({ required: true, description: 'The new content (the content rules of createMemory).' }),
    expectedContentSha256: t.string({
      description: 'Write only if the memory at the path still has this SHA-256. With no memory at the path, the precondition fails with currentContentSha256 "".',
    }),
  }),
});

const DeleteSessionMemoryInput = builder.inputType('DeleteSessionMemoryInput', {
  description: 'An agent\'s deletion of a file in its session\'s default store.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    path: t.string({ required: true, description: 'The path of the memory to delete.' }),
    expectedContentSha256: t.string({ description: 'Delete only if the memory still has this SHA-256.' }),
  }),
});

const CreateSessionSuccess = builder.objectRef<{ session: Awaited<ReturnType<typeof createSession>> }>('CreateSessionSuccess').implement({
  description: 'The session was created.',
  fields: (t) => ({ session: t.field({ type: SessionRef, description: 'The new session.', resolve: (result) => result.session }) }),
});

const WriteSessionMemorySuccess = builder.objectRef<{ memory: MemoryRecord }>('WriteSessionMemorySuccess').implement({
  description: 'The memory was created or updated (its metadata is now {"source": "agent"}).',
  fields: (t) => ({ memory: t.field({ type: MemoryRef, description: 'The memory as it is now.', resolve: (result) => result.memory }) }),
});

const DeleteSessionMemorySuccess = builder.objectRef<DeletedMemory>('DeleteSessionMemorySuccess').implement({
  description: 'The memory is gone; its path is free again.',
  fields: (t) => ({
    deletedMemoryId: t.exposeID('deletedMemoryId', { description: 'The id the memory had.' }),
    version: t.field({ type: MemoryVersionRef, description: 'The DELETED version holding its last state.', resolve: (result) => result.version }),
  }),
});


builder.mutationFields((t) => ({
  createSession: t.field({
    type: CreateSessionSuccess,
    description:
      'Starts a session of a pair. The pair\'s system-managed default store ("System Default Memory", READ_WRITE) is created on first use; MANAGED sessions get all active mounts injected, SELF_HOSTED ones none (memoryInjected false).',
    args: { input: t.arg({ type: CreateSessionInput, required: true, description: 'The pair and its environment.' }) },
    errors: mutationResult('createSession', [InvalidRequestError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ session: await createSession(db, viewer, input, now) }),
  }),
  writeSessionMemory: t.field({
    type: WriteSessionMemorySuccess,
    description:
      'The agent\'s write: creates or updates the path in the session\'s default store (the only writable one) and replaces the memory\'s metadata with {"source": "agent"}. The version records the session as its author. SELF_HOSTED sessions: FORBIDDEN.',
    args: { input: t.arg({ type: WriteSessionMemoryInput, required: true, description: 'The session, path and content.' }) },
    errors: mutationResult('writeSessionMemory', [InvalidRequestError, NotFoundError, ConflictError, PreconditionFailedError]),
    resolve: async (_root, { input }, { db, viewer, now }) => ({ memory: await writeSessionMemory(db, viewer, input, now) }),
  }),
  deleteSessionMemory: t.field({
    type: DeleteSessionMemorySuccess,
    description: 'The agent\'s deletion: as deleteMemory, in the session\'s default store, by path. SELF_HOSTED sessions: FORBIDDEN.',
    args: { input: t.arg({ type: DeleteSessionMemoryInput, required: true, description: 'The session and path.' }) },
    errors: mutationResult('deleteSessionMemory', [InvalidRequestError, NotFoundError, ConflictError, PreconditionFailedError]),
    resolve: (_root, { input }, { db, viewer, now }) => deleteSessionMemory(db, viewer, input, now),
  }),
}));
