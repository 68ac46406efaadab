import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { DISCARD_BODY_TIMEOUT_MS, MAX_DISCARDED_BODY_BYTES } from '../domain/limits.js';

export const PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE';
/** The client closed its connection before its whole request arrived: there is no one to answer. */
export const CLIENT_CLOSED_REQUEST = 'CLIENT_CLOSED_REQUEST';
export const UNSUPPORTED_MEDIA_TYPE = 'UNSUPPORTED_MEDIA_TYPE';

/** The content types a POST may carry: JSON only (no multipart, forms or plain text). */
const JSON_CONTENT_TYPES = ['application/json', 'application/graphql+json'];

function mediaTypeOf(request: Request): string {
  return (request.headers.get('content-type') ?? '').split(/[;,]/)[0]!.trim().toLowerCase();
}

/** Whether a request declares a JSON body. */
export function isJsonRequest(request: Request): boolean {
  return JSON_CONTENT_TYPES.includes(mediaTypeOf(request));
}

export function payloadTooLarge(maxBytes: number): GraphQLError {
  return new GraphQLError(`The request body is larger than ${maxBytes} bytes, the limit.`, {
    extensions: { code: PAYLOAD_TOO_LARGE, max: maxBytes, http: { status: 413, headers: { connection: 'close' } } },
  });
}

function clientWentAway(): GraphQLError {
  return new GraphQLError('The client closed the connection before its request arrived.', {
    extensions: { code: CLIENT_CLOSED_REQUEST, http: { status: 400 } },
  });
}

/** The next chunk of a body; a client that went away (the read fails) is CLIENT_CLOSED_REQUEST, not a failure of ours. */
async function readChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<ReadableStreamReadResult<Uint8Array>> {
  try {
    return await reader.read();
  } catch {
    throw clientWentAway();
  }
}

/** A body or query string without a query (or a trusted document's id): there is nothing to run. */
function missingQuery(): GraphQLError {
  return new GraphQLError('Must provide a query string: send {"query": "…"} (or ?query=… with GET).', {
    extensions: { code: 'INVALID_REQUEST', http: { status: 400 } },
  });
}

function badRequest(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
}

function declaredLength(request: Request): number | null {
  const declared = request.headers.get('content-length');
  return declared === null ? null : Number(declared);
}

/**
 * Reads what is left of a refused body and throws it away — at most MAX_DISCARDED_BODY_BYTES
 * in all and for at most DISCARD_BODY_TIMEOUT_MS — so that a client still sending gets the
 * answer rather than EPIPE when the connection closes. Past either bound the rest is left.
 */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, alreadyReceived: number): Promise<void> {
  let received = alreadyReceived;
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<'time up'>((resolve) => {
    timer = setTimeout(() => resolve('time up'), DISCARD_BODY_TIMEOUT_MS);
  });
  try {
    while (received <= MAX_DISCARDED_BODY_BYTES) {
      const next = await Promise.race([reader.read(), timeUp]);
      if (next === 'time up' || next.done) break;
      received += next.value.byteLength;
    }
  } catch {
    // The client went away: nothing left to read.
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
  }
}

/** Discards a body nobody will parse (see discardRest), unless it declares more than MAX_DISCARDED_BODY_BYTES. */
export async function discardBody(request: Request): Promise<void> {
  const declared = declaredLength(request);
  if (!request.body || request.bodyUsed || (declared !== null && declared > MAX_DISCARDED_BODY_BYTES)) return;
  await discardRest(request.body.getReader(), 0);
}

/**
 * Reads a body as text, at most maxBytes of it. A body found to be longer — by its declared
 * Content-Length, or once the bytes read pass the limit — is refused with 413, after the
 * rest of it has been discarded (see discardRest); a declared length over
 * MAX_DISCARDED_BODY_BYTES is refused before a byte is read.
 */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  const declared = declaredLength(request);
  if (declared !== null && declared > maxBytes) {
    await discardBody(request);
    throw payloadTooLarge(maxBytes);
  }
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  for (;;) {
    const { done, value } = await readChunk(reader);
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      await discardRest(reader, received);
      throw payloadTooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, received).toString('utf8');
}

/**
 * POST bodies: JSON only, at most `maxBytes`, refused (413, 415) before any of it is parsed;
 * the rest of a refused body is read and thrown away first (see discardRest). Replaces
 * Yoga's POST parsers.
 */
export function useRequestBodyLimit(readBody: (request: Request) => Promise<string>, maxBytes: number): Plugin {
  return {
    onRequestParse({ request, setRequestParser }) {
      if (request.method === 'GET') {
        setRequestParser(parseGetRequest as never);
        return;
      }
      if (request.method !== 'POST') return;
      // Before the content type: an oversized body is refused as such, whatever it claims to be.
      if ((declaredLength(request) ?? 0) > maxBytes) {
        setRequestParser(async (postRequest) => {
          await readBody(postRequest);
          throw payloadTooLarge(maxBytes);
        });
        return;
      }
      if (!isJsonRequest(request)) {
        setRequestParser(async (postRequest) => {
          await discardBody(postRequest);
          throw new GraphQLError('POST requests must send Content-Type: application/json.', {
            extensions: { code: UNSUPPORTED_MEDIA_TYPE, http: { status: 415 } },
          });
        });
        return;
      }
      setRequestParser(async (postRequest) => {
        const text = await readBody(postRequest);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw badRequest('POST body sent invalid JSON.');
        }
        // Arrays go on to Yoga, which refuses batches.
        if (body === null || typeof body !== 'object') throw badRequest('POST body must be a JSON object: {"query": …, "variables": …}.');
        if (!Array.isArray(body) && typeof (body as { query?: unknown }).query !== 'string' && (body as { documentId?: unknown }).documentId == null) throw missingQuery();
        return body as never;
      });
    },
  };
}

/**
 * GET parameters, like Yoga's own parser, except that `variables` and `extensions` that
 * are not JSON are a 400 BAD_REQUEST (Yoga lets the SyntaxError through: a masked 500).
 */
function parseGetRequest(request: Request) {
  const parameters = new URL(request.url).searchParams;
  const json = (name: 'variables' | 'extensions'): unknown => {
    const text = parameters.get(name);
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw badRequest(`The ${name} parameter is not valid JSON.`);
    }
  };
  if (!parameters.get('query') && !parameters.get('documentId')) throw missingQuery();
  return {
    query: parameters.get('query') || undefined,
    // A trusted document's id (persisted-documents.ts), instead of the query.
    documentId: parameters.get('documentId') || undefined,
    operationName: parameters.get('operationName') || undefined,
    variables: json('variables'),
    extensions: json('extensions'),
  };
}
