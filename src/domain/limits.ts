/**
 * Every limit of the API in one place. Validators, schema descriptions, the README and the
 * tests cite these names; change a number here and everything that depends on it follows.
 */

/** Relay connections: the page size when neither `first` nor `last` is given. */
export const DEFAULT_PAGE_SIZE = 20;
/** Relay connections: the largest `first` / `last` accepted (larger is INVALID_REQUEST, never clamped). */
export const MAX_PAGE_SIZE = 100;

/** Memory Store `name`: at least one non-whitespace character, at most this many characters. */
export const STORE_NAME_MAX_CHARACTERS = 255;
/** Memory Store `description`: at most this many characters. */
export const STORE_DESCRIPTION_MAX_CHARACTERS = 1024;

/** Store metadata: keys a caller may supply (the upstream limit of 16 minus the injected `created_by`). */
export const STORE_METADATA_MAX_KEYS = 15;
/** Metadata keys (stores and memories): 1 to this many characters. */
export const METADATA_KEY_MAX_CHARACTERS = 64;
/** Metadata values (stores and memories): strings of at most this many characters. */
export const METADATA_VALUE_MAX_CHARACTERS = 512;
/** The metadata key the server injects into every store, and its value. */
export const STORE_CREATED_BY_KEY = 'created_by';
export const STORE_CREATED_BY_VALUE = 'forward';

/** `createMemoryStore.idempotencyKey`: 1 to this many characters. */
export const IDEMPOTENCY_KEY_MAX_CHARACTERS = 255;
/** How long an idempotency key remembers its request, in milliseconds (24 hours). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/** Identity (`idn_`) and template (`tmpl_`) ids: the prefix plus 1 to this many `[A-Za-z0-9]`. */
export const EXTERNAL_ID_BODY_MAX_CHARACTERS = 64;

/** `x-request-id` values accepted from clients (longer or odd ones are replaced by a fresh id). */
export const REQUEST_ID_MAX_CHARACTERS = 128;

/** `nodes(ids:)`: the most ids one call may ask for. */
export const MAX_NODE_IDS = 100;

/** Memory `path` (the seed's path constraints): UTF-8 bytes of the whole path. */
export const PATH_MAX_BYTES = 1024;
/** Memory `path`: segments separated by `/`. */
export const PATH_MAX_SEGMENTS = 58;
/** Memory `path`: UTF-8 bytes of one segment. */
export const PATH_SEGMENT_MAX_BYTES = 255;

/** Memory `content`: at most 100 KiB of UTF-8. */
export const CONTENT_MAX_BYTES = 100 * 1024;

/** Memory metadata: keys a caller may supply (nothing is injected into memories). */
export const MEMORY_METADATA_MAX_KEYS = 16;

/** The metadata an agent's write leaves on a memory (it replaces whatever was there). */
export const AGENT_MEMORY_METADATA: Readonly<Record<string, string>> = Object.freeze({ source: 'agent' });

/** Explicit (non-default) mounts an (identity, template) pair may have; the default slot is extra. */
export const MAX_EXPLICIT_MOUNTS_PER_PAIR = 10;

/** The name of the system-managed default store the server creates for a pair. */
export const DEFAULT_STORE_NAME = 'System Default Memory';

/** Where a session's merged memories appear in the agent's sandbox. */
export const SANDBOX_MEMORY_ROOT = '/data/.qoder/awareness/';

/** API key `name`: 1 to this many characters, not blank. */
export const API_KEY_NAME_MAX_CHARACTERS = 255;
