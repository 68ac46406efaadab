import type { Attributes, Span } from '@opentelemetry/api';

/**
 * Traces with OpenTelemetry's SDK, exported over OTLP/HTTP, when OTEL_EXPORTER_OTLP_ENDPOINT
 * is set. The SDK and its exporter are imported only then (`startTracing`), so a server
 * without tracing loads none of it and its requests make no span. Spans are linked by
 * passing the parent explicitly (a request's span travels in its RequestState), not through
 * a global context manager: several apps in one process (the tests) keep their own
 * providers, and nothing is registered globally.
 */

export interface TracingSettings {
  /** Where spans are sent: the endpoint's `/v1/traces` (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is). */
  tracesUrl: string;
  /** OTLP's encoding over HTTP: protobuf (the default of OpenTelemetry) or JSON. */
  protocol: 'http/protobuf' | 'http/json';
  /** The `service.name` of the spans (OTEL_SERVICE_NAME, default memstore). */
  serviceName: string;
}

/** The spans of one request, while it is answered. */
export interface RequestSpans {
  request: Span;
  /** Started once the operation is known (the cost stage). */
  operation?: Span;
}

export interface Tracing {
  /** A request's server span: a child of the client's trace when its `traceparent` header is valid, else a new trace's root. */
  startRequest(request: Request, name: string, attributes: Attributes): Span;
  /** A span inside another: `client` for a database statement, `internal` for the GraphQL operation. */
  startChild(parent: Span, name: string, kind: 'internal' | 'client', attributes: Attributes): Span;
  /** Marks a span as failed, with a short message (an error code, never a client's data). */
  fail(span: Span, message: string): void;
  /** Sends the spans not yet sent. */
  flush(): Promise<void>;
  /** Sends the spans not yet sent (waiting at most TRACES_SHUTDOWN_TIMEOUT_MS) and stops the exporter. */
  shutdown(): Promise<void>;
}

/** How long stopping waits for the last spans to be sent: an unreachable collector must not hold a shutdown. */
export const TRACES_SHUTDOWN_TIMEOUT_MS = 2_000;

const headerGetter = {
  keys: (headers: Headers) => [...headers.keys()],
  get: (headers: Headers, key: string) => headers.get(key) ?? undefined,
};

export async function startTracing(settings: TracingSettings, version: string): Promise<Tracing> {
  const [api, core, sdk, resources, exporters] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    settings.protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const exporter = new exporters.OTLPTraceExporter({ url: settings.tracesUrl });
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
    // A client's sampling decision (traceparent's flag) is followed; traces begun here are all kept.
    sampler: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('memstore', version);
  const propagator = new core.W3CTraceContextPropagator();
  const kinds = { internal: api.SpanKind.INTERNAL, client: api.SpanKind.CLIENT };
  return {
    startRequest(request, name, attributes) {
      const parent = propagator.extract(api.ROOT_CONTEXT, request.headers, headerGetter);
      return tracer.startSpan(name, { kind: api.SpanKind.SERVER, attributes }, parent);
    },
    startChild(parent, name, kind, attributes) {
      return tracer.startSpan(name, { kind: kinds[kind], attributes }, api.trace.setSpan(api.ROOT_CONTEXT, parent));
    },
    fail(span, message) {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message });
    },
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => {}),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, TRACES_SHUTDOWN_TIMEOUT_MS);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
