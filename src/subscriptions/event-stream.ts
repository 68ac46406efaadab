import { GraphQLError } from 'graphql';
import { comparePositions, positionBefore, subjectKey, type EventPosition, type EventSubjects, type MemoryEventRecord } from '../domain/events.js';
import { STREAM_BUFFER_BYTES } from '../domain/limits.js';
import type { MemoryRecord } from '../domain/memories/records.js';
import type { MemoryStoreRecord } from '../domain/stores.js';
import type { MemoryVersionRecord } from '../domain/versions.js';
import type { Viewer } from '../domain/viewer.js';

/**
 * One subscriber's stream of live events (event-hub.ts feeds it): its filter, its position,
 * and a bounded buffer between the poller and the consumer: at most STREAM_BUFFER_EVENTS
 * events and STREAM_BUFFER_BYTES of content wait for the consumer. A live delivery that does
 * not fit (a burst of large writes, or a consumer that reads slower than writes come) is
 * taken as far as it fits, and the stream falls behind: the hub replays the rest from the
 * table at the consumer's pace (as it replays a resuming stream), then the stream goes live
 * again. A consumer that takes nothing of what waits for STREAM_REPLAY_STALL_MS is cut off
 * (SLOW_CONSUMER) and resumes from its last cursor.
 */

/** One delivered event with what it is about, as the batch found them. */
export interface MemoryEventPayload {
  event: MemoryEventRecord;
  memoryStore: MemoryStoreRecord | null;
  memory: MemoryRecord | null;
  version: MemoryVersionRecord | null;
  /** Set on the last item of a stream that is cut off: the resolver throws it. */
  failure?: GraphQLError;
}

/** What a stream may ask of its consumer's connection (nothing, through app.fetch). */
export interface StreamTransport {
  /** Whether the connection holds too much unsent for this consumer (its stream is then cut off). */
  stalled?: () => boolean;
  /** Writes the stream's events to the connection itself, instead of handing them to its iterator. */
  sink?: StreamSink;
}

/** What a sink asks of its stream. */
export interface SinkStream {
  fallBack(payloads: MemoryEventPayload[]): void;
  /** The sink wrote `events` events (one unless told) to the connection (the consumer is reading). */
  taken(events?: number): void;
  close(): void;
}

/**
 * Where a stream's events go when they are written to the consumer's connection directly
 * (http/direct-delivery.ts), in stream order. The stream's iterator then yields only what
 * the sink hands back (`fallBack`) and the stream's last item.
 */
export interface StreamSink {
  /** The stream this sink writes for: what it cannot write, it hands back to the stream's iterator; a connection gone ends it. */
  attach(stream: SinkStream): void;
  /** Takes the next events of the stream. */
  send(payloads: readonly MemoryEventPayload[]): void;
  /** Events taken and not yet written, and what they hold in content (payloadBytes). */
  readonly pending: number;
  readonly pendingBytes: number;
  /** Whether the connection holds enough unsent that a replay should wait. */
  readonly saturated: boolean;
  /** Bytes the connection holds unsent (every stream's on it): less than before, and the consumer is reading. */
  readonly unsent: number;
  /** The stream ended: what is pending is dropped, nothing more is written. */
  close(): void;
}

export interface StreamFilter {
  memoryStoreId: string | null;
  pathPrefix: string | null;
}

export function streamError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

const SLOW_CONSUMER_MESSAGE = 'The stream was cut off: the client stopped reading the events waiting for it. Subscribe again with `after` set to the last cursor received to resume.';

function matches(filter: StreamFilter, event: MemoryEventRecord): boolean {
  if (filter.memoryStoreId !== null && event.memoryStoreId !== filter.memoryStoreId) return false;
  if (filter.pathPrefix === null || filter.pathPrefix === '' || event.path === null) return true;
  return event.path.startsWith(filter.pathPrefix) || (event.previousPath?.startsWith(filter.pathPrefix) ?? false);
}

/** What an event counts for in a stream's buffer besides its memory's and version's content. */
export const PAYLOAD_OVERHEAD_BYTES = 512;

/** The content an event carries to its consumer (the objects are shared by every stream, but a queue keeps them alive). */
export function payloadBytes(payload: MemoryEventPayload): number {
  return PAYLOAD_OVERHEAD_BYTES + (payload.memory?.contentSizeBytes ?? 0) + (payload.version?.contentSizeBytes ?? 0);
}

const totals = new WeakMap<readonly MemoryEventPayload[], number>();

/** payloadBytes of every payload of `payloads`, counted once per array. */
export function totalBytes(payloads: readonly MemoryEventPayload[]): number {
  let total = totals.get(payloads);
  if (total === undefined) {
    total = 0;
    for (const payload of payloads) total += payloadBytes(payload);
    totals.set(payloads, total);
  }
  return total;
}

/**
 * Whether a stream's consumer reads: it took an event, or its connection's unsent bytes went
 * down (a large frame on a slow link, or a WebSocket that other operations' events keep
 * busy). The stall time counts from the watch's start, or from the last time it saw reading.
 */
export class ReadingWatch {
  private readAt = performance.now();
  private takes: number;
  private unsent: number;

  constructor(private readonly stream: EventStream) {
    this.takes = stream.takes;
    this.unsent = stream.unsent;
  }

  /** Starts the stall time afresh. */
  seen(now: number): void {
    this.readAt = now;
    this.takes = this.stream.takes;
    this.unsent = this.stream.unsent;
  }

  /** Whether the consumer has read nothing for `stallMs` (the stream still open). */
  stalled(now: number, stallMs: number): boolean {
    const { stream } = this;
    if (stream.takes > this.takes || stream.unsent < this.unsent) this.readAt = now;
    this.takes = stream.takes;
    this.unsent = stream.unsent;
    return stream.isOpen && now - this.readAt > stallMs;
  }
}

export function payloadOf(event: MemoryEventRecord, subjects: EventSubjects): MemoryEventPayload {
  const { workspaceId } = event;
  return {
    event,
    memoryStore: subjects.stores.get(subjectKey(workspaceId, event.memoryStoreId)) ?? null,
    memory: event.memoryId ? (subjects.memories.get(subjectKey(workspaceId, event.memoryId)) ?? null) : null,
    version: event.memoryVersionId ? (subjects.versions.get(subjectKey(workspaceId, event.memoryVersionId)) ?? null) : null,
  };
}

export class EventStream implements AsyncIterableIterator<MemoryEventPayload> {
  private readonly queue: MemoryEventPayload[] = [];
  /** What the queued events hold in content, roughly: a few large events fill a buffer as many small ones do. */
  private queuedBytes = 0;
  /** Live events that arrived while replaying. */
  private readonly held: MemoryEventPayload[] = [];
  private heldBytes = 0;
  /** Events the consumer (or its connection) has taken: a replay's stall counts from the last time this grew. */
  takes = 0;
  /** Events handed to the consumer's buffer (the queue or the sink), ever: it takes them in this order (`takes`). */
  given = 0;
  private waiting: ((result: IteratorResult<MemoryEventPayload>) => void) | null = null;
  private ended = false;
  private failed = false;
  live = false;
  /** How often held live events were dropped during the replay (it then reads on). */
  heldDropped = 0;
  /** Set while the stream's events are written directly to its consumer's connection. */
  private sink: StreamSink | null;

  constructor(
    readonly viewer: Viewer,
    readonly filter: StreamFilter,
    /** The position of the last event given to the consumer (or of "now"). */
    public position: EventPosition,
    private readonly bufferEvents: number,
    private readonly onEnd: (stream: EventStream) => void,
    private readonly transport: StreamTransport = {},
    /** The stream fell behind (a live delivery did not fit its buffer): replay it from its position, then goLive. */
    private readonly onBehind: (stream: EventStream) => void = (behind) => behind.cutOff(),
  ) {
    this.sink = transport.sink ?? null;
    this.sink?.attach(this);
    this.matchesEvery = filter.memoryStoreId === null && !filter.pathPrefix;
    this.filterKey = JSON.stringify([filter.memoryStoreId, filter.pathPrefix || null]);
  }

  /** Whether the stream takes every event of its workspace (no store, no path prefix). */
  readonly matchesEvery: boolean;
  /** The same for streams whose filters pass the same events. */
  readonly filterKey: string;

  /** Whether an event of the stream's own workspace passes its filter (a hub's fan-out, which groups events by workspace). */
  matchesFilter(event: MemoryEventRecord): boolean {
    return matches(this.filter, event);
  }

  matches(event: MemoryEventRecord): boolean {
    return event.workspaceId === this.viewer.workspaceId && matches(this.filter, event);
  }

  /** How many events wait for the consumer (the replay's backpressure). */
  get buffered(): number {
    return this.queue.length + (this.sink?.pending ?? 0);
  }

  /** What the events waiting for the consumer hold in content (payloadBytes): the replay's backpressure. */
  get bufferedBytes(): number {
    return this.queuedBytes + (this.sink?.pendingBytes ?? 0);
  }

  /** Whether the consumer's connection holds enough unsent that a replay should wait for it. */
  get saturated(): boolean {
    return this.sink?.saturated ?? false;
  }

  /** Bytes the consumer's connection holds unsent (0 without a sink): a replay counts their going down as reading. */
  get unsent(): number {
    return this.sink?.unsent ?? 0;
  }

  /** Live events from the poller, in order. */
  push(payloads: readonly MemoryEventPayload[]): void {
    if (this.ended || this.failed) return;
    if (!this.live) {
      // Replaying (a resuming stream, or one that fell behind): live events wait here, up to a
      // quarter of the buffer. Past it they are dropped (they are in the table) and the replay
      // reads on past them.
      for (const payload of payloads) {
        if (this.held.length >= this.bufferEvents / 4 || this.heldBytes + payloadBytes(payload) > STREAM_BUFFER_BYTES / 4) {
          this.held.length = 0;
          this.heldBytes = 0;
          this.heldDropped += 1;
        }
        this.held.push(payload);
        this.heldBytes += payloadBytes(payload);
      }
      return;
    }
    this.deliver(payloads);
  }

  /** Replay is done: the held live events past the replayed ones follow. */
  goLive(): void {
    this.live = true;
    this.heldBytes = 0;
    this.deliver(this.held.splice(0));
  }

  /** Events in stream order; those at or before the stream's position were delivered already. */
  deliver(payloads: readonly MemoryEventPayload[]): void {
    if (this.ended || this.failed) return;
    let fresh = payloads;
    if (payloads.length > 0 && comparePositions(payloads[0]!.event.position, this.position) <= 0) {
      fresh = payloads.filter((payload) => comparePositions(payload.event.position, this.position) > 0);
    }
    if (fresh.length === 0) return;
    if (this.live) {
      // What fits beside what waits already; the rest is read again from the table, at the
      // consumer's pace (a consumer that takes nothing meanwhile is cut off there).
      const fitting = this.room(fresh);
      if (fitting < fresh.length) {
        this.live = false;
        if (fitting > 0) this.deliver(fresh.slice(0, fitting));
        if (this.isOpen) {
          // From right before the first event that did not fit (a live stream has every earlier one its filter passes): its last event given may be older than events the sweep deleted since (CURSOR_EXPIRED).
          this.position = positionBefore(fresh[fitting]!.event.position);
          this.onBehind(this);
        }
        return;
      }
    }
    this.position = fresh.at(-1)!.event.position;
    // A transport that takes results without waiting for them to be sent (graphql-ws) holds
    // the unsent ones itself: past its bound the consumer is not reading, waiting or not.
    if (this.transport.stalled?.()) {
      this.cutOff();
      return;
    }
    this.given += fresh.length;
    if (this.sink) {
      const sink = this.sink;
      // The sink may hand events back to the iterator as it takes these (this.sink is then null).
      sink.send(fresh);
      if (sink.pending > this.bufferEvents || sink.pendingBytes > STREAM_BUFFER_BYTES) this.cutOff();
      return;
    }
    for (const payload of fresh) this.enqueue(payload);
  }

  /** The consumer's connection took `events` events (the sink wrote them). */
  taken(events = 1): void {
    this.takes += events;
  }

  /** How many of `payloads`, from the first, fit in the buffer beside what waits for the consumer. */
  room(payloads: readonly MemoryEventPayload[]): number {
    let events = this.buffered;
    let bytes = this.bufferedBytes;
    // All of them, mostly: the total of an array the fan-out hands many streams is counted once.
    if (events + payloads.length <= this.bufferEvents && bytes + totalBytes(payloads) <= STREAM_BUFFER_BYTES) return payloads.length;
    let count = 0;
    for (const payload of payloads) {
      events += 1;
      bytes += payloadBytes(payload);
      if (events > this.bufferEvents || bytes > STREAM_BUFFER_BYTES) break;
      count += 1;
    }
    return count;
  }

  /** Cuts the stream off as a consumer that does not read (SLOW_CONSUMER); it resumes from its last cursor. */
  cutOff(): void {
    this.fail(streamError('SLOW_CONSUMER', SLOW_CONSUMER_MESSAGE));
  }

  /** The sink could not write these (in stream order): the iterator yields them, and every event after them. */
  fallBack(payloads: MemoryEventPayload[]): void {
    if (!this.sink) return;
    this.sink = null;
    for (const payload of payloads) this.enqueue(payload);
  }

  private enqueue(payload: MemoryEventPayload): void {
    if (this.ended || this.failed) return;
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      this.takes += 1;
      resolve({ value: payload, done: false });
      return;
    }
    this.queue.push(payload);
    this.queuedBytes += payloadBytes(payload);
    if (this.queue.length > this.bufferEvents || this.queuedBytes > STREAM_BUFFER_BYTES) this.cutOff();
  }

  /** Ends the stream with an error the consumer receives next (what was buffered is dropped: memory is freed now). */
  fail(error: GraphQLError): void {
    if (this.ended || this.failed) return;
    this.failed = true;
    this.queue.length = 0;
    this.held.length = 0;
    this.heldBytes = 0;
    // The error is the stream's last item: what the sink still holds is dropped, and the iterator yields the error.
    this.sink?.close();
    this.sink = null;
    const last = { event: undefined as never, memoryStore: null, memory: null, version: null, failure: error };
    this.queue.push(last);
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve({ value: this.queue.shift()!, done: false });
    }
    this.onEnd(this);
  }

  get isOpen(): boolean {
    return !this.ended && !this.failed;
  }

  next(): Promise<IteratorResult<MemoryEventPayload>> {
    if (this.queue.length > 0) {
      const payload = this.queue.shift()!;
      this.takes += 1;
      this.queuedBytes = this.queue.length === 0 ? 0 : this.queuedBytes - payloadBytes(payload);
      return Promise.resolve({ value: payload, done: false });
    }
    if (this.ended || this.failed) return this.finish();
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  private finish(): Promise<IteratorResult<MemoryEventPayload>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.queue.length = 0;
    this.held.length = 0;
    this.heldBytes = 0;
    this.sink?.close();
    this.sink = null;
    this.onEnd(this);
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = null;
      resolve({ value: undefined, done: true });
    }
  }

  return(): Promise<IteratorResult<MemoryEventPayload>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<MemoryEventPayload> {
    return this;
  }
}
