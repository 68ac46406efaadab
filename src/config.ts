import path from 'node:path';
import { z } from 'zod';
import {
  DEFAULT_EVENT_RETENTION_DAYS,
  DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY,
  DEFAULT_RATE_LIMIT_BURST,
  DEFAULT_RATE_LIMIT_PER_SECOND,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './domain/limits.js';
import { DEFAULT_DB_POOL_SIZE, IN_MEMORY_DATA_DIR } from './db/client.js';
import { isWellFormedToken, isWellFormedWorkspaceId, TOKEN_RULE, WORKSPACE_ID_RULE } from './domain/api-keys.js';
import { isOrigin, type CorsOrigins } from './http/cors.js';
import type { MetricsSettings } from './http/metrics.js';
import type { TracingSettings } from './http/tracing.js';
import type { RateLimitSettings } from './http/rate-limit.js';
import { LOG_LEVELS, type LogLevel } from './logger.js';

/** The only module that reads the environment. Every problem is reported at once. */


export interface BootstrapKey {
  workspaceId: string;
  token: string;
}

export interface Config {
  port: number;
  host: string;
  /** PostgreSQL connection string; undefined means the embedded PGlite database. */
  databaseUrl: string | undefined;
  /** Directory for PGlite files (`<dir>/pglite`) and the dev key, or `memory://`. */
  dataDir: string;
  bootstrapKeys: BootstrapKey[] | undefined;
  nodeEnv: 'development' | 'production' | 'test';
  logLevel: LogLevel;
  /** Serve GraphiQL on GET /graphql for browsers (default: on outside production). */
  graphiql: boolean;
  /** Answer introspection and suggest field names in errors (default: on outside production). */
  introspection: boolean;
  /** Per-API-key token bucket; null turns rate limiting off. */
  rateLimit: RateLimitSettings | null;
  /** How long one request may run; also PostgreSQL's `statement_timeout`. */
  requestTimeoutMs: number;
  /** PostgreSQL: the connections this process may open (MEMSTORE_DB_POOL_SIZE); PGlite has one. */
  dbPoolSize: number;
  /** Browser origins allowed to call the API (`*`: any, without credentials); null: no cross-origin access. */
  corsOrigins: CorsOrigins | null;
  /** The trusted documents' manifest (hash → document), and whether only those may run; null: any document. */
  persistedDocuments: { file: string; only: boolean } | null;
  /** GET /metrics and its guard (MEMSTORE_METRICS_TOKEN); null: no /metrics (production without a token). */
  metrics: MetricsSettings | null;
  /** OpenTelemetry traces over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT); null: off. */
  tracing: TracingSettings | null;
  /** Live updates: open streams per API key (MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY). */
  maxSubscriptionsPerKey: number;
  /** Live updates: how long events are kept, in days (MEMSTORE_EVENT_RETENTION_DAYS). */
  eventRetentionDays: number;
  /** Redis for limits shared by every instance (REDIS_URL); undefined: this process's own. */
  redisUrl: string | undefined;
}

const booleanSetting = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

const METRICS_TOKEN_RULE = 'must be 16 to 256 characters of A-Z, a-z, 0-9 and -._~+/=';

const httpUrl = (example: string) =>
  z.string().refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
    } catch {
      return false;
    }
  }, `must be an http:// or https:// URL, e.g. ${example}`);

const otlpProtocol = z
  .string()
  .refine((value) => value === 'http/protobuf' || value === 'http/json', 'must be http/protobuf or http/json (memstore exports traces over OTLP/HTTP; grpc is not supported)')
  .transform((value) => value as TracingSettings['protocol']);

const environmentSchema = z.object({
  PORT: z
    .string()
    .regex(/^\d+$/, 'must be a whole number from 0 to 65535 (0: any free port)')
    .transform(Number)
    .pipe(z.number().int().max(65535, 'must be a whole number from 0 to 65535 (0: any free port)'))
    .default(4000),
  HOST: z.string().min(1, 'must not be empty').default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .refine((value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'postgres:' || url.protocol === 'postgresql:') && url.hostname !== '';
      } catch {
        return false;
      }
    }, 'must be a postgres:// or postgresql:// URL with a host, e.g. postgres://postgres@127.0.0.1:5432/test')
    .optional(),
  MEMSTORE_DATA_DIR: z.string().min(1, 'must not be empty').default('.data'),
  MEMSTORE_BOOTSTRAP_KEYS: z
    .string()
    .transform((value, context) => {
      const keys: BootstrapKey[] = [];
      const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
      if (entries.length === 0) {
        context.addIssue({ code: 'custom', message: 'must list at least one workspace:msk_… pair' });
      }
      for (const [index, entry] of entries.entries()) {
        const separator = entry.indexOf(':');
        const workspaceId = separator < 0 ? '' : entry.slice(0, separator);
        const token = separator < 0 ? '' : entry.slice(separator + 1);
        if (!isWellFormedWorkspaceId(workspaceId) || !isWellFormedToken(token)) {
          context.addIssue({
            code: 'custom',
            message: `entry ${index + 1} must be workspace:token (workspace: ${WORKSPACE_ID_RULE}; token: ${TOKEN_RULE})`,
          });
          continue;
        }
        keys.push({ workspaceId, token });
      }
      return keys;
    })
    .optional(),
  NODE_ENV: z
    .enum(['development', 'production', 'test'], { message: 'must be development, production or test' })
    .default('development'),
  LOG_LEVEL: z.enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  MEMSTORE_GRAPHIQL: booleanSetting.optional(),
  MEMSTORE_INTROSPECTION: booleanSetting.optional(),
  MEMSTORE_RATE_LIMIT_PER_SECOND: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a number of requests per second, 0 or more (0 turns rate limiting off)')
    .transform(Number)
    .default(DEFAULT_RATE_LIMIT_PER_SECOND),
  MEMSTORE_RATE_LIMIT_BURST: z
    .string()
    .regex(/^[1-9]\d{0,6}$/, 'must be a whole number from 1 to 9999999')
    .transform(Number)
    .default(DEFAULT_RATE_LIMIT_BURST),
  MEMSTORE_CORS_ORIGINS: z
    .string()
    .transform((value, context): CorsOrigins => {
      const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
      if (entries.length === 1 && entries[0] === '*') return '*';
      const wrong = entries.filter((entry) => !isOrigin(entry));
      if (entries.length === 0 || wrong.length > 0) {
        context.addIssue({
          code: 'custom',
          message: `must be * or a comma-separated list of origins such as https://dashboard.example.com or http://localhost:5173 (scheme, host and port only)${wrong.length > 0 ? `; not origins: ${wrong.join(', ')}` : ''}`,
        });
      }
      return entries;
    })
    .optional(),
  MEMSTORE_PERSISTED_DOCUMENTS: z.string().min(1).optional(),
  MEMSTORE_PERSISTED_DOCUMENTS_ONLY: booleanSetting.optional(),
  MEMSTORE_METRICS_TOKEN: z.string().regex(/^[A-Za-z0-9\-._~+/=]{16,256}$/, METRICS_TOKEN_RULE).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl('http://127.0.0.1:4318').optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl('http://127.0.0.1:4318/v1/traces').optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('memstore'),
  OTEL_SDK_DISABLED: booleanSetting.optional(),
  MEMSTORE_REQUEST_TIMEOUT_MS: z
    .string()
    .regex(/^\d+$/, 'must be a whole number of milliseconds from 100 to 600000')
    .transform(Number)
    .pipe(z.number().int().min(100, 'must be a whole number of milliseconds from 100 to 600000').max(600_000, 'must be a whole number of milliseconds from 100 to 600000'))
    .default(DEFAULT_REQUEST_TIMEOUT_MS),
  MEMSTORE_DB_POOL_SIZE: z
    .string()
    .regex(/^[1-9]\d{0,2}$/, 'must be a whole number of connections from 1 to 999')
    .transform(Number)
    .default(DEFAULT_DB_POOL_SIZE),
  MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY: z
    .string()
    .regex(/^[1-9]\d{0,5}$/, 'must be a whole number from 1 to 999999')
    .transform(Number)
    .default(DEFAULT_MAX_SUBSCRIPTIONS_PER_KEY),
  MEMSTORE_EVENT_RETENTION_DAYS: z
    .string()
    .regex(/^[1-9]\d{0,3}$/, 'must be a whole number of days from 1 to 9999')
    .transform(Number)
    .default(DEFAULT_EVENT_RETENTION_DAYS),
  REDIS_URL: z
    .string()
    .refine((value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
      } catch {
        return false;
      }
    }, 'must be a redis:// or rediss:// URL with a host, e.g. redis://127.0.0.1:6379')
    .optional(),
});

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Parses the environment; throws a ConfigError naming every problem. Empty variables count as unset. */
export function loadConfig(environment: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(
    Object.entries(environment).filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = environmentSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`),
    );
  }
  const env = parsed.data;
  if (env.MEMSTORE_PERSISTED_DOCUMENTS_ONLY && !env.MEMSTORE_PERSISTED_DOCUMENTS) {
    throw new ConfigError(['MEMSTORE_PERSISTED_DOCUMENTS_ONLY: needs MEMSTORE_PERSISTED_DOCUMENTS, the file of the documents that may run']);
  }
  return {
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL,
    dataDir: env.MEMSTORE_DATA_DIR === IN_MEMORY_DATA_DIR ? IN_MEMORY_DATA_DIR : path.resolve(env.MEMSTORE_DATA_DIR),
    bootstrapKeys: env.MEMSTORE_BOOTSTRAP_KEYS,
    nodeEnv: env.NODE_ENV,
    logLevel: env.LOG_LEVEL,
    graphiql: env.MEMSTORE_GRAPHIQL ?? env.NODE_ENV !== 'production',
    introspection: env.MEMSTORE_INTROSPECTION ?? env.NODE_ENV !== 'production',
    rateLimit:
      env.MEMSTORE_RATE_LIMIT_PER_SECOND === 0
        ? null
        : { perSecond: env.MEMSTORE_RATE_LIMIT_PER_SECOND, burst: env.MEMSTORE_RATE_LIMIT_BURST },
    requestTimeoutMs: env.MEMSTORE_REQUEST_TIMEOUT_MS,
    dbPoolSize: env.MEMSTORE_DB_POOL_SIZE,
    corsOrigins: env.MEMSTORE_CORS_ORIGINS ?? null,
    persistedDocuments: env.MEMSTORE_PERSISTED_DOCUMENTS
      ? { file: path.resolve(env.MEMSTORE_PERSISTED_DOCUMENTS), only: env.MEMSTORE_PERSISTED_DOCUMENTS_ONLY ?? false }
      : null,
    metrics: env.MEMSTORE_METRICS_TOKEN ? { token: env.MEMSTORE_METRICS_TOKEN } : env.NODE_ENV === 'production' ? null : { token: null },
    tracing: tracingSettings(env),
    maxSubscriptionsPerKey: env.MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY,
    eventRetentionDays: env.MEMSTORE_EVENT_RETENTION_DAYS,
    redisUrl: env.REDIS_URL,
  };
}

/** OTLP/HTTP as OpenTelemetry's variables say: the traces endpoint as it is, else the endpoint's /v1/traces. */
function tracingSettings(env: z.infer<typeof environmentSchema>): TracingSettings | null {
  if (env.OTEL_SDK_DISABLED) return null;
  const tracesUrl = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (tracesUrl === undefined) return null;
  return {
    tracesUrl,
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    serviceName: env.OTEL_SERVICE_NAME,
  };
}
