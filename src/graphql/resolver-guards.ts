import { defaultFieldResolver, getNamedType, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import type { Context } from '../context.js';
import type { Loaders } from './loaders.js';
import { encodeNodeId } from './builder.js';
import { textBytes, type ResponseBudget } from './response-budget.js';

/** The scalars whose values can be long; others (numbers, booleans, enums, instants) are short. */
const TEXT_SCALARS = new Set(['String', 'ID', 'JSONObject']);

const ignore = () => {};

/**
 * Wraps every resolver of the schema, once, on the built schema:
 * - the value of a text field (String, ID, JSONObject, lists of them) spends the request's
 *   answer budget (fields marked SPENDS_OWN_BUDGET spend it themselves, before loading);
 * - a resolver's promise is always observed: an execution stopped early (its time limit, its
 *   budget) no longer waits for the fields still running, and one of those failing later
 *   must not be an unhandled rejection, which ends a Node process.
 */
export function guardResolvers(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const resolve = (field.resolve ?? defaultFieldResolver) as GraphQLFieldResolver<unknown, { budget?: ResponseBudget }>;
      const spends = TEXT_SCALARS.has(getNamedType(field.type).name) && !(field.extensions as { spendsResponseBudget?: boolean }).spendsResponseBudget;
      field.resolve = (source, args, context, info) => {
        const value = resolve(source, args, context, info) as unknown;
        if (value instanceof Promise) {
          const settled = spends && context.budget ? value.then((resolved) => (context.budget!.spend(textBytes(resolved)), resolved)) : value;
          settled.catch(ignore);
          return settled;
        }
        if (spends && context.budget) context.budget.spend(textBytes(value));
        return value;
      };
    }
  }
  return schema;
}

/** What a write's answer hands the loaders made after its write (answerPriming). */
const primings = new WeakMap<object, (loaders: Loaders) => void>();

/**
 * A write's answer, with what it already knows for the loaders (the version the write made,
 * say): freshLoadsPerMutation primes the loaders made after the write with it.
 */
export function answerPriming<Answer extends object>(answer: Answer, prime: (loaders: Loaders) => void): Answer {
  primings.set(answer, prime);
  return answer;
}

/**
 * Each Mutation field's answer reads what its write left: once the field's resolver has
 * written, the context's loaders are dropped, and the answer's fields load anew (primed with
 * what the write handed over: answerPriming). A request's mutation fields run one after
 * another, each answered once its write is done, and a loader keeps what it loaded for the
 * whole request: without this, the answer of a request's second write would show what its
 * first one's answer read (a memory's versions, a store's totals), not what the writes so far
 * left. Dropped after the write, not before it: the answer of an earlier field cut short by
 * an error (a nullable field whose non-null child failed) can still be reading while the next
 * write waits for its locks, and what it reads then, before that write, must not be what
 * that write's answer finds.
 */
export function freshLoadsPerMutation(schema: GraphQLSchema): GraphQLSchema {
  for (const field of Object.values(schema.getMutationType()?.getFields() ?? {})) {
    const resolve = (field.resolve ?? defaultFieldResolver) as GraphQLFieldResolver<unknown, Context>;
    field.resolve = (source, args, context, info) => {
      const written = (answer: unknown) => {
        context.forgetLoaded();
        if (answer !== null && typeof answer === 'object') primings.get(answer)?.(context.loaders);
        return answer;
      };
      const answer = resolve(source, args, context, info) as unknown;
      return answer instanceof Promise ? answer.then(written) : written(answer);
    };
  }
  return schema;
}

/**
 * The `id` of every node type, resolved as the relay plugin resolves it (the type's own id
 * resolver, then encodeNodeId) but without its `async`: the plugin's resolver returns a
 * promise whatever the id, and one id in a selection then makes the whole execution
 * asynchronous (a promise per node, and no result in the same turn for the thousand live
 * streams that share an event's execution).
 */
export function resolveNodeIdsInTurn(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || !type.getInterfaces().some((face) => face.name === 'Node')) continue;
    const resolveId = (type.extensions as { pothosOptions?: { id?: { resolve?: GraphQLFieldResolver<unknown, unknown> } } }).pothosOptions?.id?.resolve;
    const field = type.getFields().id;
    if (!resolveId || !field) continue;
    const encode = (value: string | null | undefined) => (value === null || value === undefined ? value : encodeNodeId(type.name, value));
    field.resolve = (source, args, context, info) => {
      const id = resolveId(source, args, context, info) as string | null | undefined | Promise<string | null | undefined>;
      return id instanceof Promise ? id.then(encode) : encode(id);
    };
  }
  return schema;
}
