import type { ExecutionResult } from 'graphql';
import { STREAM_BUFFER_BYTES, STREAM_SEND_AHEAD_BYTES } from '../domain/limits.js';
import { payloadBytes, type MemoryEventPayload, type SinkStream, type StreamSink } from '../subscriptions/event-stream.js';
import type { Outlet } from './outlets.js';

/**
 * Direct delivery of live events: a stream whose consumer is connected by a real socket
 * (SSE's response, or a graphql-ws operation on a WebSocket) writes each event's result to
 * that connection itself, as the frame its transport would write (`event: next` for SSE, a
 * `next` message for graphql-ws), instead of handing it to the stream's iterator and the
 * transport's per-result machinery. A result is executed once for every stream that asks
 * the same of it (shared-results.ts), its frame is made once too (outlets.ts), and a
 * delivery's bytes once for the streams of one sharing key: a thousand SSE streams of one
 * dashboard then cost one execution and one serialization per event, and a thousand writes
 * per batch.
 *
 * Only results without errors go this way. A result with errors needs what belongs to its
 * request (masking, its log line): the sink writes what it holds before it, then hands that
 * event and the rest of the stream back to the iterator, which the transport answers as
 * it answers any stream (and after the frames written here: they are on the connection
 * already). The stream's last item (an error that ends it) always takes the iterator.
 * test/live-delivery-paths.test.ts holds both ways to the same bytes.
 */

/** Frames written at once, at most, while more events keep coming. */
const FRAMES_PER_WRITE = 64;
/** How often a sink looks again whether its response's head is out. */
const READY_RETRY_MS = 2;

/** What a stream's event is answered with: its result, executed once per shape (shared-results.ts). */
export type ResultOf = (payload: MemoryEventPayload) => ExecutionResult | Promise<ExecutionResult>;

/**
 * The bytes of a delivery as the first stream of a sharing key wrote them (joined, if in more
 * than one write), by the delivery's events (the one array the fan-out hands every stream
 * whose filter it passes alike). A stream of that key that would write the same events at
 * once (nothing of its own waiting, its connection ready) writes these bytes, as its outlet
 * adapts them (a graphql-ws operation puts its own id in each message): a thousand streams
 * of one dashboard then cost one execution, one frame and one join per event and a thousand
 * writes per batch, not a thousand frames and joins. Kept as long as the fan-out holds the
 * array, and only for keys that more than one open sink has (`sharers`): a key of one stream
 * keeps no copy of what it wrote.
 */
const deliveries = new WeakMap<readonly MemoryEventPayload[], Map<string, Buffer>>();
/** The open sinks of each sharing key that more than none has. */
const sharers = new Map<string, number>();

/** What a delivery written as `writes` is kept as for sharers: one write as it is, several joined once if a sharer could take them (within the send-ahead); else null. */
function sharedBytesOf(writes: Buffer[]): Buffer | null {
  if (writes.length <= 1) return writes[0] ?? null;
  let length = 0;
  for (const bytes of writes) length += bytes.length;
  return length <= STREAM_SEND_AHEAD_BYTES ? Buffer.concat(writes, length) : null;
}

/**
 * The sink of one stream (event-stream.ts): its events, in order, written to its outlet. It
 * writes ahead of its consumer at most STREAM_SEND_AHEAD_BYTES (and one batch's frames):
 * past that, events wait in its queue until the connection drains. Its queue counts in the
 * stream's buffer (event-stream.ts), which a live batch does not overfill.
 */
export class DirectSink implements StreamSink {
  private readonly queue: MemoryEventPayload[] = [];
  /** What the queued events hold in content, roughly (payloadBytes). */
  private queuedBytes = 0;
  /** Frames made and not yet written: they leave together. */
  private readonly frames: Buffer[] = [];
  private framedBytes = 0;
  private stream: SinkStream | null = null;
  private resultOf: ResultOf | null = null;
  /** The key whose streams write a delivery's events as the same bytes (the shape and the outlet's sharing key), or null. */
  private sharing: string | null = null;
  /** Set while a result is awaited (an execution with I/O), the connection is not ready, or it drains. */
  private waiting = false;
  /** Set while a write of the frames made so far is due after this turn. */
  private flushSoon = false;
  private closed = false;
  /** While `send` writes a delivery others of its key may write too: what it wrote, write by write. */
  private recorded: Buffer[] | null = null;

  constructor(private readonly outlet: Outlet) {}

  attach(stream: SinkStream): void {
    this.stream = stream;
    this.outlet.onGone?.(() => stream.close());
  }

  /**
   * Starts writing, each event answered by `resultOf`: events that came before wait until
   * then. `shape` (shared-results.ts: streams of one shape answer an event with one result)
   * lets the streams of one shape on alike connections share a delivery's bytes.
   */
  start(resultOf: ResultOf, shape?: string): void {
    this.resultOf = resultOf;
    if (shape !== undefined && this.sharing === null && !this.closed) {
      this.sharing = `${this.outlet.sharingKey()}\n${shape}`;
      sharers.set(this.sharing, (sharers.get(this.sharing) ?? 0) + 1);
    }
    this.pump();
  }

  send(payloads: readonly MemoryEventPayload[]): void {
    if (this.closed) return;
    // A delivery this sink can write at once, in order, whole: as another stream of its key wrote it, if one did.
    const shared = this.sharing !== null && this.queue.length === 0 && this.frames.length === 0 && !this.waiting && this.outlet.ready() && !this.outlet.gone();
    if (shared) {
      const bytes = deliveries.get(payloads)?.get(this.sharing!);
      if (bytes !== undefined && this.outlet.unsent() + bytes.length <= STREAM_SEND_AHEAD_BYTES) {
        this.writeOut(this.outlet.adapt ? this.outlet.adapt(bytes) : bytes);
        // Every event of the delivery (a replay's room is given back by the count: replay-budget.ts).
        this.stream?.taken(payloads.length);
        return;
      }
    }
    for (const payload of payloads) {
      this.queue.push(payload);
      this.queuedBytes += payloadBytes(payload);
    }
    const recording = shared && sharers.get(this.sharing!)! > 1;
    if (recording) this.recorded = [];
    this.pump();
    const written = this.recorded;
    this.recorded = null;
    // Every event written, in this turn: those are the delivery's bytes for the streams of this key.
    const bytes = recording && !this.closed && this.queue.length === 0 && !this.waiting && written !== null ? sharedBytesOf(written) : null;
    if (bytes !== null) {
      let byKey = deliveries.get(payloads);
      if (!byKey) deliveries.set(payloads, (byKey = new Map()));
      byKey.set(this.sharing!, bytes);
    }
  }

  get pending(): number {
    return this.queue.length;
  }

  get pendingBytes(): number {
    return this.queuedBytes;
  }

  get saturated(): boolean {
    return this.outlet.unsent() > STREAM_SEND_AHEAD_BYTES;
  }

  get unsent(): number {
    return this.outlet.unsent();
  }

  /** More than STREAM_BUFFER_BYTES unsent: the consumer is not reading (its stream is cut off). */
  get stalled(): boolean {
    return this.outlet.unsent() > STREAM_BUFFER_BYTES;
  }

  close(): void {
    if (this.sharing !== null && !this.closed) {
      const left = sharers.get(this.sharing)! - 1;
      if (left > 0) sharers.set(this.sharing, left);
      else sharers.delete(this.sharing);
    }
    this.closed = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.frames.length = 0;
    this.framedBytes = 0;
  }

  /**
   * Frames the queued events in order, and writes them. Results already made (an execution
   * without I/O, or another stream's) are taken in this turn; an awaited one resumes the pump
   * when it comes. What is framed before it leaves after this turn's promises (once I/O is
   * polled): executions whose I/O answers within the turn (PGlite's, in process) add theirs
   * to the same write.
   */
  private pump(): void {
    let awaiting = false;
    while (!this.waiting && !this.closed && this.resultOf !== null && this.queue.length > 0) {
      if (this.outlet.gone()) {
        // The connection is gone: so is the stream (its slot, its place in the fan-out).
        this.close();
        this.stream?.close();
        return;
      }
      if (!this.outlet.ready()) {
        this.waitFor(new Promise((resolve) => setTimeout(resolve, READY_RETRY_MS)));
        break;
      }
      if (this.outlet.unsent() + this.framedBytes > STREAM_SEND_AHEAD_BYTES) {
        // The consumer reads slower than events come: the next ones wait here, counted.
        this.flush();
        this.waitFor(new Promise<void>((resolve) => this.outlet.onDrain(resolve)));
        break;
      }
      let answer: ExecutionResult | Promise<ExecutionResult>;
      try {
        answer = this.resultOf(this.queue[0]!);
      } catch {
        return this.handBack();
      }
      if (answer instanceof Promise) {
        this.waitFor(answer.then((result) => this.take(result)));
        awaiting = true;
        break;
      }
      this.take(answer);
    }
    if (!awaiting) this.flush();
    else if (this.frames.length > 0 && !this.flushSoon) {
      this.flushSoon = true;
      setImmediate(() => {
        this.flushSoon = false;
        this.flush();
      });
    }
  }

  private waitFor(work: Promise<unknown>): void {
    this.waiting = true;
    work.then(
      () => {
        this.waiting = false;
        this.pump();
      },
      () => {
        this.waiting = false;
        // The iterator answers it as any stream's result, with its error masked and logged.
        this.handBack();
      },
    );
  }

  /** The next event's result: its frame, or (with errors, or a frame that cannot be made) the hand-back to the iterator. */
  private take(result: ExecutionResult): void {
    if (this.closed) return;
    if (result.errors?.length) return this.handBack();
    let frame: Buffer;
    try {
      frame = this.outlet.frame(result);
    } catch {
      return this.handBack();
    }
    const payload = this.queue.shift()!;
    this.queuedBytes = this.queue.length === 0 ? 0 : this.queuedBytes - payloadBytes(payload);
    this.frames.push(frame);
    this.framedBytes += frame.length;
    this.stream?.taken();
    if (this.frames.length >= FRAMES_PER_WRITE || this.framedBytes > STREAM_SEND_AHEAD_BYTES) this.flush();
  }

  private flush(): void {
    if (this.frames.length === 0) return;
    const bytes = this.frames.length === 1 ? this.frames[0]! : Buffer.concat(this.frames, this.framedBytes);
    this.frames.length = 0;
    this.framedBytes = 0;
    if (!this.closed && !this.outlet.gone()) this.writeOut(bytes);
    // Frames not written: what this sink wrote is not the delivery's bytes.
    else this.recorded = null;
  }

  private writeOut(bytes: Buffer): void {
    try {
      this.outlet.write(bytes);
      this.recorded?.push(bytes);
    } catch {
      // A connection that cannot be written to is gone: its stream ends (and resumes by cursor).
      this.close();
      this.stream?.close();
    }
  }

  /** The frames made so far go out; the next event and every later one take the stream's iterator. */
  private handBack(): void {
    if (this.closed) return;
    this.flush();
    const rest = this.queue.splice(0);
    this.close();
    this.stream?.fallBack(rest);
  }
}
