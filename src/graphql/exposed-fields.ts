import { getTableColumns } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import { memories, memoryFolders, memoryStores, memoryVersions } from '../db/schema.js';
import {
  CONTENT_MAX_BYTES,
  EXTERNAL_ID_BODY_MAX_CHARACTERS,
  MEMORY_METADATA_MAX_KEYS,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  PATH_MAX_BYTES,
  STORE_DESCRIPTION_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from '../domain/limits.js';

/**
 * The plain fields of the types that compiled reads answer (MemoryStore, Memory,
 * MemoryVersion, MemoryFolder), declared once: each field's column, its GraphQL type, how its value
 * renders, and the most bytes it can add to an answer. The Pothos types expose their fields
 * from this table (exposeFields below) and the read compiler renders the same fields from
 * it in SQL (read-compiler/sql.ts); test/compiled-reads.test.ts holds the two to the same
 * answers, and test/read-compiler.test.ts holds this table to the schema.
 */

/** How a field's value comes from its column. */
export type Rendering =
  /** As stored: text, whole numbers, booleans. */
  | { kind: 'value' }
  /** A stored enum value as its GraphQL name (the enum's declaration below). */
  | { kind: 'enum'; enumeration: EnumDeclaration }
  /** A timestamptz as DateTime: RFC 3339 in UTC with milliseconds (Date.prototype.toISOString). */
  | { kind: 'instant' }
  /** A jsonb map as JSONObject, its keys in the order the JSONObject scalar describes. */
  | { kind: 'metadata' }
  /** Whether the column holds a value (a Boolean computed from it). */
  | { kind: 'isSet' }
  /** The column's value, or null once the `unless` column holds one (a redacted version's content). */
  | { kind: 'unlessSet'; unless: AnyPgColumn; unlessProperty: string };

export interface ExposedField {
  /** The property of a loaded row that holds the column (drizzle's name for it). */
  property: string;
  column: AnyPgColumn;
  /** The field's GraphQL type as the schema prints it, e.g. "String!" or "DateTime". */
  type: string;
  rendering: Rendering;
  /** The most bytes the value can take in an answer's JSON text (every character 4 UTF-8 bytes, escaped). */
  worstBytes: number;
}

/** A GraphQL enum over a column's stored values: each GraphQL name, its stored value and its description. */
export interface EnumDeclaration {
  name: string;
  description: string;
  values: Readonly<Record<string, { value: string; description: string }>>;
}

export const MEMORY_STORE_STATUS = {
  name: 'MemoryStoreStatus',
  description: 'The lifecycle state of a memory store.',
  values: {
    ACTIVE: { value: 'active', description: 'Readable and writable; can be mounted.' },
    ARCHIVED: { value: 'archived', description: 'Read-only for good (there is no unarchive); cannot be mounted, changed or deleted.' },
  },
} as const satisfies EnumDeclaration;

export const MEMORY_OPERATION = {
  name: 'MemoryOperation',
  description: 'What produced a version.',
  values: {
    CREATED: { value: 'created', description: 'createMemory (or an agent\'s first write of a path).' },
    UPDATED: { value: 'updated', description: 'updateMemory: new content, metadata or path.' },
    DELETED: { value: 'deleted', description: 'deleteMemory: the version holds the last state.' },
  },
} as const satisfies EnumDeclaration;

/** Ids, hashes, numbers, instants, enums. */
const SHORT_BYTES = 80;
const textBytes = (characters: number) => characters * 4 * 2;
const metadataBytes = (keys: number) => keys * (textBytes(METADATA_KEY_MAX_CHARACTERS + METADATA_VALUE_MAX_CHARACTERS) + 6);

type Declared = Omit<ExposedField, 'property' | 'column' | 'worstBytes'> & { worstBytes?: number };

/** The fields of a table, each named by its row property (which names its column too). */
function fieldsOf<Table extends PgTable, Names extends string>(table: Table, declared: Record<Names, Declared & { from?: keyof Table['_']['columns'] }>) {
  const columns = getTableColumns(table) as Record<string, AnyPgColumn>;
  const fields = {} as Record<Names, ExposedField>;
  for (const [name, { from, worstBytes, ...field }] of Object.entries(declared) as [Names, Declared & { from?: string }][]) {
    const property = from ?? name;
    const column = columns[property];
    if (!column) throw new Error(`exposed-fields: ${name} names no column of its table`);
    fields[name] = { ...field, property, column, worstBytes: worstBytes ?? SHORT_BYTES };
  }
  return fields;
}

const value = { kind: 'value' } as const;
const instant = { kind: 'instant' } as const;
const metadata = { kind: 'metadata' } as const;

export const MEMORY_STORE_FIELDS = fieldsOf(memoryStores, {
  id: { type: 'ID!', rendering: value },
  name: { type: 'String!', rendering: value, worstBytes: textBytes(STORE_NAME_MAX_CHARACTERS) },
  description: { type: 'String!', rendering: value, worstBytes: textBytes(STORE_DESCRIPTION_MAX_CHARACTERS) },
  status: { type: 'MemoryStoreStatus!', rendering: { kind: 'enum', enumeration: MEMORY_STORE_STATUS } },
  entryCount: { type: 'Int!', rendering: value },
  totalSize: { type: 'SafeInt!', rendering: value },
  metadata: { type: 'JSONObject!', rendering: metadata, worstBytes: metadataBytes(STORE_METADATA_MAX_KEYS + 1) },
  systemManaged: { type: 'Boolean!', rendering: value },
  identityId: { type: 'ID', rendering: value, worstBytes: 2 * (EXTERNAL_ID_BODY_MAX_CHARACTERS + 8) },
  createdAt: { type: 'DateTime!', rendering: instant },
  updatedAt: { type: 'DateTime!', rendering: instant },
  archivedAt: { type: 'DateTime', rendering: instant },
});

export const MEMORY_FIELDS = fieldsOf(memories, {
  id: { type: 'ID!', rendering: value },
  memoryStoreId: { type: 'ID!', rendering: value },
  path: { type: 'String!', rendering: value, worstBytes: 2 * PATH_MAX_BYTES },
  content: { type: 'String!', rendering: value, worstBytes: 2 * CONTENT_MAX_BYTES },
  contentSizeBytes: { type: 'Int!', rendering: value },
  contentSha256: { type: 'String!', rendering: value },
  metadata: { type: 'JSONObject!', rendering: metadata, worstBytes: metadataBytes(MEMORY_METADATA_MAX_KEYS) },
  createdAt: { type: 'DateTime!', rendering: instant },
  updatedAt: { type: 'DateTime!', rendering: instant },
});

export const MEMORY_VERSION_FIELDS = fieldsOf(memoryVersions, {
  id: { type: 'ID!', rendering: value },
  memoryStoreId: { type: 'ID!', rendering: value },
  memoryId: { type: 'ID!', rendering: value },
  path: { type: 'String!', rendering: value, worstBytes: 2 * PATH_MAX_BYTES },
  content: { type: 'String', rendering: { kind: 'unlessSet', unless: memoryVersions.redactedAt, unlessProperty: 'redactedAt' }, worstBytes: 2 * CONTENT_MAX_BYTES },
  contentSizeBytes: { type: 'Int!', rendering: value },
  contentSha256: { type: 'String!', rendering: value },
  operation: { type: 'MemoryOperation!', rendering: { kind: 'enum', enumeration: MEMORY_OPERATION } },
  number: { type: 'Int!', rendering: value, from: 'sequence' },
  redacted: { type: 'Boolean!', rendering: { kind: 'isSet' }, from: 'redactedAt' },
  redactedAt: { type: 'DateTime', rendering: instant },
  createdAt: { type: 'DateTime!', rendering: instant },
});

export const MEMORY_FOLDER_FIELDS = fieldsOf(memoryFolders, {
  path: { type: 'String!', rendering: value, worstBytes: 2 * PATH_MAX_BYTES },
  name: { type: 'String!', rendering: value, worstBytes: 2 * PATH_MAX_BYTES },
  memoryCount: { type: 'Int!', rendering: value },
  totalSize: { type: 'SafeInt!', rendering: value },
  updatedAt: { type: 'DateTime!', rendering: instant },
});

/** The exposed fields of each type the compiler answers, by GraphQL type name. */
export const EXPOSED_FIELDS: Record<'MemoryStore' | 'Memory' | 'MemoryVersion' | 'MemoryFolder', Record<string, ExposedField>> = {
  MemoryStore: MEMORY_STORE_FIELDS,
  Memory: MEMORY_FIELDS,
  MemoryVersion: MEMORY_VERSION_FIELDS,
  MemoryFolder: MEMORY_FOLDER_FIELDS,
};

/**
 * A field's value in a loaded row, as its resolver returns it: what the GraphQL type then
 * serializes (an enum's stored value, which the enum type names; a Date, which DateTime
 * writes in UTC).
 */
export function exposedValue(field: ExposedField, row: Record<string, unknown>): unknown {
  const stored = row[field.property] ?? null;
  switch (field.rendering.kind) {
    case 'isSet':
      return stored !== null;
    case 'unlessSet':
      return row[field.rendering.unlessProperty] != null ? null : stored;
    default:
      return stored;
  }
}

/** A field's GraphQL type name (without `!`), and whether it may be null. */
export function graphqlTypeOf(field: ExposedField): { name: string; nullable: boolean } {
  return field.type.endsWith('!') ? { name: field.type.slice(0, -1), nullable: false } : { name: field.type, nullable: true };
}
