import { createHash, timingSafeEqual } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { statementCommand, type PoolUse, type PoolUses, type StatementDone, type StatementObserver } from '../db/statement-observer.js';
import { MAX_METRIC_OPERATION_NAMES, METRIC_OPERATION_NAME_MAX_CHARACTERS } from '../domain/limits.js';
import type { LiveUse } from '../subscriptions/event-hub.js';
import { bearerToken } from './authentication.js';
import { CounterFamily, HistogramFamily } from './metric-families.js';
import { useReadRoute } from './read-route.js';

/** Where the Prometheus text is served. */
export const METRICS_PATH = '/metrics';

/** How /metrics is guarded: a bearer token when set, else open (outside production; in production there is no /metrics without one). */
export interface MetricsSettings {
  token: string | null;
}

/** Operation labels that no GraphQL name can be (names are `[_A-Za-z][_0-9A-Za-z]*`). */
export const OPERATION_NOT_KNOWN = '(unknown)';
export const OPERATION_ANONYMOUS = '(anonymous)';
export const OPERATION_OTHER = '(other)';

/** The paths /metrics counts by name; every other path is `(other)`, so that scanners cannot add series. */
const ROUTES = new Set(['/graphql', '/healthz', '/readyz', '/schema.graphql', METRICS_PATH]);
const ROUTE_OTHER = '(other)';
/** Top-level error codes are the server's own; anything else of another form is counted as `error`. */
const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

const REQUEST_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STATEMENT_SECONDS_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What one answered GraphQL request adds to the metrics. */
export interface AnsweredRequest {
  /** The operation's name: undefined before it was known (the request was refused earlier), null when anonymous. */
  operationName: string | null | undefined;
  /** query, mutation or subscription; undefined before it was known. */
  operationType: string | undefined;
  /** `ok`, or the code of the answer's first top-level error. */
  outcome: string;
  seconds: number;
}

/**
 * The metrics of one app, in a registry of its own (several apps in one process, as in the
 * tests, never share series; metric-families.ts keeps the per-request ones cheap): GraphQL requests by operation and outcome with their latency,
 * HTTP responses by route and status, statement durations, the database pool's use, rate
 * limit refusals, the live updates' streams and replays, and the process metrics prom-client collects. Label values are bounded:
 * operation names past MAX_METRIC_OPERATION_NAMES distinct ones (or longer than
 * METRIC_OPERATION_NAME_MAX_CHARACTERS) count as `(other)`, unknown paths as `(other)`.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly operationNames = new Set<string>();
  private readonly requests: CounterFamily;
  private readonly requestSeconds: HistogramFamily;
  private readonly responses: CounterFamily;
  private readonly statementSeconds: HistogramFamily;
  private readonly statementErrors: CounterFamily;
  private readonly refusals: CounterFamily;

  constructor(poolUse?: () => PoolUses, liveUse?: () => LiveUse) {
    const registry = this.registry;
    this.requests = new CounterFamily(
      'memstore_graphql_requests_total',
      'GraphQL requests answered, by operation name, operation type and outcome (ok, or the code of the first top-level error).',
      ['operation', 'type', 'outcome'],
      registry,
    );
    this.requestSeconds = new HistogramFamily(
      'memstore_graphql_request_duration_seconds',
      "Time from a GraphQL request's arrival to its answer, by operation name and type.",
      ['operation', 'type'],
      registry,
      REQUEST_SECONDS_BUCKETS,
    );
    this.responses = new CounterFamily(
      'memstore_http_responses_total',
      'HTTP responses, by route (/graphql, /healthz, /readyz, /schema.graphql, /metrics or (other)) and status code.',
      ['route', 'status'],
      registry,
    );
    this.statementSeconds = new HistogramFamily(
      'memstore_db_statement_duration_seconds',
      'Time from sending an SQL statement of a request to its answer, by command (select, insert, update, delete, with, …, other).',
      ['command'],
      registry,
      STATEMENT_SECONDS_BUCKETS,
    );
    this.statementErrors = new CounterFamily('memstore_db_statement_errors_total', 'SQL statements of requests that failed, by command.', ['command'], registry);
    this.refusals = new CounterFamily(
      'memstore_rate_limit_refusals_total',
      'Requests refused with 429 RATE_LIMITED because their API key had spent its rate limit.',
      [],
      registry,
    );
    /** A gauge read when scraped: `read` gives each series' value (with its `part`, for the pool's). */
    const gauge = (name: string, help: string, read: (set: (value: number, part?: string) => void) => void, labelNames: string[] = []) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        collect() {
          read((value, part) => (part === undefined ? this.set(value) : this.set({ part }, value)));
        },
      });
    if (poolUse) {
      // One series per part of the pool: `reads` (compiled reads) and `general` (everything else), or `all` where one part serves both.
      const pool = (field: keyof PoolUse) => (set: (value: number, part: string) => void) => {
        for (const [part, use] of Object.entries(poolUse())) set(use[field], part);
      };
      gauge('memstore_db_pool_size', 'Connections a part of the database pool may open (part: reads for compiled reads, general for the rest, or all where one part serves both; the embedded database: 1).', pool('size'), ['part']);
      gauge('memstore_db_pool_connections_in_use', 'Database connections of a part of the pool held by a statement or a transaction.', pool('inUse'), ['part']);
      gauge('memstore_db_pool_waiting', 'Statements and transactions waiting for a database connection of a part of the pool that another holds.', pool('waiting'), ['part']);
    }
    if (liveUse) {
      const live = (field: keyof LiveUse) => (set: (value: number) => void) => set(liveUse()[field]);
      gauge('memstore_live_streams_open', 'Live-update streams open on this instance.', live('openStreams'));
      gauge('memstore_live_replay_bytes', "Content the instance's live-update replays hold (loaded, or waiting for their consumers), in bytes; at most about its replay budget.", live('replayBytes'));
      gauge('memstore_live_replays_waiting', "Live-update replays waiting for room in the instance's replay budget.", live('replaysWaiting'));
    }
    collectDefaultMetrics({ register: registry });
  }

  /** The label of an operation name, folded as the class says. */
  operationLabel(name: string | null | undefined): string {
    if (name === undefined) return OPERATION_NOT_KNOWN;
    if (name === null) return OPERATION_ANONYMOUS;
    if (this.operationNames.has(name)) return name;
    if (name.length > METRIC_OPERATION_NAME_MAX_CHARACTERS || this.operationNames.size >= MAX_METRIC_OPERATION_NAMES) return OPERATION_OTHER;
    this.operationNames.add(name);
    return name;
  }

  /** A GraphQL request answered. */
  graphqlRequest(answered: AnsweredRequest): void {
    const operation = this.operationLabel(answered.operationName);
    const type = answered.operationType ?? OPERATION_NOT_KNOWN;
    const outcome = answered.outcome === 'ok' || ERROR_CODE.test(answered.outcome) ? answered.outcome : 'error';
    this.requests.inc(operation, type, outcome);
    this.requestSeconds.observe(answered.seconds, operation, type);
  }

  /** Any HTTP response (GraphQL or not). */
  httpResponse(pathname: string, status: number): void {
    this.responses.inc(ROUTES.has(pathname) ? pathname : ROUTE_OTHER, String(status));
  }

  rateLimitRefused(): void {
    this.refusals.inc();
  }

  /** Times one statement: the observer of every request's statements. */
  readonly statement: StatementObserver = (text) => {
    const command = statementCommand(text);
    const startedAt = performance.now();
    return ((error) => {
      this.statementSeconds.observe((performance.now() - startedAt) / 1000, command);
      if (error !== undefined) this.statementErrors.inc(command);
    }) satisfies StatementDone;
  };
}

/**
 * `GET /metrics`: the app's metrics as Prometheus text. With a token, only a request with
 * `Authorization: Bearer <token>` gets them (else 401); the comparison takes the same time
 * whatever the token sent.
 */
export function useMetricsRoute(metrics: Metrics, settings: MetricsSettings): Plugin {
  const expected = settings.token === null ? null : sha256(settings.token);
  // Not an async hook: every other request passes it, and Yoga's chain stays synchronous for them.
  return useReadRoute(METRICS_PATH, (request, Response) => {
    if (expected !== null) {
      const given = bearerToken(request.headers.get('authorization') ?? '');
      if (given === undefined || !timingSafeEqual(sha256(given), expected)) {
        return new Response('memstore metrics need "Authorization: Bearer <MEMSTORE_METRICS_TOKEN>".\n', {
          status: 401,
          headers: { 'content-type': 'text/plain; charset=utf-8', 'www-authenticate': 'Bearer realm="metrics"' },
        });
      }
    }
    return metrics.registry.metrics().then((text) => new Response(text, { headers: { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' } }));
  });
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
