import { GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { describe, expect, it } from 'vitest';
import { assertCan, can, kindsAllowedToTakeAll, type Action, type ActionType } from '../src/domain/access.js';
import { PermissionError } from '../src/domain/errors.js';
import type { Viewer } from '../src/domain/viewer.js';
import { enforceAccess, FIELD_ACTIONS, NESTED_FIELD_ACTIONS } from '../src/graphql/access.js';
import { schema } from '../src/graphql/schema.js';

/**
 * The access policy as a truth table: every action × every kind of caller, written out by
 * hand. A change to the policy changes a row here, on purpose.
 */

const admin: Viewer = { workspaceId: 'ws', apiKeyId: 'key_admin', kind: 'admin', identityId: null };
const alice: Viewer = { workspaceId: 'ws', apiKeyId: 'key_alice', kind: 'identity', identityId: 'idn_alice' };

/** The action of each type, acting for alice's identity where it names one. */
const ACTIONS: Record<ActionType, Action> = {
  'memoryStores.read': { type: 'memoryStores.read' },
  'memoryStores.write': { type: 'memoryStores.write' },
  'memories.read': { type: 'memories.read' },
  'memories.write': { type: 'memories.write' },
  'memoryVersions.read': { type: 'memoryVersions.read' },
  'memoryVersions.redact': { type: 'memoryVersions.redact' },
  'nodes.read': { type: 'nodes.read' },
  'sessions.read': { type: 'sessions.read' },
  'sessions.create': { type: 'sessions.create', identityId: 'idn_alice' },
  'sessions.writeMemory': { type: 'sessions.writeMemory' },
  'mounts.read': { type: 'mounts.read', identityId: 'idn_alice' },
  'mounts.write': { type: 'mounts.write', identityId: 'idn_alice' },
  'apiKeys.manage': { type: 'apiKeys.manage' },
  'memoryEvents.subscribe': { type: 'memoryEvents.subscribe' },
};

/** [action, ADMIN key, IDENTITY key for this identity, IDENTITY key for another identity] */
const TRUTH_TABLE: [ActionType, boolean, boolean, boolean][] = [
  ['memoryStores.read', true, false, false],
  ['memoryStores.write', true, false, false],
  ['memories.read', true, false, false],
  ['memories.write', true, false, false],
  ['memoryVersions.read', true, false, false],
  ['memoryVersions.redact', true, false, false],
  ['nodes.read', true, false, false],
  ['sessions.read', true, false, false],
  ['sessions.create', true, true, false],
  ['sessions.writeMemory', true, false, false],
  ['mounts.read', true, true, false],
  ['mounts.write', true, true, false],
  ['apiKeys.manage', true, false, false],
  ['memoryEvents.subscribe', true, false, false],
];

describe('the access policy', () => {
  it('has a row in the truth table for every action, and no other', () => {
    expect(TRUTH_TABLE.map(([action]) => action).sort()).toEqual(Object.keys(ACTIONS).sort());
  });

  describe.each(TRUTH_TABLE)('%s', (type, byAdmin, byOwnIdentity, byOtherIdentity) => {
    const action = ACTIONS[type];
    const forBob = 'identityId' in action ? { ...action, identityId: 'idn_bob' } : action;

    it(`is ${byAdmin ? 'allowed' : 'refused'} to an ADMIN key`, () => {
      expect(can(admin, action)).toBe(byAdmin);
      expect(can(admin, forBob)).toBe(byAdmin);
    });

    it(`is ${byOwnIdentity ? 'allowed' : 'refused'} to an IDENTITY key acting for its own identity`, () => {
      expect(can(alice, action)).toBe(byOwnIdentity);
    });

    it(`is ${byOtherIdentity ? 'allowed' : 'refused'} to an IDENTITY key for another identity`, () => {
      expect(can(alice, forBob)).toBe(byOtherIdentity);
      if (!byOtherIdentity) expect(() => assertCan(alice, forBob)).toThrow(PermissionError);
    });
  });

  it('gives compiled reads of stores, memories and versions to ADMIN keys only', () => {
    expect(kindsAllowedToTakeAll([{ type: 'memoryStores.read' }, { type: 'memories.read' }, { type: 'memoryVersions.read' }])).toEqual(['admin']);
    expect(kindsAllowedToTakeAll([])).toEqual(['admin', 'identity']);
  });
});

describe('the GraphQL access table', () => {
  it('names an action for every root field of the schema, and none for fields it does not have', () => {
    for (const [root, type] of [['Query', schema.getQueryType()!], ['Mutation', schema.getMutationType()!]] as const) {
      expect(Object.keys(FIELD_ACTIONS[root]).sort(), root).toEqual(Object.keys(type.getFields()).sort());
    }
    for (const coordinate of Object.keys(NESTED_FIELD_ACTIONS)) {
      const [typeName, fieldName] = coordinate.split('.') as [string, string];
      const type = schema.getType(typeName) as GraphQLObjectType;
      expect(type.getFields()[fieldName], coordinate).toBeDefined();
    }
  });

  it('fails closed: a schema with a root field the table does not name cannot be built', () => {
    const unknown = new GraphQLSchema({
      query: new GraphQLObjectType({ name: 'Query', fields: { memoryStores: { type: GraphQLString }, somethingNew: { type: GraphQLString } } }),
    });
    expect(() => enforceAccess(unknown)).toThrow('access.ts names no action for Query.somethingNew');
  });
});
