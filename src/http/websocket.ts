import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { GraphQLError, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocket, WebSocketServer } from 'ws';
import { MAX_REQUEST_BODY_BYTES, STREAM_KEEP_ALIVE_MS } from '../domain/limits.js';
import { maskError } from '../graphql/error-masking.js';
import type { Logger } from '../logger.js';
import { webSocketOutlet } from './outlets.js';

/**
 * graphql-ws over WebSocket on /graphql, beside Yoga's HTTP. Each operation a socket sends
 * becomes a request of its own, carrying the key of `connection_init`'s payload
 * (`{ "authorization": "Bearer msk_…" }`) as its Authorization header, and runs through
 * Yoga's envelope: the same parsing, validation, admission, cost, identification, access
 * policy and masking as over HTTP; a stream's events are then written to the socket directly
 * (direct-delivery.ts). A socket is pinged every STREAM_KEEP_ALIVE_MS; a consumer that stops
 * reading (more than STREAM_BUFFER_BYTES unsent) has its streams cut off.
 */

interface Enveloped {
  getEnveloped(initial: Record<string, unknown>): {
    schema: ExecutionArgs['schema'];
    execute: (args: ExecutionArgs) => unknown;
    subscribe: (args: ExecutionArgs) => unknown;
    contextFactory: () => unknown;
    parse: (source: string) => ExecutionArgs['document'];
    validate: (schema: ExecutionArgs['schema'], document: ExecutionArgs['document']) => readonly GraphQLError[];
  };
}

export interface WebSocketTransport {
  /** Closes every socket (shutdown) and stops accepting new ones. */
  close(): Promise<void>;
}

const ORIGIN = 'http://memstore.invalid';

export function attachWebSocket(server: Server, app: Enveloped, logger: Logger): WebSocketTransport {
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_REQUEST_BODY_BYTES });
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(request.url ?? '/', ORIGIN).pathname;
    if (path !== '/graphql') {
      socket.destroy();
      return;
    }
    sockets.handleUpgrade(request, socket, head, (ws) => sockets.emit('connection', ws, request));
  };
  server.on('upgrade', onUpgrade);

  sockets.on('connection', (ws: WebSocket) => {
    const ping = setInterval(() => ws.ping(), STREAM_KEEP_ALIVE_MS);
    ping.unref();
    ws.on('close', () => clearInterval(ping));
  });

  const disposable = useServer(
    {
      execute: (args) => (args.rootValue as { execute: (args: ExecutionArgs) => never }).execute(args),
      subscribe: (args) => (args.rootValue as { subscribe: (args: ExecutionArgs) => never }).subscribe(args),
      onSubscribe: async (context, id, payload) => {
        const authorization = context.connectionParams?.authorization;
        const headers = new Headers({ 'content-type': 'application/json' });
        if (typeof authorization === 'string') headers.set('authorization', authorization);
        const request = new Request(`${ORIGIN}/graphql`, { method: 'POST', headers });
        const ws = context.extra.socket as WebSocket;
        try {
          const enveloped = app.getEnveloped({ request, params: payload, outlet: webSocketOutlet(ws, (ws as unknown as { _socket?: Socket })._socket, id) });
          const document = enveloped.parse(payload.query);
          const errors = enveloped.validate(enveloped.schema, document);
          if (errors.length > 0) return errors.map((error) => maskError(error));
          const contextValue = await enveloped.contextFactory();
          return {
            schema: enveloped.schema,
            document,
            operationName: payload.operationName,
            variableValues: payload.variables,
            contextValue,
            rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
          } as ExecutionArgs;
        } catch (error) {
          const masked = maskError(error);
          if (!(error instanceof GraphQLError)) logger.error('websocket: an operation could not start', { error });
          return [masked];
        }
      },
    },
    sockets,
  );

  return {
    async close() {
      server.off('upgrade', onUpgrade);
      for (const ws of sockets.clients) ws.terminate();
      await disposable.dispose();
    },
  };
}
