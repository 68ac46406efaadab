import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { createEventHub, createSocketAdmission, keepAppParts, type AppOptions } from './app-options.js';
import { createContextFactory, type Context } from './context.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, MAX_REQUEST_BODY_BYTES } from './domain/limits.js';
import { maskError } from './graphql/error-masking.js';
import { printSchemaSdl, schema } from './graphql/schema.js';
import { corsSetting } from './http/cors.js';
import { useForwardRest } from './http/forward-rest.js';
import { graphiqlSetting, renderGraphiQL, useGraphiQLAssets } from './http/graphiql.js';
import { useLeanPath } from './http/lean-path.js';
import { attachNativeFront } from './http/native-front.js';
import { Metrics, useMetricsRoute } from './http/metrics.js';
import { createPipeline } from './http/pipeline.js';
import { RateLimiter } from './http/rate-limit.js';
import { useReadiness } from './http/readiness.js';
import { useSchemaFile } from './http/schema-file.js';
import { createTelemetry } from './http/telemetry.js';
import { yogaLogging } from './http/request-log.js';
import { yogaContext, yogaStages } from './http/yoga-stages.js';
import { useSubscriptionStages } from './http/subscriptions.js';
import { silentLogger } from './logger.js';

export type { AppOptions } from './app-options.js';
export { eventHubOf, socketAdmissionOf } from './app-options.js';

export type App = YogaServerInstance<Record<string, never>, Context>;

/**
 * The Yoga instance: /graphql (GraphiQL when enabled), /healthz, /readyz, /schema.graphql, /metrics (when configured), the Forward REST API (http/forward-rest.ts).
 * GraphQL requests pass http/pipeline.ts's stages on the lean path or through Yoga. Tests call `app.fetch`; src/server.ts listens through the native front.
 */
export function createApp(options: AppOptions): App {
  const { config, database } = options;
  const logger = options.logger ?? silentLogger;
  const introspection = config.introspection ?? config.nodeEnv !== 'production';
  // Left out of the config: no /metrics, and nothing is counted.
  const hub = createEventHub(options, logger);
  const metrics = config.metrics ? new Metrics(database.watchPool?.(), () => hub.use()) : null;
  const contexts = createContextFactory(database, { singleStatement: options.singleStatementWrites !== false });
  const pipeline = createPipeline({
    schema,
    introspection,
    maxBodyBytes: MAX_REQUEST_BODY_BYTES,
    timeoutMs: config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    db: database.db,
    contexts,
    rateLimiter: options.sharedLimits?.rateLimiter ?? (config.rateLimit ? new RateLimiter(config.rateLimit, options.clock) : null),
    logger,
    run: options.compiledReads === false ? undefined : database.run,
    runRaw: database.runRaw,
    onStage: options.onStage,
    persistedDocuments: options.persistedDocuments,
    telemetry: createTelemetry(metrics, options.tracing ?? null),
  });

  const app = createYoga<Record<string, never>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    healthCheckEndpoint: '/healthz',
    landingPage: false,
    logging: yogaLogging(logger),
    graphiql: graphiqlSetting(config.graphiql, options.developmentKey, config.nodeEnv === 'production'),
    renderGraphiQL,
    // No cross-origin access unless configured; never to the GraphiQL page.
    cors: corsSetting(config.corsOrigins ?? null),
    // A trusted document's id, sent instead of the query (persisted-documents.ts).
    extraParamNames: ['documentId'],
    maskedErrors: { maskError: (error, message) => maskError(error, message) },
    // Batched operations (a JSON array) are refused with 400 BAD_REQUEST.
    batching: false,
    // The pipeline parses and validates, with one cache for both paths.
    parserAndValidationCache: false,
    plugins: [
      ...yogaStages(pipeline, {
        routes: [
          useSchemaFile(printSchemaSdl()),
          ...(metrics && config.metrics ? [useMetricsRoute(metrics, config.metrics)] : []),
          useForwardRest(pipeline),
          ...(config.graphiql ? [useGraphiQLAssets()] : []),
        ],
        leanPath: options.leanPath === false ? null : useLeanPath(pipeline),
      }),
      useReadiness(database.ping, logger),
      useSubscriptionStages(pipeline, contexts, hub),
    ],
    // Resolvers get their context from the pipeline's `execute`, once the key is identified.
    context: yogaContext(pipeline) as never,
  });
  keepAppParts(app, { hub, sockets: createSocketAdmission(options, hub) });
  attachNativeFront(app, pipeline, options.leanPath !== false);
  return app;
}
