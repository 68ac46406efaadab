import type { App } from '../../src/app.js';

/** An answer of the Forward REST API: status, headers and the parsed JSON body. */
export interface RestAnswer {
  status: number;
  headers: Headers;
  body: any;
}

export interface RestRequest {
  /** The query string as the SDK writes it (already percent-encoded), without "?". */
  query?: string;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent byte for byte. */
  raw?: string;
  headers?: Record<string, string>;
}

/** The headers the TypeScript SDK puts on every request besides the body's (unknown ones must be ignored). */
export const SDK_HEADERS = {
  accept: 'application/json',
  'user-agent': 'forward-sdk-typescript/1.4.0 node/20.19.0',
  'x-qoder-sdk-lang': 'js',
  'x-qoder-sdk-version': '1.4.0',
  'x-qoder-retry-count': '0',
};

export const REST_BASE = 'http://memstore.test/api/v1/forward';

/** Sends requests to the Forward REST API through real HTTP handling (`app.fetch`) with one API key, as the SDKs do. */
export class RestClient {
  constructor(
    readonly app: App,
    readonly token: string | null,
  ) {}

  async send(method: string, path: string, request: RestRequest = {}): Promise<RestAnswer> {
    const headers: Record<string, string> = { ...SDK_HEADERS, ...(this.token === null ? {} : { authorization: `Bearer ${this.token}` }) };
    let body: string | undefined;
    if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      headers['content-type'] = 'application/json';
    } else if (request.raw !== undefined) {
      body = request.raw;
    } else if (method === 'POST') {
      // The SDKs' bodiless POSTs (archive, redact).
      headers['content-length'] = '0';
    }
    Object.assign(headers, request.headers);
    for (const [name, value] of Object.entries(headers)) if (value === '') delete headers[name];
    const response = await this.app.fetch(`${REST_BASE}${path}${request.query ? `?${request.query}` : ''}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: the test sees the text.
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }

  get(path: string, request?: RestRequest) {
    return this.send('GET', path, request);
  }

  post(path: string, request?: RestRequest) {
    return this.send('POST', path, request);
  }

  delete(path: string, request?: RestRequest) {
    return this.send('DELETE', path, request);
  }
}

/** A path segment as the SDKs send ids: percent-encoded. */
export const segment = (id: string) => encodeURIComponent(id);
