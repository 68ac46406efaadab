/**
 * Telling every server instance that writes have ended, so that their live-update readers
 * look at the events table soon. A write records its events in its own transaction (the
 * outbox); an announcement only wakes readers, and a reader that misses one finds the events
 * on its next poll. So announcements may be merged, late or lost, never needed. A write that
 * rolled back or wrote nothing is announced too: while it ran it held back the events of
 * writes that committed after it began (events are read below the oldest running writer).
 *
 * They are sent after the writes end, outside them, at most one per ANNOUNCE_GAP_MS (the
 * first at once). A NOTIFY inside the writing transaction would make its commit take
 * PostgreSQL's one lock for queueing notifications and hold it through the commit's WAL
 * flush: writers that notify commit one at a time, without group commit. (Measured with
 * pgbench, 16 clients updating one row each: 2,900–3,200 transactions/s with a NOTIFY
 * against 6,600–8,400 without. An announcement is a NOTIFY of its own, on a connection
 * whose commits do not wait for the flush.)
 */
import { AsyncResource } from 'node:async_hooks';

/** The channel of announcements: every instance's live-update reader LISTENs on it. */
export const EVENTS_CHANNEL = 'memstore_events';

/**
 * PostgreSQL: the `application_name` of the connection announcements are sent over
 * (pg_stat_activity). The event horizon (drizzle/0010) passes over this session's
 * transactions, as it only ever notifies: no session that writes may take this name, and a
 * server whose own sessions would (through DATABASE_URL, PGAPPNAME or the role's settings)
 * refuses to start (ReservedApplicationNameError).
 */
export const ANNOUNCEMENTS_APPLICATION_NAME = 'memstore announcements';

/** The connection string of the announcement session: DATABASE_URL with its application_name, which postgres.js ranks above its options. */
export function announcementsUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', ANNOUNCEMENTS_APPLICATION_NAME);
  return url.toString();
}

/** Startup: the server's own sessions would carry the announcement session's name, whose transactions event readers pass over. */
export class ReservedApplicationNameError extends Error {
  constructor() {
    super(
      `memstore's database sessions would be named "${ANNOUNCEMENTS_APPLICATION_NAME}", a name memstore keeps for its announcement session ` +
        '(live-update readers pass over its transactions, so a write under that name could be missed): ' +
        'set another application_name in DATABASE_URL, PGAPPNAME or the role\'s settings.',
    );
    this.name = 'ReservedApplicationNameError';
  }
}

/** The least time between two announcements of one process, in milliseconds. */
export const ANNOUNCE_GAP_MS = 10;

export interface Announcer {
  /** Writes have ended: an announcement now, or once the gap since the last one has passed. */
  announce(): void;
  /** No announcement after this one. */
  close(): void;
}

/** How long a send may take before the announcer goes on without it, in milliseconds. */
export const ANNOUNCE_SEND_LIMIT_MS = 2_000;

/**
 * Sends an announcement (`send`) on `announce()`, merging those that come while one is being
 * sent or within `gapMs` after it into one more. A failed send is dropped (readers poll). A
 * send still unsettled after `sendLimitMs` (a connection hung without a reset) is waited for
 * no longer, and no other is sent until it settles, so that none queue behind it. Sends run in
 * the async context the announcer was made in, not in that of the write that asked first.
 */
export function createAnnouncer(send: () => Promise<unknown>, gapMs = ANNOUNCE_GAP_MS, sendLimitMs = ANNOUNCE_SEND_LIMIT_MS): Announcer {
  let busy = false;
  let again = false;
  let closed = false;
  let unsettled = false;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const after = (ms: number, work: () => void) => {
    if (closed) return null;
    const timer = setTimeout(() => {
      timers.delete(timer);
      work();
    }, ms);
    timer.unref?.();
    timers.add(timer);
    return timer;
  };
  const cancel = (timer: ReturnType<typeof setTimeout> | null) => {
    if (timer === null) return;
    clearTimeout(timer);
    timers.delete(timer);
  };
  const run = AsyncResource.bind(() => {
    busy = true;
    const ended = () =>
      after(gapMs, () => {
        busy = false;
        if (!again) return;
        again = false;
        run();
      });
    if (unsettled) {
      ended();
      return;
    }
    unsettled = true;
    // The round ends when the send settles or its time limit passes, whichever comes first.
    let end: (() => void) | null = ended;
    const endOnce = () => {
      end?.();
      end = null;
    };
    const limit = after(sendLimitMs, endOnce);
    // A send that throws is one that failed.
    new Promise((resolve) => resolve(send()))
      .catch(() => {})
      .finally(() => {
        unsettled = false;
        cancel(limit);
        endOnce();
      });
  });
  return {
    announce() {
      if (closed) return;
      if (busy) {
        again = true;
        return;
      }
      run();
    },
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}

/**
 * PGlite: one process holds the data dir, so an announcement is a call of this process's
 * listeners, and listening is being one of them.
 */
export function localAnnouncements(): { announcer: Announcer; listen(channel: string, onNotify: () => void): () => Promise<void> } {
  const listeners = new Map<string, Set<() => void>>();
  const announcer = createAnnouncer(async () => {
    for (const onNotify of listeners.get(EVENTS_CHANNEL) ?? []) onNotify();
  });
  return {
    announcer,
    listen(channel, onNotify) {
      const callback = () => onNotify();
      let channelListeners = listeners.get(channel);
      if (!channelListeners) listeners.set(channel, (channelListeners = new Set()));
      channelListeners.add(callback);
      return async () => {
        channelListeners.delete(callback);
      };
    },
  };
}

const announcers = new WeakMap<object, Announcer>();

/**
 * Makes `db.transaction` announce the end of each transaction (commit or rollback), and
 * `writeEnded(db)` announce; returns the transaction that announces nothing, for read
 * snapshots (which write nothing and hold no other write back).
 */
export function announcingTransactions<Db extends { transaction: (...args: never[]) => Promise<unknown> }>(db: Db, announcer: Announcer): Db['transaction'] {
  const unannounced = db.transaction.bind(db) as Db['transaction'];
  db.transaction = ((...args: Parameters<Db['transaction']>) => {
    const ended = unannounced(...args);
    ended.then(announcer.announce, announcer.announce);
    return ended;
  }) as Db['transaction'];
  announcers.set(db, announcer);
  return unannounced;
}

/**
 * A write that ran by itself, outside a transaction of `db.transaction` (a one-statement
 * write), has ended, whether it wrote or not: announce it. Transactions announce on their own
 * when they end. Inside a transaction (`db` is its handle) this does nothing.
 */
export function writeEnded(db: object): void {
  announcers.get(db)?.announce();
}
