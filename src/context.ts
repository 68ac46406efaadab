import type { Database, DatabaseHandle } from './db/client.js';
import type { StatementScope } from './db/deadline.js';
import { MAX_RESPONSE_BYTES } from './domain/limits.js';
import { DEFAULT_MEMORY_WRITES, type MemoryWriteOptions } from './domain/memories/writes.js';
import type { Viewer } from './domain/viewer.js';
import { createLoaders, type Loaders } from './graphql/loaders.js';
import { ResponseBudget } from './graphql/response-budget.js';
import type { EventHub } from './subscriptions/event-hub.js';
import type { StreamTransport } from './subscriptions/event-stream.js';

/** Everything a resolver may use, built once per request. */
export interface Context {
  viewer: Viewer;
  /** The request's database handle: its statements are sent under `scope`. */
  readonly db: Database;
  /** The request's statement scope (deadline.ts), when it has one (a stream's events have none). */
  readonly scope?: StatementScope;
  /** Made on first use: an answer that needs no loader builds none. */
  readonly loaders: Loaders;
  /** Drops what the loaders loaded: the next use makes new ones, which read what the request's writes so far left. */
  forgetLoaded(): void;
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

/** The fields of a context that do not depend on the database it reads. */
type ContextFields = Omit<Context, 'db' | 'loaders' | 'forgetLoaded'>;

/**
 * The context of one request, on `db` (the pool, or a transaction of the request), or of a
 * stream (`renew` before each event). A class, not an object literal with a getter: V8 gives
 * each such literal a hidden class of its own, kept in the old generation, which holds the
 * literal's closures (and through them the request's objects) until a full garbage
 * collection (see ClientGoneSignal in http/native-front.ts).
 */
class RequestContext implements Context {
  readonly viewer: Viewer;
  readonly requestId: string;
  now: Date;
  budget: ResponseBudget;
  readonly memoryWrites: MemoryWriteOptions;
  readonly live?: LiveContext;
  readonly scope?: StatementScope;
  private made: Loaders | undefined;

  constructor(
    /** Where the database handle comes from: made on first use for a request (request-database.ts). */
    private readonly source: { readonly db: Database },
    fields: ContextFields,
  ) {
    this.scope = fields.scope;
    this.viewer = fields.viewer;
    this.requestId = fields.requestId;
    this.now = fields.now;
    this.budget = fields.budget;
    this.memoryWrites = fields.memoryWrites;
    this.live = fields.live;
  }

  get db(): Database {
    return this.source.db;
  }

  get loaders(): Loaders {
    return (this.made ??= createLoaders(this.db, this.viewer));
  }

  forgetLoaded(): void {
    this.made = undefined;
  }

  /** A stream's next event: a clock, a whole budget and loaders of its own; the stream's viewer, database and transport stay. */
  renew(): void {
    ({ now: this.now, budget: this.budget } = freshStart(this.scope));
    this.forgetLoaded();
  }
}

function fieldsOf(context: Context): ContextFields {
  return { viewer: context.viewer, requestId: context.requestId, now: context.now, budget: context.budget, memoryWrites: context.memoryWrites, live: context.live, scope: context.scope };
}

/** What a request (or a stream's event) starts with: its one clock, and the whole response budget (which stops the scope's statements once spent). */
function freshStart(scope?: StatementScope): Pick<ContextFields, 'now' | 'budget'> {
  return { now: new Date(), budget: new ResponseBudget(MAX_RESPONSE_BYTES, scope) };
}

/** The same request's context on another database handle (a transaction of it), with loaders of its own. */
export function contextOnDatabase(context: Context, db: Database): Context {
  return new RequestContext({ db }, fieldsOf(context));
}

export interface ContextFactory {
  /** The context of an authenticated request, its statements under `scope` (its time limit: request-timeout.ts). */
  forViewer(requestId: string, viewer: Viewer, scope?: StatementScope): Context;
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
  database: Pick<DatabaseHandle, 'db' | 'scoped'> & Partial<Pick<DatabaseHandle, 'readSnapshot'>>,
  memoryWrites: MemoryWriteOptions = DEFAULT_MEMORY_WRITES,
): ContextFactory {
  const sourceOf = (scope: StatementScope | undefined) => (scope ? database.scoped(scope) : database);
  return {
    forViewer: (requestId, viewer, scope) => new RequestContext(sourceOf(scope), { viewer, requestId, memoryWrites, scope, ...freshStart(scope) }),
    forStream: (requestId, viewer, live) => {
      const context = new RequestContext(database, { viewer, requestId, memoryWrites, live, ...freshStart() });
      return { context, renew: () => context.renew() };
    },
    inSnapshot: (context, work) => {
      const source = sourceOf(context.scope);
      const onSnapshot = (tx: Database) => work(contextOnDatabase(context, tx));
      return source.readSnapshot ? source.readSnapshot(onSnapshot) : source.db.transaction((tx) => onSnapshot(tx as Database));
    },
  };
}
