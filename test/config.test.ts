import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { DEFAULT_DB_POOL_SIZE } from '../src/db/client.js';
import { DEFAULT_RATE_LIMIT_BURST, DEFAULT_RATE_LIMIT_PER_SECOND, DEFAULT_REQUEST_TIMEOUT_MS } from '../src/domain/limits.js';

const validToken = `msk_${'a'.repeat(40)}`;

describe('configuration', () => {
  it('has working defaults for a newcomer', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 4000, host: '127.0.0.1', databaseUrl: undefined, nodeEnv: 'development', logLevel: 'info', graphiql: true });
    expect(config.dataDir).toMatch(/\.data$/);
  });

  it('lists every problem at once', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'abc', DATABASE_URL: 'nope', LOG_LEVEL: 'loud', NODE_ENV: 'staging', MEMSTORE_BOOTSTRAP_KEYS: 'x', MEMSTORE_GRAPHIQL: 'maybe' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((problem) => problem.split(':')[0])).toEqual(
      expect.arrayContaining(['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'NODE_ENV', 'MEMSTORE_BOOTSTRAP_KEYS', 'MEMSTORE_GRAPHIQL']),
    );
    expect(problems).toHaveLength(6);
  });

  it('refuses ports outside 0..65535', () => {
    expect(() => loadConfig({ PORT: '65536' })).toThrow(/PORT/);
    expect(() => loadConfig({ PORT: '-1' })).toThrow(/PORT/);
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
  });

  it('parses bootstrap keys and refuses malformed entries by position', () => {
    const config = loadConfig({ MEMSTORE_BOOTSTRAP_KEYS: `alpha:${validToken}, beta:${validToken.replace('a', 'b')}` });
    expect(config.bootstrapKeys).toEqual([
      { workspaceId: 'alpha', token: validToken },
      { workspaceId: 'beta', token: validToken.replace('a', 'b') },
    ]);
    expect(() => loadConfig({ MEMSTORE_BOOTSTRAP_KEYS: `alpha:${validToken},beta:msk_short` })).toThrow(/entry 2/);
  });

  it('switches GraphiQL off in production unless asked for', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).graphiql).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', MEMSTORE_GRAPHIQL: 'true' }).graphiql).toBe(true);
  });

  it('switches introspection and name suggestions off in production unless asked for', () => {
    expect(loadConfig({}).introspection).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production' }).introspection).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', MEMSTORE_INTROSPECTION: '1' }).introspection).toBe(true);
    expect(loadConfig({ MEMSTORE_INTROSPECTION: 'false' }).introspection).toBe(false);
  });

  it('rate-limits each key by default, and turns the limit off at 0 requests per second', () => {
    expect(loadConfig({}).rateLimit).toEqual({ perSecond: DEFAULT_RATE_LIMIT_PER_SECOND, burst: DEFAULT_RATE_LIMIT_BURST });
    expect(loadConfig({ MEMSTORE_RATE_LIMIT_PER_SECOND: '2.5', MEMSTORE_RATE_LIMIT_BURST: '7' }).rateLimit).toEqual({ perSecond: 2.5, burst: 7 });
    expect(loadConfig({ MEMSTORE_RATE_LIMIT_PER_SECOND: '0' }).rateLimit).toBeNull();
    expect(() => loadConfig({ MEMSTORE_RATE_LIMIT_PER_SECOND: '-1' })).toThrow(/MEMSTORE_RATE_LIMIT_PER_SECOND/);
    expect(() => loadConfig({ MEMSTORE_RATE_LIMIT_BURST: '0' })).toThrow(/MEMSTORE_RATE_LIMIT_BURST/);
  });

  it('takes a request time limit from 100 ms to 10 minutes', () => {
    expect(loadConfig({}).requestTimeoutMs).toBe(DEFAULT_REQUEST_TIMEOUT_MS);
    expect(loadConfig({ MEMSTORE_REQUEST_TIMEOUT_MS: '100' }).requestTimeoutMs).toBe(100);
    expect(loadConfig({ MEMSTORE_REQUEST_TIMEOUT_MS: '600000' }).requestTimeoutMs).toBe(600_000);
    expect(() => loadConfig({ MEMSTORE_REQUEST_TIMEOUT_MS: '99' })).toThrow(/MEMSTORE_REQUEST_TIMEOUT_MS/);
    expect(() => loadConfig({ MEMSTORE_REQUEST_TIMEOUT_MS: '600001' })).toThrow(/MEMSTORE_REQUEST_TIMEOUT_MS/);
  });

  it('takes a database pool of 1 to 999 connections', () => {
    expect(loadConfig({}).dbPoolSize).toBe(DEFAULT_DB_POOL_SIZE);
    expect(loadConfig({ MEMSTORE_DB_POOL_SIZE: '1' }).dbPoolSize).toBe(1);
    expect(loadConfig({ MEMSTORE_DB_POOL_SIZE: '999' }).dbPoolSize).toBe(999);
    // Empty is unset, as for every setting.
    expect(loadConfig({ MEMSTORE_DB_POOL_SIZE: '' }).dbPoolSize).toBe(DEFAULT_DB_POOL_SIZE);
    for (const value of ['0', '1000', '-1', '2.5', 'ten', ' 5']) expect(() => loadConfig({ MEMSTORE_DB_POOL_SIZE: value }), value).toThrow(/MEMSTORE_DB_POOL_SIZE: must be a whole number of connections from 1 to 999/);
  });

  it('keeps memory:// as an in-memory database and accepts postgres URLs', () => {
    expect(loadConfig({ MEMSTORE_DATA_DIR: 'memory://' }).dataDir).toBe('memory://');
    expect(loadConfig({ DATABASE_URL: 'postgresql://u@db:5432/x' }).databaseUrl).toBe('postgresql://u@db:5432/x');
  });
});

describe('configuration edges', () => {
  it('refuses an empty bootstrap list, odd workspace names and non-PostgreSQL URLs; treats empty variables as unset', () => {
    expect(() => loadConfig({ MEMSTORE_BOOTSTRAP_KEYS: ' , ' })).toThrow(ConfigError);
    expect(loadConfig({ PORT: '', NODE_ENV: '', LOG_LEVEL: '' })).toMatchObject({ port: 4000, nodeEnv: 'development', logLevel: 'info' });
    expect(() => loadConfig({ MEMSTORE_BOOTSTRAP_KEYS: `_ws:${validToken}` })).toThrow(/entry 1/);
    expect(() => loadConfig({ MEMSTORE_BOOTSTRAP_KEYS: `${'w'.repeat(64)}:${validToken}` })).toThrow(/entry 1/);
    expect(() => loadConfig({ DATABASE_URL: 'http://db:5432/x' })).toThrow(/DATABASE_URL/);
  });

  it('allows no cross-origin access unless MEMSTORE_CORS_ORIGINS lists origins, or says *', () => {
    expect(loadConfig({}).corsOrigins).toBeNull();
    expect(loadConfig({ MEMSTORE_CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(loadConfig({ MEMSTORE_CORS_ORIGINS: 'https://a.example, http://localhost:5173' }).corsOrigins).toEqual(['https://a.example', 'http://localhost:5173']);
    for (const wrong of ['https://a.example/', 'https://a.example/path', 'a.example', 'ftp://a.example', '*,https://a.example', ',']) {
      expect(() => loadConfig({ MEMSTORE_CORS_ORIGINS: wrong }), wrong).toThrow(/MEMSTORE_CORS_ORIGINS: must be \* or a comma-separated list of origins/);
    }
  });

  it('reads the trusted documents\' file and only-mode, and refuses only-mode without a file', () => {
    expect(loadConfig({}).persistedDocuments).toBeNull();
    expect(loadConfig({ MEMSTORE_PERSISTED_DOCUMENTS: 'docs.json' }).persistedDocuments).toEqual({ file: expect.stringMatching(/\/docs\.json$/), only: false });
    expect(loadConfig({ MEMSTORE_PERSISTED_DOCUMENTS: 'docs.json', MEMSTORE_PERSISTED_DOCUMENTS_ONLY: 'true' }).persistedDocuments?.only).toBe(true);
    expect(() => loadConfig({ MEMSTORE_PERSISTED_DOCUMENTS_ONLY: 'true' })).toThrow(/needs MEMSTORE_PERSISTED_DOCUMENTS/);
  });
  it('opens /metrics outside production, needs MEMSTORE_METRICS_TOKEN for it in production, and refuses a weak token', () => {
    expect(loadConfig({}).metrics).toEqual({ token: null });
    expect(loadConfig({ NODE_ENV: 'test' }).metrics).toEqual({ token: null });
    expect(loadConfig({ NODE_ENV: 'production' }).metrics).toBeNull();
    const token = 'a'.repeat(16);
    expect(loadConfig({ NODE_ENV: 'production', MEMSTORE_METRICS_TOKEN: token }).metrics).toEqual({ token });
    expect(loadConfig({ MEMSTORE_METRICS_TOKEN: `${'Az09-._~+/='.repeat(23)}abc` }).metrics?.token).toHaveLength(256);
    for (const wrong of ['a'.repeat(15), 'a'.repeat(257), `${'a'.repeat(16)} b`, `${'a'.repeat(16)}"`]) {
      expect(() => loadConfig({ MEMSTORE_METRICS_TOKEN: wrong }), wrong).toThrow(/MEMSTORE_METRICS_TOKEN: must be 16 to 256 characters/);
    }
  });

  it('traces only with an OTLP endpoint: its /v1/traces, or the traces endpoint as it is, over http/protobuf unless http/json is asked for', () => {
    expect(loadConfig({}).tracing).toBeNull();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' }).tracing).toEqual({
      tracesUrl: 'http://127.0.0.1:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'memstore',
    });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example/otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'memstore-eu' }).tracing,
    ).toEqual({ tracesUrl: 'https://collector.example/otlp/v1/traces', protocol: 'http/json', serviceName: 'memstore-eu' });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:9999/traces', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }).tracing,
    ).toMatchObject({ tracesUrl: 'http://b:9999/traces', protocol: 'http/json' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeNull();
    let error: unknown;
    try {
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    } catch (caught) {
      error = caught;
    }
    expect((error as ConfigError).problems).toEqual([
      'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL, e.g. http://127.0.0.1:4318',
      'OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json (memstore exports traces over OTLP/HTTP; grpc is not supported)',
    ]);
  });
});
