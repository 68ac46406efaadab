import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendNodeResponse } from '@whatwg-node/server';
import { GraphQLError } from 'graphql';
import { leanPathOf, type LeanPath } from './lean-path.js';
import type { RequestPipeline } from './pipeline.js';

/**
 * The lean path (lean-path.ts) reached from Node's HTTP server directly, for the requests it
 * answers most: `POST /graphql` with a declared body within the limit, and `GET /graphql`,
 * from clients that are not web pages of another origin (no Origin header: no CORS headers to
 * add). Yoga's Fetch-API adapter and its plugin loop cost such a request more than the rest
 * of its answer (`npm run bench`, Q2: 1.4 × the requests a second, p99 halved): here the
 * lean path gets a light Request over Node's message and answers with a light Response,
 * written to the socket as Yoga's adapter writes it; the stages are the same functions
 * (pipeline.ts), and what Yoga does after an answer for such a request — the `depart` stage
 * — is called the same way. Whatever the lean path does not answer goes on through Yoga
 * with the request's state (its id, its start, its credentials once admitted) and the body
 * already read. test/native-front.test.ts holds the answers equal to Yoga's.
 */

/** A request header's value as the Fetch API gives it (repeated headers joined). */
function headerValue(value: string | string[] | undefined): string | null {
  return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
}

/** The headers of a light request or response: lower-case names, as the Fetch API reads them. */
class FrontHeaders {
  private readonly values = new Map<string, string>();

  constructor(init: Record<string, string> = {}) {
    for (const [name, value] of Object.entries(init)) this.set(name, value);
  }

  get(name: string): string | null {
    return this.values.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.values.has(name.toLowerCase());
  }

  set(name: string, value: string): void {
    this.values.set(name.toLowerCase(), String(value));
  }

  delete(name: string): void {
    this.values.delete(name.toLowerCase());
  }

  forEach(callback: (value: string, name: string) => void): void {
    for (const [name, value] of this.values) callback(value, name);
  }

  entries(): IterableIterator<[string, string]> {
    return this.values.entries();
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.values.entries();
  }
}

/** A request's headers read straight from Node's message. */
class MessageHeaders {
  constructor(private readonly message: IncomingMessage) {}

  get(name: string): string | null {
    return headerValue(this.message.headers[name.toLowerCase()]);
  }

  has(name: string): boolean {
    return this.message.headers[name.toLowerCase()] !== undefined;
  }

  forEach(callback: (value: string, name: string) => void): void {
    for (const [name, value] of Object.entries(this.message.headers)) if (value !== undefined) callback(headerValue(value)!, name);
  }

  keys(): IterableIterator<string> {
    return Object.keys(this.message.headers)[Symbol.iterator]();
  }

  *[Symbol.iterator](): IterableIterator<[string, string]> {
    for (const [name, value] of Object.entries(this.message.headers)) if (value !== undefined) yield [name, headerValue(value)!];
  }
}

/** A body's bytes as a stream reader yields them: the declared length, read from Node's message. */
function bodyReader(message: IncomingMessage): ReadableStreamDefaultReader<Uint8Array> {
  const chunks: Buffer[] = [];
  let ended = false;
  let failed: Error | null = null;
  let waiting: (() => void) | null = null;
  const wake = () => {
    waiting?.();
    waiting = null;
  };
  message.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    wake();
  });
  message.on('end', () => {
    ended = true;
    wake();
  });
  message.on('error', (error) => {
    failed = error;
    wake();
  });
  // A client gone before the end: the read fails (readBodyText answers CLIENT_CLOSED_REQUEST).
  message.on('close', () => {
    if (!ended) failed ??= new Error('the client closed the connection');
    wake();
  });
  const reader = {
    async read(): Promise<ReadableStreamReadResult<Uint8Array>> {
      for (;;) {
        const chunk = chunks.shift();
        if (chunk !== undefined) return { done: false, value: chunk };
        if (failed) throw failed;
        if (ended) return { done: true, value: undefined };
        await new Promise<void>((resolve) => (waiting = resolve));
      }
    },
    async cancel(): Promise<void> {
      message.resume();
    },
    releaseLock() {},
    closed: Promise.resolve(undefined),
  };
  return reader as unknown as ReadableStreamDefaultReader<Uint8Array>;
}

/** What the lean path answers with, written to Node's response as Yoga's adapter writes a Response. */
class FrontResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: FrontHeaders;

  constructor(
    readonly body: string | Uint8Array | null,
    init: { status?: number; statusText?: string; headers?: Record<string, string> } = {},
  ) {
    this.status = init.status ?? 200;
    this.statusText = init.statusText ?? '';
    this.headers = new FrontHeaders(init.headers);
  }
}

function send(response: FrontResponse, res: ServerResponse): void {
  if (res.writableEnded || res.destroyed) return;
  res.statusCode = response.status;
  if (response.statusText) res.statusMessage = response.statusText;
  for (const [name, value] of response.headers) res.setHeader(name, value);
  if (response.body === null) {
    res.end();
    return;
  }
  res.setHeader('content-length', typeof response.body === 'string' ? Buffer.byteLength(response.body) : response.body.byteLength);
  res.end(response.body);
}

/**
 * What the request's time limit listens to (request-timeout.ts): the client going away
 * before its answer is out. An AbortController per request costs more than the rest of the
 * front; this signal tells only that.
 *
 * A class, not an object literal with a getter: V8 gives each such literal a hidden class of
 * its own, kept in the old generation, whose accessor holds the literal's closures — and with
 * them the request's and the response's objects — through every young-generation collection
 * until a full one. That was about 2.4 KB promoted per request (`--trace-gc-nvp`; 3 B
 * without it), and the full collections it brought held up the requests in flight.
 */
class ClientGoneSignal {
  constructor(private readonly res: ServerResponse) {}

  get aborted(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  addEventListener(type: string, listener: () => void): void {
    const res = this.res;
    if (type === 'abort') res.once('close', () => res.writableFinished || listener());
  }

  removeEventListener(): void {}
}

/** The light request the lean path reads: headers, method, URL, the client's going away, the body. */
function frontRequest(message: IncomingMessage, res: ServerResponse, url: string): Request {
  const body = message.method === 'POST' ? { getReader: () => bodyReader(message) } : null;
  return {
    method: message.method!,
    url,
    headers: new MessageHeaders(message),
    body,
    bodyUsed: false,
    signal: new ClientGoneSignal(res),
  } as unknown as Request;
}

/**
 * The URL of a request the front may take — what the lean path answers, from a client that
 * needs no CORS headers — or null for Yoga (also when its Host makes no URL: Yoga answers it).
 */
function frontUrl(message: IncomingMessage, maxBodyBytes: number): URL | null {
  if (message.headers.origin !== undefined) return null;
  const path = message.url ?? '';
  if (message.method === 'GET') {
    if (path !== '/graphql' && !path.startsWith('/graphql?')) return null;
  } else {
    if (message.method !== 'POST' || path !== '/graphql') return null;
    // A body of a declared length within the limit: one that is larger, or streamed without a length, is Yoga's to refuse or read.
    const declared = message.headers['content-length'];
    if (declared === undefined || !/^\d{1,10}$/.test(declared) || Number(declared) > maxBodyBytes) return null;
  }
  try {
    const url = new URL(`http://${headerValue(message.headers.host) ?? 'localhost'}${path}`);
    return url.pathname === '/graphql' ? url : null;
  } catch {
    return null;
  }
}

type Listener = (message: IncomingMessage, res: ServerResponse) => void;

/** What the front needs of the Yoga instance: its request listener, its Request class, and its handling of a Request. */
type YogaServer = ((message: IncomingMessage, res: ServerResponse) => unknown) & {
  fetchAPI: { Request: typeof Request };
  handleRequest(request: Request, serverContext: never): Response | Promise<Response>;
};

const listeners = new WeakMap<object, Listener>();

/** Gives an app (createApp) its front, over its pipeline's lean path; without the lean path, Yoga alone. */
export function attachNativeFront(app: YogaServer, pipeline: RequestPipeline, leanPath: boolean): void {
  listeners.set(app, leanPath ? nativeFront(app, pipeline, leanPathOf(pipeline)) : (app as Listener));
}

/** Node's request listener for an app: its native front, with Yoga behind it (src/server.ts listens with it). */
export function requestListenerOf(app: object): Listener {
  return listeners.get(app) ?? (app as Listener);
}

/** Node's request listener: the front for the requests it takes, Yoga for the rest. */
function nativeFront(app: YogaServer, pipeline: RequestPipeline, lean: LeanPath): Listener {
  const fetchAPI = { Request: app.fetchAPI.Request, Response: FrontResponse as unknown as typeof Response };
  const handOver = (message: IncomingMessage, res: ServerResponse, request: Request) => {
    const serverContext = { req: message, res, waitUntil: () => {} };
    void Promise.resolve()
      .then(() => app.handleRequest(request, serverContext as never))
      .then((response) => sendNodeResponse(response, res, message, true))
      // Yoga answers its own errors; a failure past them (its response cut off) ends the response.
      .catch(() => {
        if (!res.headersSent) res.statusCode = 500;
        if (!res.writableEnded) res.end();
      });
  };
  return (message, res) => {
    const parsed = frontUrl(message, pipeline.maxBodyBytes);
    if (parsed === null) {
      void app(message, res);
      return;
    }
    const url = parsed.href;
    const request = frontRequest(message, res, url);
    pipeline.arrive(request);
    let answered = false;
    let replacement: Request | null = null;
    const endResponse = (response: Response) => {
      answered = true;
      const front = response as unknown as FrontResponse;
      pipeline.depart(request, response);
      send(front, res);
    };
    // Anything that goes wrong outside the lean path's own answers is an error of ours:
    // masked and logged as Yoga's would be, and never an exception out of this listener.
    const fail = (error: unknown) => {
      try {
        if (answered) throw error;
        const masked = pipeline.mask(request, [error instanceof GraphQLError ? error : new GraphQLError('Unexpected error.', { originalError: error as Error })]);
        endResponse(new FrontResponse(JSON.stringify({ errors: masked }), { status: 500, headers: { 'content-type': 'application/json; charset=utf-8' } }) as unknown as Response);
      } catch {
        if (!res.writableEnded) res.destroy();
      }
    };
    lean
      .handle(request, parsed, fetchAPI as never, endResponse, (next) => (replacement = next))
      .then(() => {
        if (answered) return;
        // Not the lean path's: Yoga answers, with this request's state, and the body the lean
        // path read (then it made the replacement), or else the message's own, unread.
        const unread = message.method === 'POST' ? { body: message as never, duplex: 'half' } : {};
        const next = replacement ?? new app.fetchAPI.Request(url, { method: message.method, headers: request.headers as never, signal: request.signal, ...unread } as RequestInit);
        if (next !== replacement) pipeline.states.adopt(request, next);
        handOver(message, res, next);
      })
      .catch(fail);
  };
}
