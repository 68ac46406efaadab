import type { Plugin } from 'graphql-yoga';

type FetchResponse = typeof Response;

/**
 * A plugin answering GET and HEAD at exactly `path` (405 with `Allow` for other methods),
 * ahead of GraphQL. `answer` returns the response, or a promise of it; for HEAD, give the
 * body anyway: it is dropped here. Other paths pass through synchronously.
 */
export function useReadRoute(path: string, answer: (request: Request, Response: FetchResponse) => Response | Promise<Response>): Plugin {
  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== path) return;
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        endResponse(new fetchAPI.Response('Method not allowed', { status: 405, headers: { allow: 'GET, HEAD' } }));
        return;
      }
      const send = (response: Response) =>
        endResponse(request.method === 'HEAD' && response.body !== null ? new fetchAPI.Response(null, { status: response.status, headers: response.headers }) : response);
      const answered = answer(request, fetchAPI.Response);
      if (answered instanceof Promise) return answered.then(send);
      send(answered);
    },
  };
}
