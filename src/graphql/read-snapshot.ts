import type { ExecutionArgs } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Database } from '../db/client.js';
import { selectOperation } from './query-cost.js';

/**
 * A query's statements read one snapshot: a read-only REPEATABLE READ transaction around
 * its execution, so that an answer of several statements never mixes states from before
 * and after a write committed between them (a memory's content and its newest version,
 * a list's count and its page, a store's counters and its memories). Mutations make their
 * own transactions; a read compiled to one statement needs none.
 */
/** Runs `work` with a context whose database is the snapshot's transaction. */
export type RunInSnapshot<Context> = <T>(context: Context, work: (context: Context) => Promise<T>) => Promise<T>;

/** The snapshot runner for contexts that carry `db` and per-request loaders built from it. */
export function snapshotRunner<Context extends { db: Database }>(
  readSnapshot: <T>(work: (db: Database) => Promise<T>) => Promise<T>,
  withDatabase: (context: Context, tx: Database) => Context,
): RunInSnapshot<Context> {
  return (context, work) => readSnapshot((tx) => work(withDatabase(context, tx)));
}

/** Yoga's executions of queries run in a snapshot. */
export function useReadSnapshots<Context>(inSnapshot: RunInSnapshot<Context>): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      if (selectOperation(args.document, args.operationName)?.operation !== 'query') return;
      setExecuteFn((executeArgs: ExecutionArgs) =>
        inSnapshot(executeArgs.contextValue as Context, async (contextValue) => executeFn({ ...executeArgs, contextValue })) as never,
      );
    },
  };
}
