import type { Database, DatabaseHandle } from './db/client.js';
import { DEFAULT_MEMORY_WRITES, type MemoryWriteOptions } from './domain/memories/writes.js';
import type { Viewer } from './domain/viewer.js';
import { createLoaders, type Loaders } from './graphql/loaders.js';
import { ResponseBudget } from './graphql/response-budget.js';
import type { EventHub } from './subscriptions/event-hub.js';
import type { StreamTransport } from './subscriptions/event-stream.js';

/** Everything a resolver may use, built once per request. */
export interface Context {
  viewer: Viewer;
  db: Database;
  /** Made on first use: an answer that needs no loader builds none. */
  readonly loaders: Loaders;
  requestId: string;
  /** The request's one clock: every timestamp a request writes is this instant. */
  now: Date;
  /** The text its answer may still carry (response-budget.ts). */
  budget: ResponseBudget;
  /** How memory writes are made (domain/memories/writes.ts). */
  memoryWrites: MemoryWriteOptions;
  /** Set for a subscription: the instance's live updates and what the transport knows of its consumer. */
  live?: LiveContext;
}

export interface LiveContext {
  hub: EventHub;
  /** The consumer's connection, as far as the stream may ask of it. */
  transport?: StreamTransport;
}

/** The context of one request, on `db` (the pool, or a read snapshot's transaction). */
function contextOn(db: Database, fields: Omit<Context, 'db' | 'loaders'>): Context {
  let loaders: Loaders | undefined;
  return {
    ...fields,
    db,
    get loaders() {
      return (loaders ??= createLoaders(db, fields.viewer));
    },
  };
}

export interface ContextFactory {
  /** The context of an authenticated request. */
  forViewer(requestId: string, viewer: Viewer): Context;
  /**
   * The context of a stream: each execution of an event is answered with loaders and a
   * response budget of its own (`renew` before each), so that no event sees what an earlier
   * one loaded, and a long stream holds no more than one event's.
   */
  forStream(requestId: string, viewer: Viewer, live: LiveContext): { context: Context; renew: () => void };
  /**
   * Runs a query's execution in one read snapshot (DatabaseHandle.readSnapshot): the same
   * request, clock and budget, on the snapshot's transaction with loaders of its own.
   */
  inSnapshot<T>(context: Context, work: (context: Context) => Promise<T>): Promise<T>;
}

export function createContextFactory(
  database: Pick<DatabaseHandle, 'db'> & Partial<Pick<DatabaseHandle, 'readSnapshot'>>,
  memoryWrites: MemoryWriteOptions = DEFAULT_MEMORY_WRITES,
): ContextFactory {
  const readSnapshot = database.readSnapshot ?? ((work) => database.db.transaction((tx) => work(tx as Database)));
  return {
    forViewer: (requestId, viewer) => contextOn(database.db, { viewer, requestId, now: new Date(), budget: new ResponseBudget(), memoryWrites }),
    forStream: (requestId, viewer, live) => {
      let current = contextOn(database.db, { viewer, requestId, now: new Date(), budget: new ResponseBudget(), memoryWrites, live });
      const context = {
        viewer,
        requestId,
        memoryWrites,
        live,
        db: database.db,
        get now() {
          return current.now;
        },
        get budget() {
          return current.budget;
        },
        get loaders() {
          return current.loaders;
        },
      } as Context;
      const renew = () => {
        current = contextOn(database.db, { viewer, requestId, now: new Date(), budget: new ResponseBudget(), memoryWrites, live });
      };
      return { context, renew };
    },
    inSnapshot: (context, work) =>
      readSnapshot((tx) =>
        work(contextOn(tx, { viewer: context.viewer, requestId: context.requestId, now: context.now, budget: context.budget, memoryWrites: context.memoryWrites })),
      ),
  };
}
