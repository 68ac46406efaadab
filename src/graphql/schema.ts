import { lexicographicSortSchema, printSchema } from 'graphql';
import { enforceAccess } from './access.js';
import { builder } from './builder.js';
import { freshLoadsPerMutation, guardResolvers, resolveNodeIdsInTurn } from './resolver-guards.js';
import './types/errors.js';
import './types/node.js';
import './types/memory-store.js';
import './types/memory.js';
import './types/memory-version.js';
import './types/version-history.js';
import './types/memory-entries.js';
import './types/memory-search.js';
import './types/mount.js';
import './types/session.js';
import './types/api-key.js';
import './types/memory-event.js';

export const schema = guardResolvers(freshLoadsPerMutation(enforceAccess(resolveNodeIdsInTurn(builder.toSchema()))));

/** The SDL checked in as schema.graphql: types and fields sorted so that diffs stay readable. */
export function printSchemaSdl(): string {
  return `# Generated from src/graphql by \`npm run schema:print\`. Do not edit; a test fails when it is stale.\n\n${printSchema(lexicographicSortSchema(schema))}\n`;
}
