import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ExecutionResult } from 'graphql';
import * as wsModule from 'ws';
import { WebSocket } from 'ws';
import { STREAM_BUFFER_BYTES, STREAM_SEND_AHEAD_BYTES } from '../domain/limits.js';
import { payloadBytes, type MemoryEventPayload, type SinkStream, type StreamSink } from '../subscriptions/event-stream.js';
import { withExtensions } from './pipeline.js';

/**
 * Direct delivery of live events: a stream whose consumer is connected by a real socket
 * (SSE's response, or a graphql-ws operation on a WebSocket) writes each event's result to
 * that connection itself, as the frame its transport would write (`event: next` for SSE, a
 * `next` message for graphql-ws), instead of handing it to the stream's iterator and the
 * transport's per-result machinery. A result is executed once for every stream that asks
 * the same of it (shared-results.ts), and its frame is made once too: a thousand streams
 * of one dashboard then cost one execution, one serialization and a thousand writes per
 * event.
 *
 * Only results without errors go this way. A result with errors needs what belongs to its
 * request (masking, its log line): the sink writes what it holds before it, then hands that
 * event and the rest of the stream back to the iterator, which the transport answers as
 * it answers any stream (and after the frames written here: they are on the connection
 * already). The stream's last item (an error that ends it) always takes the iterator.
 * test/live-delivery-paths.test.ts holds both ways to the same bytes.
 */

/** A connection a stream's frames can be written to. */
export interface Outlet {
  /** Whether frames may be written yet (SSE: once the response's head is out). */
  ready(): boolean;
  /** Whether the connection is gone or its response ended. */
  gone(): boolean;
  /** Bytes written and not yet taken by the kernel. */
  unsent(): number;
  /** What is written of a result without errors: its whole frame, or (WebSocket) its JSON, which `write` frames. */
  frame(result: ExecutionResult): Buffer;
  /** Writes frames, in order, in one write. */
  write(frames: Buffer[]): void;
  /** Calls `callback` once, when what waits unsent has gone to the kernel (or the connection is gone). */
  onDrain(callback: () => void): void;
  /** Calls `callback` once the connection is gone, if the transport would not end the stream itself then. */
  onGone?(callback: () => void): void;
}

/** Frames written at once, at most, while more events keep coming. */
const FRAMES_PER_WRITE = 64;
/** How often a sink looks again whether its response's head is out. */
const READY_RETRY_MS = 2;
/** How often a sink without a socket to watch looks again whether what it wrote has gone. */
const DRAIN_RETRY_MS = 20;

/** The JSON of a result, made once per result for every stream that writes it (results are shared per shape). */
const resultJson = new WeakMap<ExecutionResult, Buffer>();
function jsonOf(result: ExecutionResult): Buffer {
  let json = resultJson.get(result);
  if (json === undefined) resultJson.set(result, (json = Buffer.from(JSON.stringify(result))));
  return json;
}

/** The SSE frames of results, with the `extensions` of the streams that wrote them (the same for one shape). */
const sseFrames = new WeakMap<ExecutionResult, { extensions: string; frame: Buffer }>();

function joined(frames: Buffer[]): Buffer {
  return frames.length === 1 ? frames[0]! : Buffer.concat(frames);
}

/**
 * GraphQL over SSE on a Node response: `event: next` frames, as graphql-yoga writes them,
 * each result with the request's `extensions` added, as yoga-stages.ts settles it. A frame
 * is made once for every stream of a shape.
 */
export function sseOutlet(response: ServerResponse, extensionsOf: () => Record<string, unknown> | undefined): Outlet {
  let streaming = false;
  let extensions: { value: Record<string, unknown> | undefined; text: string } | undefined;
  return {
    ready() {
      // The head is out, and it is the event stream's: a stream's response is the only 200 a
      // subscription's request gets (one that cannot take the stream is refused, 406).
      streaming ||= response.headersSent && response.statusCode === 200;
      return streaming;
    },
    // A refused request's answer is no stream's: its stream ends.
    gone: () => response.destroyed || response.writableEnded || (response.headersSent && response.statusCode !== 200),
    unsent: () => response.writableLength,
    frame(result) {
      if (!extensions) {
        const value = extensionsOf();
        extensions = { value, text: JSON.stringify(value ?? null) };
      }
      const cached = sseFrames.get(result);
      if (cached?.extensions === extensions.text) return cached.frame;
      const frame = Buffer.from(`event: next\ndata: ${JSON.stringify(withExtensions(result, extensions.value))}\n\n`);
      sseFrames.set(result, { extensions: extensions.text, frame });
      return frame;
    },
    write(frames) {
      response.write(joined(frames));
    },
    onDrain(callback) {
      drainOrClose(response, callback);
    },
    // A client that leaves before the head is written, or a refused request, leaves no reader
    // that would end the stream (Yoga ends it through the body it reads).
    onGone(callback) {
      if (response.destroyed || response.writableEnded) queueMicrotask(callback);
      else response.once('close', callback);
    },
  };
}

/** `callback` once `emitter` drains or closes, whichever comes first. */
function drainOrClose(emitter: NodeJS.EventEmitter, callback: () => void): void {
  const done = () => {
    emitter.off('drain', done);
    emitter.off('close', done);
    callback();
  };
  emitter.once('drain', done);
  emitter.once('close', done);
}

const CLOSE_BRACE = Buffer.from('}');

/** `ws`'s own framing (public, though its type declarations omit it): a final text frame, unmasked, as a server sends it. */
const { Sender } = wsModule as unknown as { Sender: { frame(data: Buffer, options: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1: boolean }): Buffer[] } };
const TEXT_FRAME = { fin: true, opcode: 1, mask: false, readOnly: true, rsv1: false };

/**
 * graphql-ws on a WebSocket: one `next` message per result, for the operation `id`, as
 * graphql-ws writes it. The frames of a batch go to the socket in one write, beside `ws`'s
 * own: memstore's WebSocket server compresses nothing, so `ws` writes each frame as it is
 * sent and frames never interleave; were its sender ever to queue (compression, binary
 * data read asynchronously), the frames go through `ws.send`, after what it queued.
 */
export function webSocketOutlet(ws: WebSocket, socket: Socket | undefined, id: string): Outlet {
  const open = Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":`);
  const sender = (ws as unknown as { _sender?: { _queue?: unknown[]; _state?: number } })._sender;
  return {
    ready: () => true,
    gone: () => ws.readyState !== WebSocket.OPEN,
    unsent: () => ws.bufferedAmount,
    // The result's JSON, shared by every stream of its shape: the message around it is this operation's.
    frame: jsonOf,
    write(results) {
      if (!socket || sender?._queue?.length || sender?._state) {
        for (const json of results) ws.send(Buffer.concat([open, json, CLOSE_BRACE]), { binary: false });
        return;
      }
      const parts: Buffer[] = [];
      for (const json of results) parts.push(...Sender.frame(Buffer.concat([open, json, CLOSE_BRACE]), TEXT_FRAME));
      socket.write(Buffer.concat(parts));
    },
    onDrain(callback) {
      // graphql-ws ends the stream when the socket closes; `ws` queues nothing here (see write).
      if (socket) drainOrClose(socket, callback);
      else setTimeout(callback, DRAIN_RETRY_MS);
    },
  };
}

/** What a stream's event is answered with: its result, executed once per shape (shared-results.ts). */
export type ResultOf = (payload: MemoryEventPayload) => ExecutionResult | Promise<ExecutionResult>;

/**
 * The sink of one stream (event-stream.ts): its events, in order, written to its outlet. It
 * writes ahead of its consumer at most STREAM_SEND_AHEAD_BYTES (and one batch's frames):
 * past that, events wait in its queue until the connection drains, and a queue past the
 * stream's bound cuts the stream off (SLOW_CONSUMER), as a stream's own buffer does.
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
  /** Set while a result is awaited (an execution with I/O), the connection is not ready, or it drains. */
  private waiting = false;
  /** Set while a write of the frames made so far is due after this turn. */
  private flushSoon = false;
  private closed = false;

  constructor(private readonly outlet: Outlet) {}

  attach(stream: SinkStream): void {
    this.stream = stream;
    this.outlet.onGone?.(() => stream.close());
  }

  /** Starts writing, each event answered by `resultOf`: events that came before wait until then. */
  start(resultOf: ResultOf): void {
    this.resultOf = resultOf;
    this.pump();
  }

  send(payloads: readonly MemoryEventPayload[]): void {
    if (this.closed) return;
    for (const payload of payloads) {
      this.queue.push(payload);
      this.queuedBytes += payloadBytes(payload);
    }
    this.pump();
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

  /** More than STREAM_BUFFER_BYTES unsent: the consumer is not reading (its stream is cut off). */
  get stalled(): boolean {
    return this.outlet.unsent() > STREAM_BUFFER_BYTES;
  }

  close(): void {
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
    if (this.frames.length >= FRAMES_PER_WRITE || this.framedBytes > STREAM_SEND_AHEAD_BYTES) this.flush();
  }

  private flush(): void {
    if (this.frames.length === 0) return;
    try {
      if (!this.closed && !this.outlet.gone()) this.outlet.write(this.frames);
    } catch {
      // A connection that cannot be written to is gone: its stream ends (and resumes by cursor).
      this.close();
      this.stream?.close();
    } finally {
      this.frames.length = 0;
      this.framedBytes = 0;
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
