import { GraphQLError } from 'graphql';
import { encodeEventCursor } from '../../domain/events.js';
import { DEFAULT_EVENT_RETENTION_DAYS, DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY, REPLAY_BUDGET_BYTES, STREAM_BUFFER_BYTES, STREAM_BUFFER_EVENTS, STREAM_KEEP_ALIVE_MS, STREAM_REPLAY_STALL_MS } from '../../domain/limits.js';
import type { MemoryEventPayload } from '../../subscriptions/event-stream.js';
import { builder } from '../builder.js';
import { MemoryRef, MemoryStoreRef, MemoryVersionRef } from './refs.js';

// ---------------------------------------------------------------------------------------
// The type

const MemoryEventKindEnum = builder.enumType('MemoryEventKind', {
  description: 'What changed.',
  values: {
    MEMORY_CREATED: { value: 'memory_created', description: 'A memory was created (createMemory, an agent\'s first write at a path, a restore of a deleted memory). `version` is its CREATED version.' },
    MEMORY_UPDATED: { value: 'memory_updated', description: 'A memory\'s content, metadata or path changed. `version` is the UPDATED version it wrote.' },
    MEMORY_DELETED: { value: 'memory_deleted', description: 'A memory was deleted. `version` is its DELETED version; `memory` is null.' },
    VERSION_REDACTED: { value: 'version_redacted', description: 'A version\'s content was redacted. `version` is that version.' },
    STORE_CREATED: { value: 'store_created', description: 'A store was created (createMemoryStore once per idempotency key, or a session\'s new default store).' },
    STORE_UPDATED: { value: 'store_updated', description: 'A store\'s name, description or metadata changed.' },
    STORE_ARCHIVED: { value: 'store_archived', description: 'A store was archived.' },
    STORE_DELETED: { value: 'store_deleted', description: 'A store was deleted with its memories and versions; `memoryStore` is null.' },
  } as const,
});

const MemoryEventRef = builder.objectRef<MemoryEventPayload>('MemoryEvent').implement({
  description:
    'One committed change of the workspace, as Subscription.memoryEvents delivers it. `memoryStore`, `memory` and `version` are read once for every stream when the event is delivered: they show the objects as they are then, which may already be past this change.',
  fields: (t) => ({
    cursor: t.string({
      description: 'Opaque. Subscribe again with `after` set to the last cursor received to resume: every event after it follows, none twice.',
      resolve: ({ event }) => encodeEventCursor(event.position, event.occurredAt),
    }),
    kind: t.field({ type: MemoryEventKindEnum, description: 'What changed.', resolve: ({ event }) => event.kind }),
    occurredAt: t.field({
      type: 'DateTime',
      description: 'When the change was made: the time of the version it wrote (memory events), of the redaction, or of the store change. Delivery follows commit order, not this time.',
      resolve: ({ event }) => event.occurredAt,
    }),
    memoryStoreId: t.id({ description: 'The store that changed, or whose memory changed.', resolve: ({ event }) => event.memoryStoreId }),
    memoryStore: t.field({
      type: MemoryStoreRef,
      nullable: true,
      description: 'The store as it is now; null once deleted.',
      resolve: ({ memoryStore }) => memoryStore,
    }),
    memoryId: t.id({ nullable: true, description: 'The memory of a MEMORY_* or VERSION_REDACTED event; null for store events.', resolve: ({ event }) => event.memoryId }),
    memory: t.field({
      type: MemoryRef,
      nullable: true,
      description: 'The live memory as it is now; null for store events and once the memory is deleted.',
      resolve: ({ memory }) => memory,
    }),
    version: t.field({
      type: MemoryVersionRef,
      nullable: true,
      description: 'The version the change wrote (or, for VERSION_REDACTED, redacted), read when the event is delivered: a version redacted since shows as redacted. Null for store events and once the store is deleted.',
      resolve: ({ version }) => version,
    }),
  }),
});

// ---------------------------------------------------------------------------------------
// Subscription

builder.subscriptionType({
  description:
    'Live updates, over GraphQL over Server-Sent Events (POST or GET /graphql with `Accept: text/event-stream`) or graphql-ws over WebSocket (/graphql, the key in `connection_init` as `{ "authorization": "Bearer msk_…" }`). ADMIN keys only.',
});

builder.subscriptionField('memoryEvents', (t) =>
  t.field({
    type: MemoryEventRef,
    description: [
      'Every committed change of the caller\'s workspace (or of one store), exactly once and in commit order per store, including across reconnects and across server instances. A write is delivered within a second.',
      `Without \`after\` the stream starts now. With \`after\` it first replays every matching event after that cursor, then continues live with no gap and no duplicate. Events are kept MEMSTORE_EVENT_RETENTION_DAYS days (default ${DEFAULT_EVENT_RETENTION_DAYS}): an older cursor is a top-level CURSOR_EXPIRED error, and so is a replay (resuming, or catching up after a burst) that finds an event after its position already deleted: a stream never passes over a deleted event. Anything that is not the cursor of an event delivered (one forged, or past every event) an INVALID_REQUEST error.`,
      `Limits: at most MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY open streams per key (default ${DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY}; one more is RATE_LIMITED); a keep-alive at least every ${STREAM_KEEP_ALIVE_MS / 1000} s; a stream holds at most ${STREAM_BUFFER_EVENTS} events (${STREAM_BUFFER_BYTES / 1024 / 1024} MiB of content) for its consumer: a burst larger than that reaches a consumer that reads, replayed from the table at its pace; a consumer that reads nothing for ${STREAM_REPLAY_STALL_MS / 1000} s while events wait for it is cut off with SLOW_CONSUMER and resumes from its last cursor. The replays of a server instance together hold at most ${REPLAY_BUDGET_BYTES / 1024 / 1024} MiB of content: past it, a replay waits its turn (it is not cut off for waiting). A revoked key's streams end with UNAUTHENTICATED within 10 s. The query cost limit applies to the event's selection.`,
    ].join('\n\n'),
    args: {
      memoryStoreId: t.arg.id({ required: false, description: 'Only this store\'s events. A store of another workspace, or none, gives no events (and no error).' }),
      pathPrefix: t.arg.string({
        required: false,
        description: 'Only memory events whose path (before or after a rename) starts with this plain prefix, as in MemoryStore.memories; store events are always delivered.',
      }),
      after: t.arg.string({ required: false, description: 'The cursor of the last event received: resume after it.' }),
    },
    subscribe: async (_root, args, context) => {
      const live = context.live;
      if (!live) throw new GraphQLError('Live updates are not served here.', { extensions: { code: 'INVALID_REQUEST' } });
      return live.hub.open({
        viewer: context.viewer,
        filter: { memoryStoreId: args.memoryStoreId ?? null, pathPrefix: args.pathPrefix ?? null },
        after: args.after ?? null,
        now: context.now,
        transport: live.transport,
      });
    },
    resolve: (payload) => {
      // A stream cut off (revoked key, slow consumer) ends with this error.
      if (payload.failure) throw payload.failure;
      return payload;
    },
  }),
);
