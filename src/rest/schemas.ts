import { z } from 'zod';
import {
  CONTENT_MAX_BYTES,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  MEMORY_METADATA_MAX_KEYS,
  STORE_DESCRIPTION_MAX_CHARACTERS,
  STORE_METADATA_MAX_KEYS,
  STORE_NAME_MAX_CHARACTERS,
} from '../domain/limits.js';

/**
 * The shapes of the Forward REST API's requests and answers, declared once with zod: the
 * server validates path parameters, queries and bodies with them (the domain then checks
 * its own rules: lengths, characters, paths, metadata), and openapi.ts turns the same
 * declarations into the OpenAPI 3.1 document. Names are snake_case, as the SDKs send them.
 */

// ---------------------------------------------------------------------------------------
// Requests

const id = (description: string) => z.string().describe(description);

export const StoreParams = z.object({ memory_store_id: id('A `memstore_` id.') });
export const MemoryParams = StoreParams.extend({ memory_id: id('A `mem_` id.') });
export const VersionParams = StoreParams.extend({ memory_version_id: id('A `memver_` id.') });
export const PairParams = z.object({
  identity_id: id('An `idn_` id: `idn_` followed by 1–64 letters or digits.'),
  template_id: id('A `tmpl_` id: `tmpl_` followed by 1–64 letters or digits.'),
});
export const PairStoreParams = PairParams.extend({ memory_store_id: id('A `memstore_` id.') });
export const NoParams = z.object({});

/** `limit`: a whole number 1..MAX_PAGE_SIZE in the query string. */
const limit = z
  .string()
  .regex(/^[0-9]{1,4}$/, `must be a whole number from 1 to ${MAX_PAGE_SIZE}`)
  .transform(Number)
  .pipe(z.number().min(1, `must be at least 1`).max(MAX_PAGE_SIZE, `must be at most ${MAX_PAGE_SIZE}`))
  .optional()
  .describe(`How many items a page holds: 1–${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}.`);

export const PageQuery = z.object({
  limit,
  after_id: z.string().optional().describe('The page after this item (the previous page\'s `last_id`). Not with `before_id`.'),
  before_id: z.string().optional().describe('The page just before this item (the next page\'s `first_id`), still in list order. Not with `after_id`.'),
});

export const StoreListQuery = PageQuery.extend({
  system_managed: z
    .enum(['true', 'false'])
    .optional()
    .describe('Only default stores (`true`) or only stores created through the API (`false`); absent: all.'),
});

export const MemoryListQuery = PageQuery.extend({
  path_prefix: z.string().optional().describe('Only memories whose path starts with this string (a plain prefix: `a/b` matches `a/bc.md`).'),
});

export const VersionListQuery = PageQuery.extend({
  memory_id: z.string().optional().describe('Only versions of this memory (live or deleted).'),
});

export const DeleteMemoryQuery = z.object({
  expected_content_sha256: z.string().optional().describe('Delete only if the stored content still has this SHA-256 (64 hex digits); otherwise 409 `content_sha256_mismatch`.'),
});

export const NoQuery = z.object({});

const storeMetadata = z
  .record(z.string(), z.string())
  .describe(`String key/value pairs: at most ${STORE_METADATA_MAX_KEYS} keys of 1–64 characters, values of at most 512 characters. \`created_by\` is reserved: the server sets it to "forward".`);
const memoryMetadata = z
  .record(z.string(), z.string())
  .describe(`String key/value pairs: at most ${MEMORY_METADATA_MAX_KEYS} keys of 1–64 characters, values of at most 512 characters.`);

export const CreateStoreBody = z.object({
  name: z.string().describe(`1–${STORE_NAME_MAX_CHARACTERS} characters, not blank.`),
  description: z.string().nullable().optional().describe(`At most ${STORE_DESCRIPTION_MAX_CHARACTERS} characters; absent or null: "".`),
  metadata: storeMetadata.nullable().optional(),
});

export const UpdateStoreBody = z.object({
  name: z.string().nullable().optional().describe(`1–${STORE_NAME_MAX_CHARACTERS} characters, not blank. null is refused.`),
  description: z.string().nullable().optional().describe(`At most ${STORE_DESCRIPTION_MAX_CHARACTERS} characters ("" clears it). null is refused.`),
  metadata: storeMetadata.nullable().optional().describe('Replaces the whole map ("created_by" is kept by the server). null is refused.'),
});

export const CreateMemoryBody = z.object({
  path: z.string().describe('A relative path of at most 1024 UTF-8 bytes; no live memory of the store may have it.'),
  content: z.string().describe(`UTF-8 text of at most ${CONTENT_MAX_BYTES} bytes.`),
  metadata: memoryMetadata.nullable().optional(),
});

export const UpdateMemoryBody = z.object({
  content: z.string().describe(`The new text: UTF-8 of at most ${CONTENT_MAX_BYTES} bytes.`),
  content_sha256: z
    .string()
    .nullable()
    .optional()
    .describe('Apply only if the stored content still has this SHA-256; otherwise 409 `content_sha256_mismatch` (unless the memory already is exactly as requested).'),
  metadata: memoryMetadata.nullable().optional().describe('Replaces the whole map; absent keeps it.'),
});

export const MountBody = z.object({ memory_store_id: z.string().describe('The active store to mount.') });

// ---------------------------------------------------------------------------------------
// Answers

const instant = z.string().describe('RFC 3339, UTC, milliseconds.');
const instantOrNull = z.string().nullable().describe('RFC 3339, UTC, milliseconds; null when unset.');
const metadata = z.record(z.string(), z.string());

export const MemoryStoreObject = z
  .object({
    id: z.string(),
    type: z.literal('memory_store'),
    name: z.string(),
    description: z.string(),
    status: z.enum(['active', 'archived']),
    entry_count: z.number().int(),
    total_size: z.number().int(),
    metadata,
    system_managed: z.boolean(),
    identity_id: z.string().nullable(),
    created_at: instant,
    updated_at: instant,
    archived_at: instantOrNull,
    binding_info: z.object({ identity_template_count: z.number().int() }).strict(),
  })
  .strict()
  .describe('A memory store.')
  .meta({ id: 'memory_store' });

const memoryFields = {
  id: z.string(),
  type: z.literal('memory'),
  memory_store_id: z.string(),
  path: z.string(),
  content_size_bytes: z.number().int(),
  content_sha256: z.string(),
  metadata,
  created_at: instant,
  updated_at: instant,
};

export const MemoryObject = z.object({ ...memoryFields, content: z.string() }).strict().describe('A memory with its content.').meta({ id: 'memory' });
export const MemoryListItem = z.object(memoryFields).strict().describe('A memory as lists show it: without `content`.').meta({ id: 'memory_list_item' });

const versionFields = {
  id: z.string(),
  type: z.literal('memory_version'),
  memory_store_id: z.string(),
  memory_id: z.string(),
  path: z.string(),
  content_size_bytes: z.number().int(),
  content_sha256: z.string(),
  operation: z.enum(['created', 'updated', 'deleted']),
  redacted: z.boolean(),
  redacted_at: instantOrNull,
  created_at: instant,
  created_by: z.union([
    z.object({ type: z.literal('api_key'), api_key_id: z.string() }).strict(),
    z.object({ type: z.literal('session'), session_id: z.string().nullable() }).strict(),
  ]),
};

export const MemoryVersionObject = z
  .object({ ...versionFields, content: z.string().nullable().describe('null once redacted.') })
  .strict()
  .describe('A memory version with its content.')
  .meta({ id: 'memory_version' });
export const MemoryVersionListItem = z.object(versionFields).strict().describe('A memory version as lists show it: without `content`.').meta({ id: 'memory_version_list_item' });

export const MountObject = z
  .object({
    memory_store_id: z.string(),
    identity_id: z.string(),
    template_id: z.string(),
    access: z.enum(['read_write', 'read_only']),
    system_managed: z.boolean(),
    name: z.string(),
    status: z.string(),
    entry_count: z.number().int(),
    created_at: instant,
  })
  .strict()
  .describe('A store mounted on an (identity, template) pair.')
  .meta({ id: 'mount' });

const marker = (type: string, description: string) =>
  z.object({ id: z.string(), type: z.literal(type), deleted: z.literal(true) }).strict().describe(description).meta({ id: type });

export const StoreDeleted = marker('memory_store_deleted', 'The store, its memories and versions are gone.');
export const MemoryDeleted = marker('memory_deleted', 'The memory is gone (its versions stay).');
export const BindingDeleted = marker('memory_store_binding_deleted', 'The store is no longer mounted on the pair; `id` is the store\'s id.');

export function pageOf<Item extends z.ZodType>(item: Item, name: string) {
  return z
    .object({ data: z.array(item), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() })
    .strict()
    .describe(`A page of ${name}.`);
}

export const ErrorObject = z
  .object({
    type: z.literal('error'),
    request_id: z.string().describe('The same as the x-request-id header.'),
    error: z
      .object({
        type: z.enum(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'conflict_error', 'rate_limit_error', 'api_error']),
        code: z.string().describe('A stable lower snake case code: see the README.'),
        message: z.string(),
      })
      .strict(),
    issues: z.array(z.object({ field: z.array(z.union([z.string(), z.number()])), message: z.string() }).strict()).optional().describe('On 400s from validation: every problem, with the field it concerns.'),
    current_content_sha256: z.string().optional().describe('On 409 content_sha256_mismatch: the stored content\'s SHA-256.'),
  })
  .strict()
  .meta({ id: 'error' });
