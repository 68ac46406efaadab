import type postgres from 'postgres';
import type { StatementScope } from './deadline.js';
import type { PoolDemand, StatementDone } from './statement-observer.js';

/**
 * Drizzle runs its statements unnamed: every execution parses and plans again, in two
 * round trips. This client makes postgres.js prepare each distinct statement once per
 * connection (then one round trip per execution), in transactions too. Statement texts
 * are few and fixed: lists are passed as one array parameter (`anyOf` in ./sql.ts), never
 * as a variable number of placeholders; texts built per request (compiled reads) say
 * whether to prepare them (RunOptions), since a session keeps what it prepared.
 *
 * A request's client (`scope`) tells the request's statement observer of each statement;
 * a read snapshot's (`begin`) begins its transactions that way, in the BEGIN statement
 * itself (drizzle would spend a statement on SET TRANSACTION).
 */
export function preparingStatements(
  client: postgres.Sql,
  /** The pool's connections: statements outside transactions, and transactions (null inside a transaction). */
  demand: PoolDemand | null,
  scope?: StatementScope,
  begin?: string,
): postgres.Sql {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property === 'unsafe') {
        return (query: string, parameters?: unknown[], queryOptions?: object) =>
          watched(target.unsafe(query, parameters as never, { ...queryOptions, prepare: true }), query, demand, scope);
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          const end = demand?.begin();
          const body = args.pop() as (transaction: postgres.Sql) => unknown;
          const options = args.length === 0 ? begin : undefined;
          const transaction = (target.begin as (...beginArgs: unknown[]) => Promise<unknown>)(...(options ? [options] : args), (transaction: postgres.Sql) =>
            body(preparingStatements(transaction, null, scope)),
          );
          if (end) transaction.then(end, end);
          return transaction;
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

/**
 * A postgres.js query, told to the request's statement observer (`scope`) and counted in
 * the pool's demand when either watches. Its `then` is hooked on the instance, because the
 * query runs only once awaited and callers still call `.values()` or `.raw()` on it (which
 * return it).
 */
export function watched<Query extends PromiseLike<unknown>>(query: Query, text: string, demand: PoolDemand | null, scope: StatementScope | undefined): Query {
  const done = scope?.observe(text);
  const end = demand?.begin();
  if (!done && !end) return query;
  const settle: StatementDone = (error) => {
    end?.();
    done?.(error);
  };
  const then = query.then;
  let hooked = false;
  query.then = function (this: Query, ...args: Parameters<Query['then']>) {
    if (!hooked) {
      hooked = true;
      then.call(this, () => settle(), (error: unknown) => settle(error));
    }
    return then.apply(this, args);
  } as Query['then'];
  return query;
}
