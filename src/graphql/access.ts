import { wrapErrorIfMatches } from '@pothos/plugin-errors';
import { GraphQLError, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { Context } from '../context.js';
import { PermissionError } from '../domain/errors.js';
import { isAdmin } from '../domain/permissions.js';

/**
 * Who may use which field, in one table (API.md §7). ADMIN keys may use everything in
 * their workspace. IDENTITY keys may only list, mount and unmount stores and create
 * sessions for their own identity: the root fields below, with the identity each call
 * acts for. Every other root field answers FORBIDDEN — a top-level error for queries, a
 * PermissionError in the result union for mutations — as do the nested fields that lead
 * from those answers into stores' contents or into other pairs' mounts.
 */
type IdentityOf = (args: Record<string, any>) => unknown;

export const IDENTITY_KEY_FIELDS: Record<'Query' | 'Mutation', Record<string, IdentityOf>> = {
  Query: {
    memoryStoreMounts: (args) => args.identityId,
  },
  Mutation: {
    mountMemoryStore: (args) => args.input?.identityId,
    unmountMemoryStore: (args) => args.input?.identityId,
    createSession: (args) => args.input?.identityId,
  },
};

/** Nested fields an IDENTITY key may not read: they open stores' memories and histories. */
export const ADMIN_ONLY_NESTED_FIELDS = ['MemoryStoreMount.memoryStore', 'Session.defaultMemoryStore', 'Session.files'] as const;

const IDENTITY_SCOPE = 'it may only list, mount and unmount stores and create sessions for its own identity';

function forbidden(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'FORBIDDEN' } });
}

/** Wraps the schema's resolvers with the table above. Call once on the built schema. */
export function enforceAccess(schema: GraphQLSchema): GraphQLSchema {
  for (const rootName of ['Query', 'Mutation'] as const) {
    const root = rootName === 'Query' ? schema.getQueryType() : schema.getMutationType();
    if (!root) continue;
    for (const field of Object.values(root.getFields())) {
      const resolve = field.resolve as GraphQLFieldResolver<unknown, Context>;
      const identityOf = IDENTITY_KEY_FIELDS[rootName][field.name];
      field.resolve = (source, args, context, info) => {
        const { viewer } = context;
        if (isAdmin(viewer)) return resolve(source, args, context, info);
        const allowed = identityOf !== undefined && identityOf(args) === viewer.identityId;
        if (allowed) return resolve(source, args, context, info);
        const message =
          identityOf === undefined
            ? `This is an IDENTITY key: ${IDENTITY_SCOPE}.`
            : `This IDENTITY key acts for ${viewer.identityId} only.`;
        if (rootName === 'Query') throw forbidden(message);
        // Returned, not thrown, and marked as the errors plugin marks the errors it catches:
        // the result union carries it like any expected failure.
        return wrapErrorIfMatches(new PermissionError(message), [PermissionError]);
      };
    }
  }
  for (const coordinate of ADMIN_ONLY_NESTED_FIELDS) {
    const [typeName, fieldName] = coordinate.split('.') as [string, string];
    const type = schema.getType(typeName);
    const field = type && 'getFields' in type ? type.getFields()[fieldName] : undefined;
    if (!field || !('resolve' in field)) throw new Error(`access.ts names ${coordinate}, which the schema does not have`);
    const resolve = field.resolve as GraphQLFieldResolver<unknown, Context>;
    field.resolve = (source, args, context, info) => {
      if (!isAdmin(context.viewer)) throw forbidden(`This is an IDENTITY key: ${IDENTITY_SCOPE}; it cannot read ${coordinate}.`);
      return resolve(source, args, context, info);
    };
  }
  return schema;
}
