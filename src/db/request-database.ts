import { announcingTransactions, type Announcer } from './announcements.js';
import type { Database } from './database.js';
import type { StatementScope } from './deadline.js';
import { recordStatement } from './statement-count.js';

/**
 * The database as one request uses it: every statement it sends, through drizzle or in its
 * transactions, under the request's scope (deadline.ts).
 */
export interface ScopedDatabase {
  readonly db: Database;
  /** Runs several reads against one snapshot (DatabaseHandle.readSnapshot), under the scope. */
  readSnapshot<T>(work: (db: Database) => Promise<T>): Promise<T>;
}

/**
 * Every statement goes through here first: it is counted (tests), and, for a request, it is
 * not sent at all once the request is past its time limit (the error then rolls back the
 * transaction it belongs to, if any), nor as the second statement of a read running without
 * a snapshot (./snapshot-choice.ts).
 */
export function beforeStatement(scope: StatementScope | undefined, query: string, params: unknown[]): void {
  scope?.admit();
  recordStatement(query, params);
}

/** Drizzle's logger, which it calls before each statement: beforeStatement for `scope`. */
export function statementLogger(scope?: StatementScope): { logQuery(query: string, params: unknown[]): void } {
  return { logQuery: (query, params) => beforeStatement(scope, query, params) };
}

/** The parts of a drizzle database another is made of. */
interface DrizzleParts {
  dialect: unknown;
  session: { constructor: new (client: unknown, dialect: unknown, schema: unknown, options: object) => unknown };
  _: { schema?: unknown; fullSchema: unknown; tableNamesMap: unknown };
}

/** A drizzle database of `base`'s driver, dialect and schema, on `client`, its statements under `scope`. */
function databaseLike(base: Database, client: unknown, scope: StatementScope | undefined): Database {
  const { dialect, session, _: parts } = base as unknown as DrizzleParts;
  const schema = parts.schema ? { schema: parts.schema, fullSchema: parts.fullSchema, tableNamesMap: parts.tableNamesMap } : undefined;
  const Session = session.constructor;
  const Db = base.constructor as new (dialect: unknown, session: unknown, schema: unknown) => Database;
  return new Db(dialect, new Session(client, dialect, schema, { logger: statementLogger(scope) }), schema);
}

/** What a request's database is made of. */
export interface RequestDatabaseParts {
  /** The handle outside requests, whose driver, dialect and schema it shares. */
  base: Database;
  /** None: the unscoped handle's read snapshots. */
  scope: StatementScope | undefined;
  /** Told when its transactions end (announcements.ts). */
  announcer: Announcer;
  /** The driver's client for the request's statements. */
  client: () => unknown;
  /**
   * The client whose transactions are read snapshots (PostgreSQL: they begin REPEATABLE
   * READ READ ONLY); null where any transaction of `client` is one (PGlite, which runs one
   * transaction at a time).
   */
  snapshotClient: (() => unknown) | null;
}

/**
 * A request's database, made on first use (a compiled read, which runs its one statement
 * itself, makes none). A class rather than an object literal with getters: see
 * RequestContext in ../context.ts.
 */
export class RequestDatabase implements ScopedDatabase {
  private made: Database | undefined;
  /** `made`'s transaction before it was made to announce (announcingTransactions). */
  private unannounced: Database['transaction'] | undefined;
  private snapshots: Database | undefined;

  constructor(private readonly parts: RequestDatabaseParts) {}

  /** Its transactions announce their end, as the unscoped handle's do (announcements.ts). */
  get db(): Database {
    return this.made ?? this.make().db;
  }

  readSnapshot<T>(work: (db: Database) => Promise<T>): Promise<T> {
    const { base, scope, snapshotClient } = this.parts;
    if (snapshotClient) {
      this.snapshots ??= databaseLike(base, snapshotClient(), scope);
      return this.snapshots.transaction((tx) => work(tx as unknown as Database)) as Promise<T>;
    }
    // Read snapshots write nothing and hold no write back: their transactions announce nothing.
    const unannounced = this.unannounced ?? this.make().unannounced;
    return unannounced((tx) => work(tx as unknown as Database)) as Promise<T>;
  }

  private make(): { db: Database; unannounced: Database['transaction'] } {
    const { base, scope, announcer, client } = this.parts;
    const db = databaseLike(base, client(), scope);
    const unannounced = announcingTransactions(db, announcer);
    this.made = db;
    this.unannounced = unannounced;
    return { db, unannounced };
  }
}
