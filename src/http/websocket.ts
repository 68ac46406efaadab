import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { GraphQLError, type ExecutionArgs, type ExecutionResult, type GraphQLFormattedError } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocket, WebSocketServer } from 'ws';
import { subjectKey } from '../domain/events.js';
import { KEYLESS_WEBSOCKET_MS, MAX_REQUEST_BODY_BYTES, STREAM_KEEP_ALIVE_MS } from '../domain/limits.js';
import { maskError } from '../graphql/error-masking.js';
import type { Logger } from '../logger.js';
import type { HeldKey, KeyHolder } from '../subscriptions/key-holders.js';
import { webSocketOutlet } from './outlets.js';

/**
 * graphql-ws over WebSocket on /graphql, beside Yoga's HTTP. Each operation a socket sends
 * becomes a request of its own, carrying the key of `connection_init`'s payload
 * (`{ "authorization": "Bearer msk_…" }`) as its Authorization header, and runs through
 * Yoga's envelope: the same parsing, validation, admission, cost, identification, access
 * policy and masking as over HTTP; a stream's events are then written to the socket directly
 * (direct-delivery.ts). A socket is pinged every STREAM_KEEP_ALIVE_MS; a consumer that stops
 * reading (more than STREAM_BUFFER_BYTES unsent) has its streams cut off.
 *
 * What a socket may hold is bounded by its key (SocketAdmission), looked up once at
 * `connection_init`: a socket naming no key is acknowledged as before, so that its operations
 * get their UNAUTHENTICATED answer, and closed KEYLESS_WEBSOCKET_MS later (4401); a key holds
 * at most `maxSocketsPerKey` sockets on the instance, one more is closed at once (4429); when
 * the key cannot be looked up, the socket is closed at once (1013, try again later). A key
 * revoked later has its sockets closed the same way, from the check of keys that ends its
 * streams (with UNAUTHENTICATED, which reaches the client first).
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

/** Which key a socket's `connection_init` names, who checks later whether it is revoked, and how many sockets one key may hold. */
export interface SocketAdmission {
  /** The key an Authorization value names, null when none: missing, malformed, unknown or revoked; rejects when that cannot be told. */
  keyOf(authorization: unknown): Promise<HeldKey | null>;
  /** Has the sockets' keys checked with the streams' (the hub's checkKeys), until the function returned is called. */
  holdKeys(holder: KeyHolder): () => void;
  maxSocketsPerKey: number;
}

/** graphql-ws's close codes for a socket without a key and for one too many (both end a client's retries), and WebSocket's "try again later". */
const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_TOO_MANY = 4429;
const CLOSE_TRY_AGAIN_LATER = 1013;

/**
 * Closes a socket whose key is none or revoked with 4401, KEYLESS_WEBSOCKET_MS from now (once):
 * meanwhile its operations get their UNAUTHENTICATED answers, and its streams the error that
 * ends them, which an immediate close would cut off.
 */
const closing = new WeakSet<WebSocket>();
function closeUnauthorized(ws: WebSocket, reason: string): void {
  if (closing.has(ws)) return;
  closing.add(ws);
  const timer = setTimeout(() => ws.close(CLOSE_UNAUTHORIZED, reason), KEYLESS_WEBSOCKET_MS);
  timer.unref();
  ws.once('close', () => clearTimeout(timer));
}

export interface WebSocketTransport {
  /** Closes every socket (shutdown) and stops accepting new ones. */
  close(): Promise<void>;
}

const ORIGIN = 'http://memstore.invalid';

export function attachWebSocket(server: Server, app: Enveloped, admission: SocketAdmission, logger: Logger): WebSocketTransport {
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_REQUEST_BODY_BYTES });
  // The open sockets of each key, by its workspace and id (subjectKey).
  const keyed = new Map<string, { key: HeldKey; sockets: Set<WebSocket> }>();
  const releaseKeys = admission.holdKeys({
    keys: () => [...keyed.values()].map((held) => held.key),
    revoked(keys) {
      for (const key of keys) for (const ws of keyed.get(subjectKey(key.workspaceId, key.apiKeyId))?.sockets ?? []) closeUnauthorized(ws, 'Unauthorized: the API key was revoked.');
    },
  });
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

  /**
   * An operation's answer, or what it threw (a key no key has, found when the operation is
   * identified) as an answer with that error, masked: graphql-ws would close the whole socket
   * with 4500 for a thrown error.
   */
  const answering = async (run: () => unknown): Promise<never> => {
    try {
      return (await run()) as never;
    } catch (error) {
      if (!(error instanceof GraphQLError)) logger.error('websocket: an operation failed', { error });
      return { errors: [maskError(error)] } as never;
    }
  };

  const disposable = useServer(
    {
      onConnect: async (context) => {
        const ws = context.extra.socket as WebSocket;
        let key: HeldKey | null;
        try {
          key = await admission.keyOf(context.connectionParams?.authorization);
        } catch (error) {
          logger.warn('websocket: the key of a connection could not be looked up', { error });
          ws.close(CLOSE_TRY_AGAIN_LATER, 'The key cannot be checked right now: try again later.');
          return false;
        }
        // Gone while its key was looked up: its close has passed, nothing is held for it.
        if (ws.readyState !== WebSocket.OPEN) return false;
        if (key === null) {
          closeUnauthorized(ws, 'Unauthorized: no API key, or one unknown or revoked.');
          return true;
        }
        const id = subjectKey(key.workspaceId, key.apiKeyId);
        let held = keyed.get(id);
        if ((held?.sockets.size ?? 0) >= admission.maxSocketsPerKey) {
          ws.close(CLOSE_TOO_MANY, `This API key holds ${admission.maxSocketsPerKey} open sockets, the most it may: close one first.`);
          return false;
        }
        if (!held) keyed.set(id, (held = { key, sockets: new Set() }));
        const sockets = held.sockets;
        sockets.add(ws);
        ws.once('close', () => {
          sockets.delete(ws);
          if (sockets.size === 0 && keyed.get(id)?.sockets === sockets) keyed.delete(id);
        });
        return true;
      },
      // What a client reads of errors over WebSocket is what Yoga writes over HTTP: without the
      // `http` extension (the status and headers an HTTP answer takes from them).
      onNext: (_context, _id, _payload, _args, result) => (result.errors?.length || result.extensions?.http ? withoutHttpExtensions(result) : undefined),
      onError: (_context, _id, _payload, errors) => errors.map(formattedWithoutHttp),
      execute: (args) => answering(() => (args.rootValue as { execute: (args: ExecutionArgs) => never }).execute(args)),
      subscribe: (args) => answering(() => (args.rootValue as { subscribe: (args: ExecutionArgs) => never }).subscribe(args)),
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
      releaseKeys();
      server.off('upgrade', onUpgrade);
      for (const ws of sockets.clients) ws.terminate();
      await disposable.dispose();
    },
  };
}

/** An error as graphql-ws writes it, without the `http` extension. */
function formattedWithoutHttp(error: GraphQLError): GraphQLFormattedError {
  const { extensions, ...formatted } = error.toJSON();
  if (!extensions) return formatted;
  const { http: _http, ...rest } = extensions;
  return Object.keys(rest).length > 0 ? { ...formatted, extensions: rest } : formatted;
}

/** A result as graphql-ws writes it, without the `http` extension on it or on its errors. */
function withoutHttpExtensions(result: ExecutionResult) {
  const { http: _http, ...extensions } = result.extensions ?? {};
  return {
    ...result,
    ...(result.errors ? { errors: result.errors.map(formattedWithoutHttp) } : {}),
    extensions: Object.keys(extensions).length > 0 ? extensions : undefined,
  };
}
