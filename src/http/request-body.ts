import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

export const PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE';
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

function badRequest(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
}

/** A declared Content-Length over the limit: 413 before a byte is read. */
function refuseDeclaredOverLimit(request: Request, maxBytes: number): void {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw payloadTooLarge(maxBytes);
}

/**
 * Reads a body as text. A declared Content-Length over maxBytes is refused before a byte
 * is read; a longer body as soon as it passes maxBytes (the stream is cancelled).
 */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  refuseDeclaredOverLimit(request, maxBytes);
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    received += value.byteLength;
    if (received > maxBytes) {
      await reader.cancel().catch(() => {});
      throw payloadTooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, received).toString('utf8');
}

/**
 * POST bodies: JSON only, at most `maxBytes`. A declared Content-Length over the limit is
 * refused before a byte is read; a body that turns out longer is refused as soon as it
 * passes the limit, before any of it is parsed. Replaces Yoga's POST parsers.
 */
export function useRequestBodyLimit(maxBytes: number): Plugin {
  return {
    onRequestParse({ request, setRequestParser }) {
      if (request.method === 'GET') {
        setRequestParser(parseGetRequest as never);
        return;
      }
      if (request.method !== 'POST') return;
      // Before the content type: an oversized body is refused as such, whatever it claims to be.
      refuseDeclaredOverLimit(request, maxBytes);
      if (!isJsonRequest(request)) {
        throw new GraphQLError('POST requests must send Content-Type: application/json.', {
          extensions: { code: UNSUPPORTED_MEDIA_TYPE, http: { status: 415 } },
        });
      }
      setRequestParser(async (postRequest) => {
        const text = await readBodyText(postRequest, maxBytes);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw badRequest('POST body sent invalid JSON.');
        }
        // Arrays go on to Yoga, which refuses batches.
        if (body === null || typeof body !== 'object') throw badRequest('POST body must be a JSON object: {"query": …, "variables": …}.');
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
  return {
    query: parameters.get('query') || undefined,
    operationName: parameters.get('operationName') || undefined,
    variables: json('variables'),
    extensions: json('extensions'),
  };
}
