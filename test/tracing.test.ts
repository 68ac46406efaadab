import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import { memoryStores } from '../src/db/schema.js';
import { startTracing, type Tracing } from '../src/http/tracing.js';
import { startServerProcess } from './support/process.js';
import { TestClient, useTestServer } from './support/server.js';

const server = useTestServer();

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: number | string } }[];
  status?: { code?: number; message?: string };
}

/** SpanKind in OTLP: 1 internal, 2 server, 3 client. */
const SERVER = 2;
const INTERNAL = 1;
const CLIENT = 3;

/** A local OTLP/HTTP receiver: keeps each export request's content type and body. */
class Receiver {
  readonly exports: { contentType: string; body: Buffer }[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.method === 'POST' && request.url === '/v1/traces') this.exports.push({ contentType: request.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Every span received in JSON exports. */
  spans(): OtlpSpan[] {
    return this.exports
      .filter((entry) => entry.contentType.startsWith('application/json'))
      .flatMap((entry) => (JSON.parse(entry.body.toString()) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans)
      .flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans));
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((entry) => entry.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
};

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const CREATE = 'mutation TraceCreate($name: String!) { createMemoryStore(input: { name: $name }) { __typename ... on CreateMemoryStoreSuccess { memoryStore { id } } } }';
const LIST = 'query TraceStores { memoryStores(first: 5) { totalCount edges { node { id name } } } }';

describe('traces over OTLP/HTTP', () => {
  const receiver = new Receiver();
  let tracing: Tracing;

  beforeAll(async () => {
    await receiver.start();
    tracing = await startTracing({ tracesUrl: `${receiver.url}/v1/traces`, protocol: 'http/json', serviceName: 'memstore-test' }, 'test');
  });
  afterAll(async () => {
    await tracing.shutdown();
    await receiver.stop();
  });

  it('continues the client\'s traceparent: request span → operation span → one span per SQL statement, on both request paths', async () => {
    for (const leanPath of [true, false]) {
      const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, tracing, leanPath });
      const admin = await server.newWorkspace();
      const client = new TestClient(app, admin.token, admin.workspaceId);
      const traceId = hex(16);
      const clientSpanId = hex(8);
      const content = `a secret name ${hex(4)}`;
      const created = await client.send({ query: CREATE, variables: { name: content } }, { traceparent: `00-${traceId}-${clientSpanId}-01` });
      expect(created.data.createMemoryStore.__typename).toBe('CreateMemoryStoreSuccess');
      await tracing.flush();

      const spans = receiver.spans().filter((span) => span.traceId === traceId);
      const request = spans.find((span) => span.kind === SERVER)!;
      expect(request, `lean path ${leanPath}`).toBeDefined();
      expect(request.parentSpanId).toBe(clientSpanId);
      expect(request.name).toBe('POST /graphql');
      expect(attribute(request, 'http.response.status_code')).toBe(200);
      expect(attribute(request, 'memstore.workspace_id')).toBe(admin.workspaceId);

      const operation = spans.find((span) => span.kind === INTERNAL)!;
      expect(operation.name).toBe('mutation TraceCreate');
      expect(operation.parentSpanId).toBe(request.spanId);
      expect(attribute(operation, 'graphql.operation.name')).toBe('TraceCreate');

      const statements = spans.filter((span) => span.kind === CLIENT);
      expect(statements.length).toBeGreaterThanOrEqual(2);
      for (const statement of statements) {
        expect(statement.parentSpanId).toBe(operation.spanId);
        expect(attribute(statement, 'db.system.name')).toBe('postgresql');
        expect(String(attribute(statement, 'db.query.text'))).toMatch(/api_keys|memory_stores|memory_events/);
      }
      // Statements carry their text with placeholders: neither the values nor the key.
      expect(JSON.stringify(spans)).not.toContain(content);
      expect(JSON.stringify(spans)).not.toContain(admin.token!);
      expect(spans).toHaveLength(2 + statements.length);
      // The store exists, once.
      const rows = await server.db.select().from(memoryStores).where(eq(memoryStores.workspaceId, admin.workspaceId));
      expect(rows.map((row) => row.name)).toEqual([content]);
    }
  });

  it('starts a new trace without a valid traceparent, and follows a client\'s decision not to sample', async () => {
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, tracing });
    const admin = await server.newWorkspace();
    const client = new TestClient(app, admin.token, admin.workspaceId);
    const before = new Set(receiver.spans().map((span) => span.spanId));
    const unsampledTrace = hex(16);
    const malformedTrace = hex(16);
    expect((await client.send({ query: LIST }, { traceparent: `00-${unsampledTrace}-${hex(8)}-00` })).status).toBe(200);
    expect((await client.send({ query: LIST }, { traceparent: `00-${malformedTrace}-zz-01` })).status).toBe(200);
    expect((await client.send({ query: LIST })).status).toBe(200);
    await tracing.flush();
    const spans = receiver.spans().filter((span) => !before.has(span.spanId));
    expect(spans.some((span) => span.traceId === unsampledTrace)).toBe(false);
    expect(spans.some((span) => span.traceId === malformedTrace)).toBe(false);
    const roots = spans.filter((span) => span.kind === SERVER);
    expect(roots).toHaveLength(2);
    for (const root of roots) {
      expect(root.parentSpanId ?? '').toBe('');
      // The compiled read: its one statement answers, under the operation.
      const operation = spans.find((span) => span.parentSpanId === root.spanId)!;
      expect(operation.name).toBe('query TraceStores');
      expect(spans.filter((span) => span.parentSpanId === operation.spanId).length).toBeGreaterThanOrEqual(1);
    }
    expect(new Set(roots.map((root) => root.traceId)).size).toBe(2);
  });

  it('marks a failed request: 401 on the request span, the operation span failed with UNAUTHENTICATED', async () => {
    const app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database: server.database.handle, tracing });
    const traceId = hex(16);
    const refused = await new TestClient(app, `msk_${'x'.repeat(40)}`, '').send({ query: LIST }, { traceparent: `00-${traceId}-${hex(8)}-01` });
    expect(refused.status).toBe(401);
    await tracing.flush();
    const spans = receiver.spans().filter((span) => span.traceId === traceId);
    const request = spans.find((span) => span.kind === SERVER)!;
    expect(attribute(request, 'http.response.status_code')).toBe(401);
    expect(attribute(request, 'memstore.workspace_id')).toBeUndefined();
    const operation = spans.find((span) => span.kind === INTERNAL)!;
    expect(operation.status).toMatchObject({ code: 2, message: 'UNAUTHENTICATED' });
  });
});

describe('a server process with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('exports the spans of its requests over OTLP/HTTP, protobuf by default and JSON when asked, and flushes them as it stops', { timeout: 60_000 }, async () => {
    for (const protocol of ['http/protobuf', 'http/json'] as const) {
      const receiver = new Receiver();
      await receiver.start();
      const token = `msk_${'T'.repeat(40)}`;
      const process = startServerProcess({
        MEMSTORE_DATA_DIR: 'memory://',
        MEMSTORE_BOOTSTRAP_KEYS: `traced:${token}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        ...(server.database.url ? { DATABASE_URL: server.database.url } : {}),
      });
      try {
        const url = await process.ready;
        const traceId = hex(16);
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, traceparent: `00-${traceId}-${hex(8)}-01` },
          body: JSON.stringify({ query: LIST }),
        });
        expect(response.status).toBe(200);
        process.child.kill('SIGTERM');
        expect(await process.exited).toBe(0);
        const exported = receiver.exports.filter((entry) => entry.body.length > 0);
        expect(exported.length, process.stderr()).toBeGreaterThan(0);
        if (protocol === 'http/json') {
          expect(receiver.spans().filter((span) => span.traceId === traceId).map((span) => span.kind).sort()).toEqual(
            expect.arrayContaining([INTERNAL, SERVER, CLIENT]),
          );
        } else {
          expect(exported.every((entry) => entry.contentType === 'application/x-protobuf')).toBe(true);
          // Protobuf carries the trace id as its 16 bytes.
          expect(exported.some((entry) => entry.body.includes(Buffer.from(traceId, 'hex')))).toBe(true);
        }
      } finally {
        if (process.child.exitCode === null) process.child.kill('SIGKILL');
        await receiver.stop();
      }
    }
  });
});
