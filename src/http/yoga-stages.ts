import type { ExecutionArgs, ExecutionResult, GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { selectOperation } from '../graphql/query-cost.js';
import { keepTaggedAnswerVary } from './answer-tags.js';
import { parseCompiledData, withExtensions, type RequestPipeline } from './pipeline.js';
import { useRequestBodyLimit } from './request-body.js';
import { endingOnCancel, isAsyncIterable, mapStream } from './subscriptions.js';

/**
 * The Yoga pipeline's form of the request stages (pipeline.ts): each plugin calls the
 * pipeline's function at the hook where Yoga reaches that stage. Yoga's context factory
 * admits the request (yogaContext); the context resolvers see is made by `execute`, once
 * the key is identified within the time limit.
 */
export function yogaStages(pipeline: RequestPipeline, paths: { routes: Plugin[]; leanPath: Plugin | null }): Plugin[] {
  const requestOf = (context: unknown) => (context as { request: Request }).request;
  const lifecycle: Plugin = {
    onRequest({ request }) {
      pipeline.arrive(request);
    },
    onParams({ params, setParams }) {
      const query = pipeline.documentOf(params.query, (params as { documentId?: unknown }).documentId);
      if (query !== params.query) setParams({ ...params, query: query as string, documentId: undefined } as never);
    },
    onParse({ context, params, setParseFn }) {
      setParseFn(() => pipeline.parse(requestOf(context), params.source));
    },
    onValidate({ context, params, setResult }) {
      setResult(pipeline.validate(requestOf(context), params.documentAST));
    },
    onResultProcess({ request, result, setResult, resultProcessor, setResultProcessor }) {
      // Masked already (Yoga's maskedErrors runs the same mask): this logs them. Request
      // errors keep their own HTTP status under every response type.
      const extensions = pipeline.extensions(request);
      const settle = (plain: unknown) => {
        const single = withExtensions(plain as ExecutionResult, extensions);
        const errors = (single as ExecutionResult).errors;
        if (!errors?.length) return single;
        const masked = pipeline.mask(request, errors as readonly GraphQLError[]);
        for (const error of masked) {
          const http = error.extensions?.http as { spec?: boolean } | undefined;
          if (http?.spec) http.spec = false;
        }
        return { ...(single as ExecutionResult), errors: masked };
      };
      // A subscription's stream: each of its results is settled as it goes out. Streams are
      // only subscriptions' (no @defer or @stream), which Yoga answers over SSE alone.
      if (isAsyncIterable(result)) {
        const stream = mapStream(result as AsyncIterable<ExecutionResult>, (item) => settle(item) as ExecutionResult);
        setResult(stream as never);
        if (resultProcessor) setResultProcessor(endingOnCancel(resultProcessor, stream), 'text/event-stream');
        return;
      }
      const settled = (Array.isArray(result) ? result : [result]).map(settle);
      setResult((Array.isArray(result) ? settled : settled[0]) as never);
    },
    onResponse({ request, response }) {
      // Runs after Yoga's CORS stage, which sets Vary to Origin over the tagged answer's.
      keepTaggedAnswerVary(response.headers);
      pipeline.depart(request, response);
    },
  };
  const execution: Plugin = {
    onExecute({ args, setResultAndStopExecution }) {
      const request = requestOf(args.contextValue);
      const operation = selectOperation(args.document, args.operationName);
      // No such operation: execution reports it.
      if (!operation) return;
      const errors = pipeline.cost(request, args.document, operation, args.variableValues ?? undefined);
      if (errors) setResultAndStopExecution({ errors });
    },
  };
  const identified: Plugin = {
    onExecute({ args, executeFn, setExecuteFn }) {
      const request = requestOf(args.contextValue);
      const operation = selectOperation(args.document, args.operationName);
      if (!operation) return;
      setExecuteFn(async (executeArgs: ExecutionArgs) => {
        // A read the compiler covers identifies the key and answers in one statement, as on
        // the lean path; Yoga then writes the answer (so its JSON is parsed here once more).
        const compiled = await pipeline.compile(request, executeArgs.document, operation, (executeArgs.variableValues ?? undefined) as Record<string, unknown> | undefined);
        const answer = await pipeline.readOrIdentify(request, compiled);
        if (answer.data !== null) return { data: parseCompiledData(answer.data) } as never;
        return pipeline.execute(request, answer.viewer, operation, async (contextValue) => (await executeFn({ ...executeArgs, contextValue })) as ExecutionResult) as never;
      });
    },
  };
  const deadline: Plugin = {
    onExecute({ args, executeFn, setExecuteFn }) {
      const limit = pipeline.deadline(requestOf(args.contextValue));
      // The answer does not wait for the work once the time is up.
      setExecuteFn((executeArgs) => limit.within(async () => executeFn(executeArgs)) as never);
      return {
        onExecuteDone() {
          limit.clear();
        },
      };
    },
  };
  // Requests are seen first by the lifecycle, then by other routes (GraphiQL's files), then
  // by the lean path, which answers the plain ones; the rest continue through Yoga. Execute
  // hooks wrap one another: the last registered runs first, so the time limit holds the
  // identification and execution inside it.
  return [
    lifecycle,
    ...paths.routes,
    ...(paths.leanPath ? [paths.leanPath] : []),
    useRequestBodyLimit((request) => pipeline.readBody(request), pipeline.maxBodyBytes),
    execution,
    identified,
    deadline,
  ];
}

/** Yoga's context factory: the request is admitted (401, 429) when Yoga is about to execute it. */
export function yogaContext(pipeline: RequestPipeline) {
  return async ({ request }: { request: Request }) => {
    await pipeline.admit(request);
    return {};
  };
}
