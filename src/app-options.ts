import type { Config } from './config.js';
import type { DatabaseHandle } from './db/client.js';
import type { StageName } from './http/pipeline.js';
import type { PersistedDocuments } from './http/persisted-documents.js';
import type { SharedLimits } from './http/shared-limits.js';
import type { Tracing } from './http/tracing.js';
import type { Logger } from './logger.js';
import { DEFAULT_EVENT_RETENTION_DAYS, DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY, WEBSOCKETS_PER_KEY_STREAM } from './domain/limits.js';
import { keyNamedBy } from './http/authentication.js';
import type { SocketAdmission } from './http/websocket.js';
import { EventHub, type EventHubOptions } from './subscriptions/event-hub.js';
import { LocalStreamSlots } from './subscriptions/stream-slots.js';

/** What createApp (app.ts) is given: settings, the database, and the seams tests turn. */
export interface AppOptions {
  /**
   * The settings the app uses. Left out: introspection follows nodeEnv (off in production),
   * no rate limit, DEFAULT_REQUEST_TIMEOUT_MS.
   */
  config: Pick<Config, 'nodeEnv' | 'graphiql'> &
    Partial<Pick<Config, 'introspection' | 'rateLimit' | 'requestTimeoutMs' | 'corsOrigins' | 'metrics' | 'maxSubscriptionsPerKey' | 'eventRetentionDays'>>;
  /**
   * `scoped` gives each request the database under its limits (db/deadline.ts). `run` is
   * needed for compiled reads: without it every read goes to the resolvers. `listen` wakes
   * live updates; `reads` is where their reader reads (default `db`).
   */
  database: Pick<DatabaseHandle, 'db' | 'ping' | 'scoped'> & Partial<Pick<DatabaseHandle, 'run' | 'runRaw' | 'readSnapshot' | 'watchPool' | 'listen' | 'reads' | 'replays'>>;
  logger?: Logger;
  /** Pre-filled in GraphiQL's Authorization header (development only). */
  developmentKey?: string | null;
  /** The rate limiter's clock in milliseconds (tests move it by hand). */
  clock?: () => number;
  /** Serve plain JSON operations on the lean path (default); false sends everything through Yoga (tests compare both). */
  leanPath?: boolean;
  /** Answer the reads it covers with one compiled SQL statement (default); false leaves every read to the resolvers (tests compare both). */
  compiledReads?: boolean;
  /** Try memory writes as one statement first (default); false makes every write a transaction (tests run the writes both ways). */
  singleStatementWrites?: boolean;
  /** Called as each request stage starts (test/pipeline.test.ts follows the stages). */
  onStage?: (request: Request, stage: StageName) => void;
  /** Trusted documents (MEMSTORE_PERSISTED_DOCUMENTS), loaded at startup. */
  persistedDocuments?: PersistedDocuments | null;
  /** Traces (OTEL_EXPORTER_OTLP_ENDPOINT), started by startTracing; left out: no spans. */
  tracing?: Tracing | null;
  /** With REDIS_URL: request rates and stream counts shared by every instance (src/server.ts opens them). */
  sharedLimits?: SharedLimits | null;
  /** Live updates: the open-stream counts (shared by every instance with REDIS_URL) and the poller's settings (tests). */
  live?: Partial<Pick<EventHubOptions, 'slots' | 'pollIntervalMs' | 'keyCheckIntervalMs' | 'sweepIntervalMs' | 'bufferEvents' | 'batchSize' | 'onStreamCount' | 'replayStallMs' | 'replayBudgetBytes'>> & { listen?: boolean };
}

/**
 * The app's live-update hub: woken by the database's notifications (unless `live.listen` is
 * false), events kept for the configured retention, streams counted per key (by every
 * instance together with REDIS_URL).
 */
export function createEventHub(options: AppOptions, logger: Logger): EventHub {
  const { config, database } = options;
  const { listen, ...live } = options.live ?? {};
  return new EventHub({
    db: database.db,
    reads: database.reads,
    replays: database.replays,
    notifications: listen === false ? undefined : database.listen,
    logger,
    retentionDays: config.eventRetentionDays ?? DEFAULT_EVENT_RETENTION_DAYS,
    ...live,
    slots: live.slots ?? options.sharedLimits?.streamSlots ?? new LocalStreamSlots(config.maxSubscriptionsPerKey ?? DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY),
  });
}

/** Who may hold the app's WebSockets: the key a socket names, looked up once and checked with the streams' keys by the hub, and twice the stream limit of sockets per key. */
export function createSocketAdmission({ config, database }: AppOptions, hub: EventHub): SocketAdmission {
  return {
    keyOf: (authorization) => keyNamedBy(database.db, authorization),
    holdKeys: (holder) => hub.holdKeys(holder),
    maxSocketsPerKey: WEBSOCKETS_PER_KEY_STREAM * (config.maxSubscriptionsPerKey ?? DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY),
  };
}

/** What the WebSocket transport and shutdown need of an app besides Yoga's interface. */
const appParts = new WeakMap<object, { hub: EventHub; sockets: SocketAdmission }>();

export function keepAppParts(app: object, parts: { hub: EventHub; sockets: SocketAdmission }): void {
  appParts.set(app, parts);
}

/** The live-update hub of an app: src/server.ts attaches the WebSocket transport to it and closes it on shutdown. */
export function eventHubOf(app: object): EventHub {
  return appParts.get(app)!.hub;
}

/** Who may hold the app's WebSockets (http/websocket.ts): a socket's key, and how many one key may hold. */
export function socketAdmissionOf(app: object): SocketAdmission {
  return appParts.get(app)!.sockets;
}
