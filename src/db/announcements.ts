/**
 * Telling every server instance that writes have committed, so that their live-update
 * readers look at the events table soon. A write records its events in its own transaction
 * (the outbox); an announcement only wakes readers, and a reader that misses one finds the
 * events on its next poll. So announcements may be merged, late or lost, never needed.
 *
 * They are sent after the writes commit, outside them, at most one per ANNOUNCE_GAP_MS (the
 * first at once). A NOTIFY inside the writing transaction would make its commit take
 * PostgreSQL's one lock for queueing notifications and hold it through the commit's WAL
 * flush: writers that notify commit one at a time, without group commit. (Measured with
 * pgbench, 16 clients updating one row each: 2,900–3,200 transactions/s with a NOTIFY
 * against 6,600–8,400 without. An announcement is a NOTIFY of its own, on a connection
 * whose commits do not wait for the flush.)
 */

/** The channel of announcements: every instance's live-update reader LISTENs on it. */
export const EVENTS_CHANNEL = 'memstore_events';

/** PostgreSQL: the `application_name` of the connection announcements are sent over (pg_stat_activity). */
export const ANNOUNCEMENTS_APPLICATION_NAME = 'memstore announcements';

/** The least time between two announcements of one process, in milliseconds. */
export const ANNOUNCE_GAP_MS = 10;

export interface Announcer {
  /** Writes have committed: an announcement now, or once the gap since the last one has passed. */
  announce(): void;
  /** No announcement after this one. */
  close(): void;
}

/**
 * Sends an announcement (`send`) on `announce()`, merging those that come while one is being
 * sent or within `gapMs` after it into one more. A failed send is dropped (readers poll).
 */
export function createAnnouncer(send: () => Promise<unknown>, gapMs = ANNOUNCE_GAP_MS): Announcer {
  let busy = false;
  let again = false;
  let closed = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const announce = () => {
    if (closed) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    send()
      .catch(() => {})
      .finally(() => {
        if (closed) return;
        timer = setTimeout(() => {
          timer = null;
          busy = false;
          if (!again) return;
          again = false;
          announce();
        }, gapMs);
        timer.unref?.();
      });
  };
  return {
    announce,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
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
 * Makes `db.transaction` announce each commit, and `writesCommitted(db)` announce; returns
 * the transaction that announces nothing, for read snapshots.
 */
export function announcingTransactions<Db extends { transaction: (...args: never[]) => Promise<unknown> }>(db: Db, announcer: Announcer): Db['transaction'] {
  const unannounced = db.transaction.bind(db) as Db['transaction'];
  db.transaction = ((...args: Parameters<Db['transaction']>) => {
    const committed = unannounced(...args);
    committed.then(announcer.announce, () => {});
    return committed;
  }) as Db['transaction'];
  announcers.set(db, announcer);
  return unannounced;
}

/**
 * A write that committed by itself, outside a transaction of `db.transaction` (a
 * one-statement write), has recorded events: announce them. Transactions announce on their
 * own when they commit. Inside a transaction (`db` is its handle) this does nothing.
 */
export function writesCommitted(db: object): void {
  announcers.get(db)?.announce();
}
