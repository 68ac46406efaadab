import type { QueryOptions } from '@electric-sql/pglite';
import type { StatementScope } from './deadline.js';
import type { OpenTransaction, PreparedStatements } from './pglite-prepared.js';
import type { PoolDemand } from './statement-observer.js';

/** A client whose statements go one at a time (oneStatementAtATime). */
export type LineClient<Client> = Client & {
  queryPrepared(text: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  queryPreparedRaw(text: string, params: unknown[]): Promise<(Uint8Array | null)[][]>;
  queryUnprepared(text: string, params: unknown[]): Promise<{ rows: Record<string, unknown>[] }>;
  /** The same client, in the same line, for the statements of the request `scope` stands for. */
  withScope(scope: StatementScope): LineClient<Client>;
};

/**
 * PGlite runs each statement in this thread, and while one runs nothing else does. Its
 * statements are therefore sent one at a time, each after one turn of the event loop, so
 * that timers (a request's time limit) and other requests (/healthz) are served between
 * them; and a statement whose request has run out of time by its turn is not run at all
 * (a request's statements may all have been queued at once, by a DataLoader).
 * A transaction's statements are sent the same way. Drizzle's statements with parameters
 * are prepared (pglite-prepared.ts), as compiled reads ask theirs to be.
 *
 * `withScope(scope)` gives the same client for one request's statements: they wait in the
 * same line, and each is checked against the request's scope at its turn (deadline.ts).
 */
export function oneStatementAtATime<Client extends { query: (...args: never[]) => unknown; exec: (...args: never[]) => unknown }>(
  client: Client,
  /** The database's one connection: statements waiting their turn and transactions (null inside a transaction). */
  demand: PoolDemand | null,
  prepared: PreparedStatements,
  /** The transaction these statements belong to (null: the session's own line). */
  transaction?: OpenTransaction,
  /** The request whose statements these are, if any. */
  scope?: StatementScope,
  /** The line the statements wait in (a scoped client's is its unscoped one's). */
  line: { tail: Promise<unknown> } = { tail: Promise.resolve() },
): LineClient<Client> {
  const inTurn = (text: string, run: () => unknown) => {
    const end = demand?.begin();
    const turn = line.tail.then(async () => {
      await new Promise((resolve) => setImmediate(resolve));
      if (!scope) return run();
      scope.check();
      return scope.observed(text, async () => run());
    });
    line.tail = turn.catch(() => {});
    if (end) turn.then(end, end);
    return turn;
  };
  return new Proxy(client as never, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      /** The client's own method, as PGlite answers it (parsed on every call). */
      const own = (method: 'query' | 'exec', args: unknown[]) => (Reflect.get(target, method, receiver) as (...callArgs: unknown[]) => unknown).apply(target, args);
      if (property === 'query') {
        return (text: string, params?: unknown[], options?: QueryOptions) =>
          inTurn(text, async () => (params?.length ? await prepared.query(text, params, options, transaction) : null) ?? own('query', [text, params, options]));
      }
      if (property === 'exec') return (...args: unknown[]) => inTurn(args[0] as string, () => own('exec', args));
      if (property === 'queryPrepared') return (text: string, params: unknown[]) => inTurn(text, () => prepared.rows(text, params));
      if (property === 'queryPreparedRaw') return (text: string, params: unknown[]) => inTurn(text, () => prepared.rawRows(text, params));
      // A text built for one request only: parsed once, as query does, and not kept among the prepared.
      if (property === 'queryUnprepared') return (...args: unknown[]) => inTurn(args[0] as string, () => own('query', args));
      if (property === 'withScope') return (requestScope: StatementScope) => oneStatementAtATime(target, demand, prepared, transaction, requestScope, line);
      // A transaction's statements go one at a time in the same way, in their own line.
      if (property === 'transaction') {
        return (body: (transaction: Client) => unknown, ...rest: unknown[]) => {
          const end = demand?.begin();
          const transaction = (value as (...callArgs: unknown[]) => Promise<unknown>).call(
            target,
            (transaction: Client) => body(oneStatementAtATime(transaction, null, prepared, transaction as unknown as OpenTransaction, scope)),
            ...rest,
          );
          if (end) transaction.then(end, end);
          return transaction;
        };
      }
      return typeof value === 'function' ? (value as (...callArgs: unknown[]) => unknown).bind(target) : value;
    },
  });
}
