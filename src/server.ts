import fs from 'node:fs';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import { createApp, eventHubOf, socketAdmissionOf, type AppOptions } from './app.js';
import { requestListenerOf } from './http/native-front.js';
import { ConfigError, loadConfig } from './config.js';
import { createDb } from './db/client.js';
import { describeDatabaseOpenFailure } from './db/open-errors.js';
import { HTTP_HEADERS_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS, HTTP_RECEIVE_TIMEOUT_MS } from './domain/limits.js';
import { PersistedDocuments, PersistedDocumentsError } from './http/persisted-documents.js';
import { openSharedLimits } from './http/shared-limits.js';
import { startTracing } from './http/tracing.js';
import { attachWebSocket } from './http/websocket.js';
import { describeListenFailure } from './listen-errors.js';
import { createLogger } from './logger.js';
import { missingNodeFlags } from './node-flags.js';
import { checkDevelopmentKey, databaseLabel, ensureApiKeys, reportDevelopmentKey } from './startup.js';

/**
 * SIGTERM/SIGINT: in-flight requests get this long to finish, then their connections are
 * closed; the process exits within SHUTDOWN_EXIT_MS of the signal whatever happens (a
 * container runtime usually kills it after 10 s).
 */
const SHUTDOWN_DRAIN_MS = 7_000;
const SHUTDOWN_EXIT_MS = 9_500;
/** While draining, connections that fall idle (keep-alive, between requests) are closed this often. */
const SHUTDOWN_IDLE_SWEEP_MS = 50;

/**
 * How far, in percent, the JavaScript heap may grow past what the last full garbage
 * collection kept before the next one starts. Under steady load a request that reads the
 * database leaves about 2 KB in the old generation (measured with --trace-gc-nvp; the
 * benchmark's hand-written baseline, 3.6 KB), which only a full collection frees. The factor
 * trades the process's memory against how often those full collections pause it, and each
 * pause holds up every request in flight: with V8's own factor for a heap of this size (up
 * to 4×) memory swings by 100 MB and more every few seconds; at 1.5× it stays within about
 * 10 MB of the idle size, but full collections come five times as often and the slowest
 * requests wait for them (one-memory reads at 32 connections, when each left 4–5 KB: p99
 * 53–64 ms, against 24–25 with V8's factor; 35–49 ms at 2×). At 2× the heap takes longer to
 * reach the size it then keeps: in the two-minute runs of `npm run bench -- --long`, RSS
 * grew up to 24 % (README, "Memory").
 */
export const HEAP_GROWING_PERCENT = 100;

/** The V8 flag main() sets: none when node was started with its own `--heap-growing-percent`. */
export function heapGrowingFlag(execArgv: readonly string[]): string | null {
  return execArgv.some((argument) => /^--heap[-_]growing[-_]percent(=|$)/.test(argument)) ? null : `--heap-growing-percent=${HEAP_GROWING_PERCENT}`;
}

/** Starts the server as configured by the environment; `app` overrides options of the app (the benchmark compares them). */
export async function main(app: Pick<AppOptions, 'leanPath'> = {}): Promise<void> {
  const heapFlag = heapGrowingFlag(process.execArgv);
  if (heapFlag) v8.setFlagsFromString(heapFlag);
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  const missingFlags = missingNodeFlags(process.execArgv);
  if (config.nodeEnv === 'production' && missingFlags.length > 0) {
    logger.warn('node was started without the flags that fix the size of its young generation, which then follows load (README, "Running in production")', { missing: missingFlags });
  }
  let persistedDocuments = null;
  try {
    persistedDocuments = config.persistedDocuments ? PersistedDocuments.load(config.persistedDocuments.file, config.persistedDocuments.only) : null;
  } catch (error) {
    if (!(error instanceof PersistedDocumentsError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }

  let database;
  try {
    database = await createDb({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      statementTimeoutMs: config.requestTimeoutMs,
      poolSize: config.dbPoolSize,
      afterMigrate: (db) => ensureApiKeys(db, config, logger),
    });
  } catch (error) {
    const reason = describeDatabaseOpenFailure(error, config.databaseUrl);
    if (reason === null) throw error;
    process.stderr.write(`memstore cannot start: ${reason}\n`);
    process.exit(1);
  }

  // Outside production: which key file belongs to this database, and whether its key works.
  const keyCheck = config.nodeEnv === 'production' ? null : await checkDevelopmentKey(database.db, config);
  reportDevelopmentKey(keyCheck, databaseLabel(config), logger);
  const developmentKey = keyCheck?.token ?? null;
  // The OpenTelemetry SDK is loaded only when traces are exported.
  const tracing = config.tracing ? await startTracing(config.tracing, packageVersion()) : null;
  if (config.tracing) logger.info('exporting traces', { url: config.tracing.tracesUrl, protocol: config.tracing.protocol });
  const sharedLimits = config.redisUrl ? openSharedLimits(config.redisUrl, config.rateLimit, config.maxSubscriptionsPerKey, logger) : null;
  const yoga = createApp({ config, database, logger, developmentKey, persistedDocuments, tracing, sharedLimits, ...app });
  const server = createServer(requestListenerOf(yoga));
  // graphql-ws on the same port and path (/graphql).
  const webSocket = attachWebSocket(server, yoga, socketAdmissionOf(yoga), logger);
  // Slow senders (slowloris) hold a socket only so long.
  server.headersTimeout = HTTP_HEADERS_TIMEOUT_MS;
  server.requestTimeout = HTTP_RECEIVE_TIMEOUT_MS;
  // Idle keep-alive connections stay open longer than clients usually keep theirs: a client
  // reusing a connection the server is just closing would see ECONNRESET.
  server.keepAliveTimeout = HTTP_KEEP_ALIVE_TIMEOUT_MS;

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down: finishing in-flight requests', { signal, drainMs: SHUTDOWN_DRAIN_MS });
    // A keep-alive connection is idle between two requests: close each one as soon as its
    // request is answered, so that a client holding one open does not hold up the exit.
    const sweep = setInterval(() => server.closeIdleConnections(), SHUTDOWN_IDLE_SWEEP_MS);
    sweep.unref();
    const drainOver = setTimeout(() => {
      logger.warn('drain deadline passed: closing remaining connections', { drainMs: SHUTDOWN_DRAIN_MS });
      server.closeAllConnections();
    }, SHUTDOWN_DRAIN_MS);
    drainOver.unref();
    const giveUp = setTimeout(() => {
      logger.error('could not stop in time: exiting', { exitMs: SHUTDOWN_EXIT_MS });
      process.exit(1);
    }, SHUTDOWN_EXIT_MS);
    giveUp.unref();
    // Open streams end now: they would hold the server past its drain deadline.
    void webSocket.close();
    void eventHubOf(yoga).close();
    void sharedLimits?.close();
    server.close(async () => {
      clearInterval(sweep);
      clearTimeout(drainOver);
      try {
        await tracing?.shutdown();
        await database.close();
        logger.info('stopped', { signal });
        process.exit(0);
      } catch (error) {
        logger.error('error while closing the database', { error });
        process.exit(1);
      }
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  server.on('error', async (error: NodeJS.ErrnoException) => {
    process.stderr.write(`memstore cannot start: ${describeListenFailure(error, config.host, config.port)}\n`);
    await database.close();
    process.exit(1);
  });
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = `http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}/graphql`;
    logger.info('listening', { url, database: database.kind, graphiql: config.graphiql });
    if (config.graphiql) process.stdout.write(`\nmemstore is ready: open ${url} for GraphiQL.\n\n`);
  });
}

/** memstore's version, from the package.json beside src/ (and dist/). */
function packageVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function failedToStart(error: unknown): never {
  process.stderr.write(`memstore failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
}

// Run as the program (not imported by the benchmark's variants).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main().catch(failedToStart);
