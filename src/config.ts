import path from 'node:path';
import { z } from 'zod';
import {
  DEFAULT_RATE_LIMIT_BURST,
  DEFAULT_RATE_LIMIT_PER_SECOND,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './domain/limits.js';

/** The only module that reads the environment. Every problem is reported at once. */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `MEMSTORE_DATA_DIR=memory://` keeps the embedded database in memory (gone at exit). */
export const IN_MEMORY_DATA_DIR = 'memory://';

const TOKEN_PATTERN = /^msk_[A-Za-z0-9]{40}$/;
const WORKSPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

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
}

export interface RateLimitSettings {
  /** Tokens added to a key's bucket per second. */
  perSecond: number;
  /** The bucket's size: requests a key may send at once after being idle. */
  burst: number;
}

const booleanSetting = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

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
        if (!WORKSPACE_PATTERN.test(workspaceId) || !TOKEN_PATTERN.test(token)) {
          context.addIssue({
            code: 'custom',
            message: `entry ${index + 1} must be workspace:msk_ followed by 40 letters or digits (workspace: 1-63 of [A-Za-z0-9_-])`,
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
  MEMSTORE_REQUEST_TIMEOUT_MS: z
    .string()
    .regex(/^\d+$/, 'must be a whole number of milliseconds from 100 to 600000')
    .transform(Number)
    .pipe(z.number().int().min(100, 'must be a whole number of milliseconds from 100 to 600000').max(600_000, 'must be a whole number of milliseconds from 100 to 600000'))
    .default(DEFAULT_REQUEST_TIMEOUT_MS),
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
  };
}
