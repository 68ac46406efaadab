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

/** Memory `path`: UTF-8 bytes of the whole path. */
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

/*
 * Request limits. Every query-shape limit is refused before execution with the top-level
 * code QUERY_TOO_COMPLEX (`extensions.limit` names which one, `extensions.max` its value).
 */

/** Nesting of selected fields (fragments expanded): the dashboard query needs 10. */
export const MAX_QUERY_DEPTH = 15;
/** Aliased fields in one document. */
export const MAX_QUERY_ALIASES = 30;
/** Lexical tokens of one document (a string literal is one token, however long). */
export const MAX_QUERY_TOKENS = 2000;
/** Directive uses (`@include`, `@skip`, …) in one document. */
export const MAX_QUERY_DIRECTIVES = 20;
/**
 * The estimated cost of one operation. Every field costs 1; a connection multiplies the cost
 * of its selection by the page it asks for (`first` or `last`, else DEFAULT_PAGE_SIZE);
 * `content` costs CONTENT_FIELD_COST. The 20 × 20 × 5 dashboard with content costs about 42,000.
 */
export const MAX_QUERY_COST = 50_000;
/** The cost of selecting `content` (up to CONTENT_MAX_BYTES of text) once. */
export const CONTENT_FIELD_COST = 10;
/**
 * The cost of a `totalCount` that must read the items it counts (any other than a store's
 * memories without a path prefix, or a memory's versions without filters, which counters
 * answer at cost 1): a count may read a whole store's history. Once per connection,
 * whatever its page size.
 */
export const COUNT_SCAN_COST = 2_500;

/**
 * The largest request body, in bytes. A maximal write — CONTENT_MAX_BYTES of content in the
 * worst JSON escaping (`\u0001`: 6 bytes per content byte, 600 KiB), a maximal path and
 * maximal metadata escaped the same way, and the query — fits with room to spare.
 */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;
/**
 * A body over MAX_REQUEST_BODY_BYTES is refused with 413, but read (and thrown away) up to
 * this many bytes first: a client still sending when the server closes the connection gets
 * EPIPE instead of the answer. A declared Content-Length over this is refused at once.
 */
export const MAX_DISCARDED_BODY_BYTES = 16 * 1024 * 1024;
/** How long the rest of a refused body is read for, at most, in milliseconds. */
export const DISCARD_BODY_TIMEOUT_MS = 5_000;

/**
 * Statement texts built per request (compiled reads) that PostgreSQL may keep prepared on
 * each connection. Prepared statements stay until their session ends and each costs the
 * backend memory; texts beyond these (rare shapes) run unprepared, in one more round trip.
 */
export const MAX_PREPARED_STATEMENT_TEXTS = 200;
/**
 * A compiled statement's text longer than this (characters) is never prepared: a prepared
 * statement keeps its text and plan on every connection, and the dashboard's is about 3,000.
 */
export const MAX_PREPARED_STATEMENT_TEXT_LENGTH = 32_768;
/**
 * Tokens an instance remembers as having found their key lately (their SHA-256, about 100
 * bytes each): a compiled read of a shape no key has answered yet runs for them without a
 * key lookup first. Past this, the least recently seen is forgotten (and looked up again).
 */
export const MAX_KNOWN_TOKENS = 10_000;

/**
 * The text one answer may carry, in UTF-8 bytes: every text field's value counts, `content`
 * before it is loaded. Past it, RESPONSE_TOO_LARGE (HTTP 400) instead of the data. It holds
 * 160 memories of the largest content, or a dashboard of thousands of ordinary ones.
 */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** The memory the cache of parsed query documents may hold (texts and their syntax trees), per process. */
export const MAX_DOCUMENT_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * The memory the cache of compiled reads may hold (their parameters, by operation and
 * variables; a statement's text is kept once for all its reads), per process: a dashboard
 * that sends the same query again, a poll above all, is neither planned nor written again.
 * An entry takes about 1.5 KiB, so a query asked for each of some 10,000 ids in turn stays
 * compiled. Cost estimates are kept by the same keys, in a quarter of this. Variables of
 * more than MAX_CACHED_VARIABLES_BYTES (as JSON) are not a key worth keeping: such reads
 * compile each time.
 */
export const MAX_COMPILED_READ_CACHE_BYTES = 16 * 1024 * 1024;
export const MAX_CACHED_VARIABLES_BYTES = 4096;

/**
 * The memory compiled searches may hold, apart from the other compiled reads; their cost
 * estimates are kept apart too, in a quarter as much more. The texts people search for
 * rarely come twice, and a stream of them must not push the dashboards' reads out. A
 * search is kept by its variables' very values, an entry of about 2.5 KiB.
 */
export const MAX_COMPILED_SEARCH_CACHE_BYTES = 2 * 1024 * 1024;

/** Default time one request may run before it is ended with REQUEST_TIMEOUT (MEMSTORE_REQUEST_TIMEOUT_MS). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** Default rate limit per API key: tokens added per second (MEMSTORE_RATE_LIMIT_PER_SECOND; 0 turns it off). */
export const DEFAULT_RATE_LIMIT_PER_SECOND = 50;
/** Default bucket size per API key: requests that may arrive at once (MEMSTORE_RATE_LIMIT_BURST). */
export const DEFAULT_RATE_LIMIT_BURST = 100;
/** Rate-limit buckets one process keeps at most (keys beyond it, least recently used first, start again from a full bucket). */
export const MAX_RATE_LIMIT_BUCKETS = 100_000;

/** How long a client may take to send its request headers, in milliseconds. */
export const HTTP_HEADERS_TIMEOUT_MS = 10_000;
/** How long a client may take to send a whole request (headers and body), in milliseconds. */
export const HTTP_RECEIVE_TIMEOUT_MS = 30_000;
/** How long an idle keep-alive connection stays open, in milliseconds (longer than clients usually keep theirs). */
export const HTTP_KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * The instants a DateTime argument or a cursor may name: years 0001 to 9999 in UTC. Outside
 * them, JavaScript writes a year PostgreSQL refuses to read ("0000-…", "+010000-…"), and a
 * filter would fail in the database instead of being refused as a bad argument.
 */
export const EARLIEST_INSTANT_MS = Date.parse('0001-01-01T00:00:00.000Z');
export const LATEST_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** The Retry-After, in seconds, of a 503 DATABASE_UNAVAILABLE (an outage, a failover, a dropped connection). */
export const DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS = 1;
/** How long /readyz waits for the database to answer before it says the server is not ready. */
export const READINESS_TIMEOUT_MS = 1_000;

/** MemoryVersion.diff: the context lines around each change in `hunks`, and `unified`'s default. */
export const DIFF_DEFAULT_CONTEXT_LINES = 3;
/** MemoryVersion.diff: the most context lines `unified(context:)` accepts. */
export const DIFF_MAX_CONTEXT_LINES = 10_000;
/**
 * MemoryVersion.diff: the most lines added plus removed that the line alignment searches
 * for; two texts further apart are diffed as one hunk that replaces every line (still exact,
 * and bounded in time for the largest contents).
 */
export const DIFF_MAX_EDIT_LINES = 2_000;
/** The cost of selecting MemoryVersion.diff: what two `content` selections cost. */
export const DIFF_FIELD_COST = 2 * CONTENT_FIELD_COST;
/** Distinct operation names /metrics labels its series with; later names are counted as `(other)`. */
export const MAX_METRIC_OPERATION_NAMES = 100;
/** Operation names longer than this are counted as `(other)` in /metrics. */
export const METRIC_OPERATION_NAME_MAX_CHARACTERS = 100;
/** The SQL text a statement's span carries (`db.query.text`), at most this many characters. */
export const TRACED_STATEMENT_MAX_CHARACTERS = 2048;
/**
 * Expired request replays (Forward REST `Idempotency-Key`s older than IDEMPOTENCY_KEY_TTL_MS)
 * a claim of a new key deletes, at most, in its workspace: the table holds no more than a
 * day of keyed writes, which the rate limit bounds.
 */
export const REPLAY_SWEEP_BATCH = 100;
// ---------------------------------------------------------------------------------------
// Live updates (Subscription.memoryEvents)

/** Open streams per API key (MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY); one more is refused with RATE_LIMITED. */
export const DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY = 50;
/**
 * WebSockets a key may hold open on one instance, per stream it may open: a client needs one
 * socket for all its streams, so twice its stream limit leaves room for reconnects while old
 * sockets close. One more is closed at once (code 4429).
 */
export const WEBSOCKETS_PER_KEY_STREAM = 2;
/**
 * How long a WebSocket whose `connection_init` names no key (missing, unknown or revoked) is
 * held after it is acknowledged: its operations are refused with UNAUTHENTICATED meanwhile,
 * then it is closed (code 4401).
 */
export const KEYLESS_WEBSOCKET_MS = 2_000;
/** How long events are kept (MEMSTORE_EVENT_RETENTION_DAYS); an older cursor is CURSOR_EXPIRED. */
export const DEFAULT_EVENT_RETENTION_DAYS = 7;
/**
 * Events a stream holds for its consumer. A live batch that does not fit is replayed from the
 * table at the consumer's pace; a consumer that reads nothing of it for STREAM_REPLAY_STALL_MS
 * is cut off (SLOW_CONSUMER). event-stream.ts.
 */
export const STREAM_BUFFER_EVENTS = 1000;
/** Content bytes a stream may hold for its consumer (and bytes its connection may hold unsent), as STREAM_BUFFER_EVENTS for events. */
export const STREAM_BUFFER_BYTES = 4 * 1024 * 1024;
/**
 * What a stream writes ahead of its consumer (bytes its connection holds unsent) before its
 * next events wait for the connection to drain: a consumer that reads slowly holds them in
 * its stream's queue (bounded) rather than as frames, and a replay slows down to its pace.
 */
export const STREAM_SEND_AHEAD_BYTES = 64 * 1024;
/**
 * Content an instance's replays (resuming streams, and streams that fell behind) may hold at
 * once: the slices they have loaded and what waits for their consumers. Past it, a replay waits
 * its turn before it loads its next slice (subscriptions/replay-budget.ts). Sixteen replays
 * that each hold a full slice (half of STREAM_BUFFER_BYTES) and what waits behind it.
 */
export const REPLAY_BUDGET_BYTES = 64 * 1024 * 1024;
/** A consumer that takes nothing of a replay (resuming, or fallen behind its buffer) for this long is cut off (SLOW_CONSUMER): the replay waits for it meanwhile. */
export const STREAM_REPLAY_STALL_MS = 30_000;
/** Events one statement reads, for every stream of an instance at once (and for a stream that replays). */
export const EVENT_BATCH_SIZE = 500;
/**
 * How often an instance looks for new events without being woken (skipped when a read began
 * less than half of it, or the wake gap, ago): a change whose notification was lost is
 * delivered at most one and a half of it (or the gap and it) late.
 */
export const EVENT_POLL_INTERVAL_MS = 250;
/**
 * The least time between two reads a notification wakes: commits that come faster are read
 * together, in one batch for every stream (a write is then delivered at most this much later).
 * The gap grows with the streams an instance serves, EVENT_WAKE_GAP_PER_STREAM_MS each, up to
 * EVENT_WAKE_GAP_MAX_MS: every batch costs each stream a write to its socket, so a thousand
 * streams take batches five times less often than a hundred, and spend that much less on them.
 */
export const EVENT_WAKE_GAP_MS = 20;
export const EVENT_WAKE_GAP_PER_STREAM_MS = 0.15;
export const EVENT_WAKE_GAP_MAX_MS = 150;
/** How often the keys of open streams are checked for revocation. */
export const STREAM_KEY_CHECK_INTERVAL_MS = 5_000;
/** How often expired events are deleted, and how many per statement. */
export const EVENT_SWEEP_INTERVAL_MS = 60_000;
export const EVENT_SWEEP_BATCH = 500;
/** A keep-alive on every open stream at least this often (SSE comments, WebSocket pings). */
export const STREAM_KEEP_ALIVE_MS = 12_000;

/**
 * Forward REST path parameters (ids): longer ones match no route (404). Ids are far shorter
 * (external ids at most 5 + EXTERNAL_ID_BODY_MAX_CHARACTERS); the bound keeps the router's work small.
 */
export const REST_PATH_PARAMETER_MAX_CHARACTERS = 512;

/** searchMemories: the longest `query`, in characters. */
export const SEARCH_QUERY_MAX_CHARACTERS = 1_000;
/** searchMemories: the longest snippet, in UTF-16 code units (so at most this many characters). */
export const SEARCH_SNIPPET_MAX_LENGTH = 200;
