import { createServer } from 'node:http';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { createDb } from './db/client.js';
import { DataDirInUseError } from './db/data-dir-lock.js';
import { HTTP_HEADERS_TIMEOUT_MS, HTTP_KEEP_ALIVE_TIMEOUT_MS, HTTP_RECEIVE_TIMEOUT_MS } from './domain/limits.js';
import { createLogger } from './logger.js';
import { ensureApiKeys, readDevelopmentKey } from './startup.js';

/** How long a SIGTERM waits for in-flight requests before closing them. */
const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
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

  let database;
  try {
    database = await createDb({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      statementTimeoutMs: config.requestTimeoutMs,
      afterMigrate: (db) => ensureApiKeys(db, config, logger),
    });
  } catch (error) {
    if (error instanceof DataDirInUseError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }

  const developmentKey = config.nodeEnv === 'production' ? null : await readDevelopmentKey(database.db, config);
  const app = createApp({ config, database, logger, developmentKey });
  const server = createServer(app);
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
    logger.info('shutting down: finishing in-flight requests', { signal });
    const force = setTimeout(() => {
      logger.warn('grace period over: closing remaining connections', { graceMs: SHUTDOWN_GRACE_MS });
      server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    server.close(async () => {
      try {
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

  server.on('error', async (error) => {
    process.stderr.write(`Cannot listen on ${config.host}:${config.port}: ${error.message}\n`);
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

main().catch((error: unknown) => {
  process.stderr.write(`memstore failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
