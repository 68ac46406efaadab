import { AsyncResource } from 'node:async_hooks';
import { EVENTS_CHANNEL } from '../db/announcements.js';
import type { Database } from '../db/client.js';
import { findRevokedKeys } from '../domain/api-keys.js';
import {
  assertCursorIssued,
  comparePositions,
  currentEventHorizon,
  decodeEventCursor,
  deleteExpiredEvents,
  loadEventSubjects,
  noEventSubjects,
  readEventBatch,
  subjectKey,
  type EventPosition,
  type MemoryEventRecord,
} from '../domain/events.js';
import { EVENT_BATCH_SIZE, EVENT_POLL_INTERVAL_MS, EVENT_WAKE_GAP_MAX_MS, EVENT_WAKE_GAP_MS, EVENT_WAKE_GAP_PER_STREAM_MS, EVENT_SWEEP_BATCH, EVENT_SWEEP_INTERVAL_MS, REPLAY_BUDGET_BYTES, STREAM_BUFFER_EVENTS, STREAM_KEY_CHECK_INTERVAL_MS, STREAM_REPLAY_STALL_MS } from '../domain/limits.js';
import type { Viewer } from '../domain/viewer.js';
import { silentLogger, type Logger } from '../logger.js';
import { EventStream, payloadOf, streamError, type MemoryEventPayload, type StreamFilter, type StreamTransport } from './event-stream.js';
import { replayStream } from './replay.js';
import type { HeldKey, KeyHolder } from './key-holders.js';
import { ReplayBudget } from './replay-budget.js';
import { SharedEventResults } from './shared-results.js';
import { unlimitedStreamSlots, type StreamSlots } from './stream-slots.js';

/**
 * Fan-out of live updates, one per server instance. One poller reads each batch of
 * committed events once — a bounded number of statements per batch (the read and the
 * batch's stores, memories and versions), whatever the number of streams — and gives each
 * stream the events its filter matches, in memory. A notification (LISTEN memstore_events)
 * or a short timer only wakes the poller; the table is the truth (domain/events.ts).
 *
 * A stream that resumes (`after`) replays from the table on its own (replay.ts), while the
 * live batches meanwhile wait in its buffer; it then continues with the first live event past
 * the last one it replayed. So does a stream that falls behind: a live batch that does not
 * fit its buffer (event-stream.ts) is replayed from the table at its consumer's pace.
 */

/**
 * Runs the poller's own work in the async context this module was loaded in, which belongs
 * to no request. Without it the poller would work inside whichever request happened to start
 * or wake it: on PGlite a notification is delivered inside the request whose write sent it,
 * and timers and the listening connection carry the context of the stream's request that
 * started the poller. A request's limits reach its statements through its database handle,
 * not its async context (db/deadline.ts), and the poller uses the instance's own; but what
 * is kept in an async context (the statements a test records around a request,
 * db/statement-count.ts) would count the poller's statements as the request's.
 */
const asInstanceWork = AsyncResource.bind(<T>(work: () => T): T => work());

function laterOf(left: EventPosition, right: EventPosition): EventPosition {
  return comparePositions(left, right) >= 0 ? left : right;
}

export interface EventHubOptions {
  /** Where expired events are deleted. */
  db: Database;
  /** Where events, what they are about and keys are read, each statement alone (DatabaseHandle.reads); default `db`. */
  reads?: Database;
  /** Where replays read (DatabaseHandle.replays); default `reads`. */
  replays?: Database;
  /** LISTEN (DatabaseHandle.listen): the poller is woken by every instance's announced writes (db/announcements.ts). Without it, only the timer wakes it. */
  notifications?: (channel: string, onNotify: () => void) => Promise<() => Promise<void>>;
  logger?: Logger;
  slots?: StreamSlots;
  retentionDays: number;
  pollIntervalMs?: number;
  keyCheckIntervalMs?: number;
  /** How long a replay waits for a consumer that reads nothing (STREAM_REPLAY_STALL_MS). */
  replayStallMs?: number;
  /** What the instance's replays may hold together, in content (REPLAY_BUDGET_BYTES). */
  replayBudgetBytes?: number;
  sweepIntervalMs?: number;
  bufferEvents?: number;
  batchSize?: number;
  /** Open streams gauge (metrics), when given. */
  onStreamCount?: (open: number) => void;
}

/** What an instance's live updates hold (the metrics' gauges). */
export interface LiveUse {
  openStreams: number;
  /** Content its replays hold (ReplayBudget.heldBytes). */
  replayBytes: number;
  /** Replays waiting for room in its replay budget. */
  replaysWaiting: number;
}

export interface OpenStreamOptions {
  viewer: Viewer;
  filter: StreamFilter;
  /** The cursor to resume after; null: from now. */
  after: string | null;
  now: Date;
  transport?: StreamTransport;
}

export class EventHub {
  private readonly db: Database;
  private readonly reads: Database;
  private readonly replays: Database;
  private readonly logger: Logger;
  private readonly slots: StreamSlots;
  private readonly streams = new Map<string, Set<EventStream>>();
  private streamCount = 0;
  private position: EventPosition | null = null;
  private starting: Promise<void> | null = null;
  private polling = false;
  private pollAgain = false;
  private lastPollAt = 0;
  private wakeTimer: NodeJS.Timeout | null = null;
  private timers: NodeJS.Timeout[] = [];
  private keyCheckStarted = false;
  private readonly keyHolders = new Set<KeyHolder>();
  private unlisten: (() => Promise<void>) | null = null;
  private closed = false;
  private readonly batchSize: number;
  private readonly bufferEvents: number;
  private readonly replayStallMs: number;
  /** The executions of this hub's events, shared by the streams that answer them alike. */
  readonly results = new SharedEventResults();
  /** What this instance's replays hold together, and those waiting for room. */
  readonly replayBudget: ReplayBudget;

  constructor(private readonly options: EventHubOptions) {
    this.db = options.db;
    this.reads = options.reads ?? options.db;
    this.replays = options.replays ?? this.reads;
    this.logger = options.logger ?? silentLogger;
    this.slots = options.slots ?? unlimitedStreamSlots;
    this.batchSize = options.batchSize ?? EVENT_BATCH_SIZE;
    this.bufferEvents = options.bufferEvents ?? STREAM_BUFFER_EVENTS;
    this.replayStallMs = options.replayStallMs ?? STREAM_REPLAY_STALL_MS;
    this.replayBudget = new ReplayBudget(options.replayBudgetBytes ?? REPLAY_BUDGET_BYTES, this.replayStallMs);
  }

  get openStreams(): number {
    return this.streamCount;
  }

  /** What its live updates hold now (the metrics read it when scraped). */
  use(): LiveUse {
    return { openStreams: this.streamCount, replayBytes: this.replayBudget.heldBytes, replaysWaiting: this.replayBudget.waiting };
  }

  /** How far the poller has read: every committed event before this position has been fanned out (null before it starts). */
  get readPosition(): EventPosition | null {
    return this.position;
  }

  /** Starts the poller on first use: the position of "now", the notifications and the timers. */
  private start(): Promise<void> {
    this.starting ??= asInstanceWork(async () => {
      this.position = await currentEventHorizon(this.reads);
      if (this.options.notifications) {
        try {
          this.unlisten = await this.options.notifications(EVENTS_CHANNEL, () => asInstanceWork(() => this.wake()));
        } catch (error) {
          this.logger.warn('live updates: cannot LISTEN; new events are found by polling only', { error });
        }
      }
      // The timer finds what no notification announced: a read that began less than an
      // interval ago (woken by one) has found it already, or the next wake will. It keeps
      // to the wake gap too: a timed read inside it would double a busy instance's batches.
      const interval = this.options.pollIntervalMs ?? EVENT_POLL_INTERVAL_MS;
      this.every(interval, () => (performance.now() - this.lastPollAt >= Math.max(interval / 2, this.wakeGap()) ? this.poll() : undefined));
      // The streams' keys are checked as any holder's.
      this.holdKeys({ keys: () => [...this.streams.values()].flatMap((group) => [...group].map((stream) => stream.viewer)), revoked: (keys) => this.endStreamsOf(keys) });
      this.every(this.options.sweepIntervalMs ?? EVENT_SWEEP_INTERVAL_MS, () => this.sweep());
    });
    return this.starting;
  }

  /** Runs `work` every `ms`: a run that outlasts its interval (a slow database, a sweep of a long backlog) is not joined by another, ticks pass until it ends. */
  private every(ms: number, work: () => unknown): void {
    let running = false;
    const timer = setInterval(
      () =>
        asInstanceWork(() => {
          if (running) return;
          running = true;
          void Promise.resolve()
            .then(work)
            .catch((error: unknown) => this.logger.warn('live updates: background work failed', { error }))
            .finally(() => (running = false));
        }),
      ms,
    );
    timer.unref();
    this.timers.push(timer);
  }

  /** Has `holder`'s keys checked (checkKeys) from now until the function returned is called. */
  holdKeys(holder: KeyHolder): () => void {
    this.keyHolders.add(holder);
    if (!this.keyCheckStarted && !this.closed) {
      this.keyCheckStarted = true;
      this.every(this.options.keyCheckIntervalMs ?? STREAM_KEY_CHECK_INTERVAL_MS, () => this.checkKeys());
    }
    return () => void this.keyHolders.delete(holder);
  }

  /**
   * Opens a stream of the viewer's workspace. Throws CURSOR_EXPIRED for a cursor older than
   * the retention, INVALID_REQUEST for something that is not a cursor, RATE_LIMITED past the
   * key's stream limit.
   */
  async open(options: OpenStreamOptions): Promise<EventStream> {
    const { viewer } = options;
    const cursor = options.after === null ? null : decodeEventCursor(options.after);
    if (cursor && cursor.occurredAt.getTime() < options.now.getTime() - this.options.retentionDays * 86_400_000) {
      throw streamError('CURSOR_EXPIRED', `This cursor is older than the ${this.options.retentionDays} days events are kept: subscribe without \`after\` to start from now.`);
    }
    if (!(await this.slots.acquire(viewer.apiKeyId))) {
      throw streamError('RATE_LIMITED', `This API key has ${this.slots.limit} open streams, the most it may have: close one before opening another.`);
    }
    let from: EventPosition;
    try {
      await this.start();
      // Without a cursor the stream starts now: past every change committed before it opened,
      // even one the poller has not read yet (its batch still reaches the stream, which skips it).
      // A cursor is never past that.
      const horizon = laterOf(this.position!, await currentEventHorizon(this.reads));
      if (cursor) assertCursorIssued(cursor, horizon);
      from = cursor?.position ?? horizon;
    } catch (error) {
      this.slots.release(viewer.apiKeyId);
      throw error;
    }
    const stream = new EventStream(viewer, options.filter, from, this.bufferEvents, (ended) => this.forget(ended), options.transport, (behind) => void this.replay(behind));
    let group = this.streams.get(viewer.workspaceId);
    if (!group) this.streams.set(viewer.workspaceId, (group = new Set()));
    group.add(stream);
    this.streamCount += 1;
    this.options.onStreamCount?.(this.streamCount);
    if (!cursor) stream.goLive();
    else void this.replay(stream);
    return stream;
  }

  private forget(stream: EventStream): void {
    const group = this.streams.get(stream.viewer.workspaceId);
    if (!group?.delete(stream)) return;
    this.replayBudget.forget(stream);
    if (group.size === 0) this.streams.delete(stream.viewer.workspaceId);
    this.streamCount -= 1;
    this.slots.release(stream.viewer.apiKeyId);
    this.options.onStreamCount?.(this.streamCount);
  }

  /** Replays a stream from the table at its consumer's pace (a resuming stream, or one that fell behind), then hands it to the live batches. */
  private replay(stream: EventStream): Promise<void> {
    return replayStream(stream, this.replays, { batchSize: this.batchSize, bufferEvents: this.bufferEvents, stallMs: this.replayStallMs, budget: this.replayBudget }, this.logger, () => this.position);
  }

  /**
   * A notification: a read soon, but not sooner than the wake gap after the last one, so
   * that commits arriving faster than that are read and fanned out as one batch.
   */
  wake(): void {
    if (this.wakeTimer !== null || this.closed) return;
    const wait = this.lastPollAt + this.wakeGap() - performance.now();
    if (wait <= 0) {
      void this.poll();
      return;
    }
    const lastRead = this.lastPollAt;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      // A read that began since (the timer's) puts the next the wake gap after it.
      if (this.lastPollAt !== lastRead) this.wake();
      else void this.poll();
    }, wait);
  }

  /** The least time between two reads woken by notifications, for the streams open now. */
  private wakeGap(): number {
    return Math.min(EVENT_WAKE_GAP_MAX_MS, Math.max(EVENT_WAKE_GAP_MS, this.streamCount * EVENT_WAKE_GAP_PER_STREAM_MS));
  }

  /** Reads every committed event past the hub's position, batch by batch, and fans each out. Concurrent wakes coalesce. */
  async poll(): Promise<void> {
    if (this.position === null || this.closed) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    this.lastPollAt = performance.now();
    try {
      do {
        this.pollAgain = false;
        for (;;) {
          const batch = await readEventBatch(this.reads, this.position, this.batchSize);
          if (batch.length === 0) break;
          // What the events of workspaces with streams are about. A workspace's first stream
          // may open while that is loaded, its start read before this batch was: it may be owed
          // some of the batch's events, so what they are about is loaded too, until no such
          // workspace is left (the fan-out below runs without a pause in which one could open).
          const subjects = noEventSubjects();
          const loaded = new Set<string>();
          for (;;) {
            const owed = batch.filter((event) => !loaded.has(event.workspaceId) && this.streams.has(event.workspaceId));
            if (owed.length === 0) break;
            for (const event of owed) loaded.add(event.workspaceId);
            await loadEventSubjects(this.reads, owed, subjects);
          }
          const wanted = batch.filter((event) => this.streams.has(event.workspaceId));
          // Each workspace's events, in order, for its streams to filter.
          const byWorkspace = new Map<string, MemoryEventPayload[]>();
          for (const event of wanted) {
            let payloads = byWorkspace.get(event.workspaceId);
            if (!payloads) byWorkspace.set(event.workspaceId, (payloads = []));
            payloads.push(payloadOf(event, subjects));
          }
          for (const [workspaceId, payloads] of byWorkspace) {
            // Streams of one filter are handed one array of events (direct sinks share what they write for it).
            const byFilter = new Map<string, MemoryEventPayload[]>();
            for (const stream of this.streams.get(workspaceId) ?? []) {
              let matching = payloads;
              if (!stream.matchesEvery) {
                const known = byFilter.get(stream.filterKey);
                if (known) matching = known;
                else byFilter.set(stream.filterKey, (matching = payloads.filter((payload) => stream.matchesFilter(payload.event))));
              }
              if (matching.length === 0) continue;
              try {
                stream.push(matching);
              } catch (error) {
                // One stream's failure ends that stream, not the batch of the others.
                this.logger.error('live updates: a stream could not take its events', { error });
                stream.fail(streamError('INTERNAL_SERVER_ERROR', 'The stream failed; subscribe again with `after` set to the last cursor received.'));
              }
            }
          }
          this.position = batch.at(-1)!.position;
          if (batch.length < this.batchSize) break;
        }
      } while (this.pollAgain);
    } catch (error) {
      this.logger.warn('live updates: reading new events failed; retrying', { error });
    } finally {
      this.polling = false;
    }
  }

  /** Checks the keys its holders hold (the streams', a WebSocket transport's sockets'), one statement for all, and tells each holder which are revoked. */
  async checkKeys(): Promise<void> {
    const keys = new Map<string, HeldKey>();
    for (const holder of this.keyHolders) for (const key of holder.keys()) keys.set(subjectKey(key.workspaceId, key.apiKeyId), key);
    if (keys.size === 0) return;
    try {
      const revoked = await findRevokedKeys(this.reads, [...keys.values()]);
      if (revoked.length > 0) for (const holder of this.keyHolders) holder.revoked(revoked);
    } catch (error) {
      this.logger.warn('live updates: checking the keys of open streams failed', { error });
    }
  }

  /** Ends the streams of `keys` with UNAUTHENTICATED. */
  private endStreamsOf(keys: readonly HeldKey[]): void {
    const revoked = new Set(keys.map((key) => subjectKey(key.workspaceId, key.apiKeyId)));
    for (const group of [...this.streams.values()]) {
      for (const stream of [...group]) {
        if (revoked.has(subjectKey(stream.viewer.workspaceId, stream.viewer.apiKeyId))) stream.fail(streamError('UNAUTHENTICATED', 'The API key of this stream was revoked.'));
      }
    }
  }

  /** Deletes events older than the retention, EVENT_SWEEP_BATCH at a time, yielding between statements. */
  async sweep(now = new Date()): Promise<number> {
    const before = new Date(now.getTime() - this.options.retentionDays * 86_400_000);
    let deleted = 0;
    try {
      for (;;) {
        const count = await deleteExpiredEvents(this.db, before, EVENT_SWEEP_BATCH);
        deleted += count;
        if (count < EVENT_SWEEP_BATCH || this.closed) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    } catch (error) {
      this.logger.warn('live updates: deleting expired events failed', { error });
    }
    return deleted;
  }

  /** Stops the poller and ends every stream (shutdown). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    if (this.wakeTimer !== null) clearTimeout(this.wakeTimer);
    for (const group of [...this.streams.values()]) for (const stream of [...group]) stream.close();
    await this.starting?.catch(() => {});
    await this.unlisten?.().catch(() => {});
  }
}
