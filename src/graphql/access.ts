import { wrapErrorIfMatches } from '@pothos/plugin-errors';
import { GraphQLError, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { Context } from '../context.js';
import { refusal, type Action } from '../domain/access.js';
import { PermissionError } from '../domain/errors.js';

/**
 * The action each field takes, for the access policy (domain/access.ts) to allow or refuse.
 * Every root field has a row: a root field without one stops the schema from being built
 * (fail closed). Nested fields have a row when they lead somewhere their parent's action
 * does not cover (from a mount or a session into a store's contents). A refused query field
 * is a top-level FORBIDDEN error; a refused mutation answers PermissionError in its result
 * union, changing nothing.
 */
type ActionOf = (args: Record<string, any>) => Action;

const always = (action: Action): ActionOf => () => action;

export const FIELD_ACTIONS: Record<'Query' | 'Mutation' | 'Subscription', Record<string, ActionOf>> = {
  Query: {
    memoryStore: always({ type: 'memoryStores.read' }),
    memoryStores: always({ type: 'memoryStores.read' }),
    memory: always({ type: 'memories.read' }),
    memoryVersion: always({ type: 'memoryVersions.read' }),
    searchMemories: always({ type: 'memories.read' }),
    node: always({ type: 'nodes.read' }),
    nodes: always({ type: 'nodes.read' }),
    session: always({ type: 'sessions.read' }),
    memoryStoreMounts: (args) => ({ type: 'mounts.read', identityId: args.identityId }),
    apiKeys: always({ type: 'apiKeys.manage' }),
  },
  Mutation: {
    createMemoryStore: always({ type: 'memoryStores.write' }),
    updateMemoryStore: always({ type: 'memoryStores.write' }),
    archiveMemoryStore: always({ type: 'memoryStores.write' }),
    deleteMemoryStore: always({ type: 'memoryStores.write' }),
    createMemory: always({ type: 'memories.write' }),
    updateMemory: always({ type: 'memories.write' }),
    deleteMemory: always({ type: 'memories.write' }),
    redactMemoryVersion: always({ type: 'memoryVersions.redact' }),
    restoreMemoryVersion: always({ type: 'memories.write' }),
    mountMemoryStore: (args) => ({ type: 'mounts.write', identityId: args.input?.identityId }),
    unmountMemoryStore: (args) => ({ type: 'mounts.write', identityId: args.input?.identityId }),
    createSession: (args) => ({ type: 'sessions.create', identityId: args.input?.identityId }),
    writeSessionMemory: always({ type: 'sessions.writeMemory' }),
    deleteSessionMemory: always({ type: 'sessions.writeMemory' }),
    createApiKey: always({ type: 'apiKeys.manage' }),
    revokeApiKey: always({ type: 'apiKeys.manage' }),
  },
  Subscription: {
    memoryEvents: always({ type: 'memoryEvents.subscribe' }),
  },
};

/** Nested fields that open what their parent's action does not: a store's contents. */
export const NESTED_FIELD_ACTIONS: Record<string, Action> = {
  'MemoryStoreMount.memoryStore': { type: 'memoryStores.read' },
  'Session.defaultMemoryStore': { type: 'memoryStores.read' },
  'Session.files': { type: 'memories.read' },
};

function forbidden(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'FORBIDDEN' } });
}

/** Wraps the schema's resolvers with the tables above. Call once on the built schema. */
export function enforceAccess(schema: GraphQLSchema): GraphQLSchema {
  for (const rootName of ['Query', 'Mutation', 'Subscription'] as const) {
    const root = rootName === 'Query' ? schema.getQueryType() : rootName === 'Mutation' ? schema.getMutationType() : schema.getSubscriptionType();
    if (!root) continue;
    for (const field of Object.values(root.getFields())) {
      const actionOf = FIELD_ACTIONS[rootName][field.name];
      if (!actionOf) throw new Error(`access.ts names no action for ${rootName}.${field.name}`);
      if (rootName === 'Subscription') {
        // A stream is refused before it opens: FORBIDDEN as a top-level error.
        const subscribe = field.subscribe as GraphQLFieldResolver<unknown, Context>;
        field.subscribe = (source, args, context, info) => {
          const reason = refusal(context.viewer, actionOf(args));
          if (reason !== null) throw forbidden(reason);
          return subscribe(source, args, context, info);
        };
        continue;
      }
      const resolve = field.resolve as GraphQLFieldResolver<unknown, Context>;
      field.resolve = (source, args, context, info) => {
        const reason = refusal(context.viewer, actionOf(args));
        if (reason === null) return resolve(source, args, context, info);
        if (rootName === 'Query') throw forbidden(reason);
        // Returned, not thrown, and marked as the errors plugin marks the errors it catches:
        // the result union carries it like any expected failure.
        return wrapErrorIfMatches(new PermissionError(reason), [PermissionError]);
      };
    }
  }
  for (const [coordinate, action] of Object.entries(NESTED_FIELD_ACTIONS)) {
    const [typeName, fieldName] = coordinate.split('.') as [string, string];
    const type = schema.getType(typeName);
    const field = type && 'getFields' in type ? type.getFields()[fieldName] : undefined;
    if (!field || !('resolve' in field)) throw new Error(`access.ts names ${coordinate}, which the schema does not have`);
    const resolve = field.resolve as GraphQLFieldResolver<unknown, Context>;
    field.resolve = (source, args, context, info) => {
      const reason = refusal(context.viewer, action);
      if (reason !== null) throw forbidden(`${reason.slice(0, -1)}; it cannot read ${coordinate}.`);
      return resolve(source, args, context, info);
    };
  }
  return schema;
}
