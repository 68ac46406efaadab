import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { ServerResponse } from 'node:http';
import type { ContextFactory } from '../context.js';
import { selectOperation } from '../graphql/query-cost.js';
import type { EventHub } from '../subscriptions/event-hub.js';
import type { StreamTransport } from '../subscriptions/event-stream.js';
import { sharedShapeKey } from '../subscriptions/shared-results.js';
import type { RequestPipeline } from './pipeline.js';
import { DirectSink } from './direct-delivery.js';
import { sseOutlet, type Outlet } from './outlets.js';

/**
 * The request stages of a subscription, on both transports (SSE through Yoga, graphql-ws
 * through Yoga's envelope in websocket.ts): the request was parsed, validated and admitted
 * like any other (yoga-stages.ts); here its cost is checked, its key identified, and its
 * stream gets a context of its own, with fresh loaders for every event. The access policy
 * (graphql/access.ts) then refuses IDENTITY keys before the stream opens. Each event is
 * executed once for all the streams that would answer it alike (shared-results.ts), and
 * written straight to the consumer's connection where there is one (direct-delivery.ts).
 */
export function useSubscriptionStages(pipeline: RequestPipeline, contexts: ContextFactory, hub: EventHub): Plugin {
  return {
    onSubscribe({ args, setSubscribeFn, setResultAndStopExecution }) {
      // Over HTTP (SSE) the Node response is in the context Yoga starts from; over WebSocket,
      // the operation's outlet is (websocket.ts). Through app.fetch there is neither.
      const initial = args.contextValue as { request: Request; outlet?: Outlet; res?: ServerResponse };
      const request = initial.request;
      const operation = selectOperation(args.document, args.operationName);
      if (!operation) return;
      const errors = pipeline.cost(request, args.document, operation, (args.variableValues ?? undefined) as Record<string, unknown> | undefined);
      if (errors) {
        setResultAndStopExecution({ errors });
        return;
      }
      setSubscribeFn(async (subscribeArgs) => {
        const viewer = await pipeline.identify(request);
        const { res } = initial;
        // A consumer on a real connection has its events written to it directly (direct-delivery.ts).
        const outlet = initial.outlet ?? (res ? sseOutlet(res, () => pipeline.extensions(request)) : undefined);
        const sink = outlet ? new DirectSink(outlet) : undefined;
        const transport: StreamTransport = sink ? { sink, stalled: () => sink.stalled } : {};
        const { context, renew } = contexts.forStream(pipeline.states.of(request).id, viewer, { hub, transport });
        const args: ExecutionArgs = { ...(subscribeArgs as ExecutionArgs), contextValue: context };
        // What graphql's own subscribe does (the source stream, then an execution per event), with the execution shared.
        const source = await createSourceEventStream(args);
        if (!isAsyncIterable(source)) return source;
        const shape = sharedShapeKey(viewer, args.document, args.operationName, args.variableValues);
        // Each execution answers with loaders and a budget of its own.
        const resultOf = (payload: unknown) =>
          hub.results.resultOf(payload as object, shape, () => {
            renew();
            return execute({ ...args, rootValue: payload }) as ExecutionResult | Promise<ExecutionResult>;
          });
        sink?.start(resultOf, shape);
        return mapStream(source, resultOf);
      });
    },
  };
}

/**
 * Each result of a stream, settled as a single result is (masking, extensions). Not an async
 * generator: a consumer that leaves must end the stream at once, not when its next event comes.
 */
export function mapStream<Item>(results: AsyncIterable<Item>, settle: (item: Item) => ExecutionResult | Promise<ExecutionResult>): AsyncIterableIterator<ExecutionResult> {
  const source = results[Symbol.asyncIterator]();
  const done = { value: undefined, done: true } as const;
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const result = await source.next();
      return result.done ? done : { value: await settle(result.value), done: false };
    },
    async return() {
      await source.return?.();
      return done;
    },
  };
}

/** How Yoga turns a result into a response (its type is not exported by name). */
type ResultProcessor = Parameters<Parameters<NonNullable<Plugin['onResultProcess']>>[0]['setResultProcessor']>[0];

/**
 * A stream's response (`process`, Yoga's SSE processor) whose cancellation always ends the
 * stream. Yoga ends the stream's iterator on cancel only once the response body has started,
 * which it does on its first read: a body cancelled, or its connection closed, before anything
 * was read (a host calling app.fetch, an adapter destroying the response early) threw inside
 * Yoga and left the stream open, counted against its key's limit for as long as the instance
 * ran. Here the body is read through, and its cancel ends the stream itself, then tells Yoga's
 * body (a Fetch API reader that cancels while a read is pending still reaches this only with
 * the next chunk: the keep-alive at the latest).
 */
export function endingOnCancel(process: ResultProcessor, stream: AsyncIterator<unknown>): ResultProcessor {
  return async (result, fetchAPI, mediaType) => {
    const response = await process(result, fetchAPI, mediaType);
    const inner = response.body;
    if (!inner) return response;
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    const read = () => (reader ??= inner.getReader()).read();
    const body = new fetchAPI.ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      async cancel(reason) {
        // The stream ends now; Yoga's body learns of it after (it fails before its start,
        // when nothing of it runs yet: no ping, no iterator).
        await stream.return?.();
        await (reader ? reader.cancel(reason) : inner.cancel(reason)).catch(() => {});
      },
    });
    return new fetchAPI.Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

export { isAsyncIterable };
