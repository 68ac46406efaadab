import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { ExecutionResult } from 'graphql';
import type { ContextFactory } from '../context.js';
import { selectOperation } from '../graphql/query-cost.js';
import type { EventHub } from '../subscriptions/event-hub.js';
import type { RequestPipeline } from './pipeline.js';

/**
 * The request stages of a subscription, on both transports (SSE through Yoga, graphql-ws
 * through Yoga's envelope in websocket.ts): the request was parsed, validated and admitted
 * like any other (yoga-stages.ts); here its cost is checked, its key identified, and its
 * stream gets a context of its own, with fresh loaders for every event. The access policy
 * (graphql/access.ts) then refuses IDENTITY keys before the stream opens.
 */
export function useSubscriptionStages(pipeline: RequestPipeline, contexts: ContextFactory, hub: EventHub): Plugin {
  return {
    onSubscribe({ args, subscribeFn, setSubscribeFn, setResultAndStopExecution }) {
      const initial = args.contextValue as { request: Request; stalled?: () => boolean };
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
        const { context } = contexts.forStream(pipeline.states.of(request).id, viewer, { hub, stalled: initial.stalled });
        return subscribeFn({ ...subscribeArgs, contextValue: context });
      });
    },
  };
}

/**
 * Each result of a stream, settled as a single result is (masking, extensions). Not an async
 * generator: a consumer that leaves must end the stream at once, not when its next event comes.
 */
export function mapStream(results: AsyncIterable<ExecutionResult>, settle: (result: ExecutionResult) => ExecutionResult): AsyncIterableIterator<ExecutionResult> {
  const source = results[Symbol.asyncIterator]();
  const done = { value: undefined, done: true } as const;
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const result = await source.next();
      return result.done ? result : { value: settle(result.value), done: false };
    },
    async return() {
      await source.return?.();
      return done;
    },
  };
}

export { isAsyncIterable };
