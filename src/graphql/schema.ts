import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder.js';
import './types/errors.js';
import './types/node.js';
import './types/memory-store.js';
import './types/memory.js';
import './types/memory-version.js';
import './types/mount.js';
import './types/session.js';

export const schema = builder.toSchema();

/** The SDL checked in as schema.graphql: types and fields sorted so that diffs stay readable. */
export function printSchemaSdl(): string {
  return `${printSchema(lexicographicSortSchema(schema))}\n`;
}
