import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ExecutionResult } from 'graphql';
import { WebSocket } from 'ws';
import { withExtensions } from './pipeline.js';

/**
 * The connections a live stream's events are written to directly (direct-delivery.ts): an
 * SSE response, or a graphql-ws operation on a WebSocket. Each makes a result's frame as its
 * transport would (`event: next` for SSE, a `next` message for graphql-ws), the same bytes for
 * every connection of one sharing key, and writes frames in one write.
 */

/** A connection a stream's frames can be written to. */
export interface Outlet {
  /**
   * What, besides a result, decides the bytes of its frame on this connection (the transport,
   * and SSE's extensions or graphql-ws's operation id): connections of one sharing key write
   * one result as the same bytes.
   */
  sharingKey(): string;
  /** Whether frames may be written yet (SSE: once the response's head is out). */
  ready(): boolean;
  /** Whether the connection is gone or its response ended. */
  gone(): boolean;
  /** Bytes written and not yet taken by the kernel. */
  unsent(): number;
  /** The bytes a result without errors is written as: its whole frame. */
  frame(result: ExecutionResult): Buffer;
  /**
   * Frames another connection of this sharing key made, as this connection writes them (the
   * same frames for its own operation): absent where they are the same bytes.
   */
  adapt?(frames: Buffer): Buffer;
  /** Writes frames (`frame`'s bytes, one after another) in one write. */
  write(frames: Buffer): void;
  /** Calls `callback` once, when what waits unsent has gone to the kernel (or the connection is gone). */
  onDrain(callback: () => void): void;
  /** Calls `callback` once the connection is gone, if the transport would not end the stream itself then. */
  onGone?(callback: () => void): void;
}

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

/**
 * GraphQL over SSE on a Node response: `event: next` frames, as graphql-yoga writes them,
 * each result with the request's `extensions` added, as yoga-stages.ts settles it. A frame
 * is made once for every stream of a shape.
 */
export function sseOutlet(response: ServerResponse, extensionsOf: () => Record<string, unknown> | undefined): Outlet {
  let streaming = false;
  let extensions: { value: Record<string, unknown> | undefined; text: string } | undefined;
  // Settled once, when first needed: a stream's extensions do not change while it runs.
  const settled = () => {
    if (!extensions) {
      const value = extensionsOf();
      extensions = { value, text: JSON.stringify(value ?? null) };
    }
    return extensions;
  };
  return {
    sharingKey: () => `sse ${settled().text}`,
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
      const { value, text } = settled();
      const cached = sseFrames.get(result);
      if (cached?.extensions === text) return cached.frame;
      const frame = Buffer.from(`event: next\ndata: ${JSON.stringify(withExtensions(result, value))}\n\n`);
      sseFrames.set(result, { extensions: text, frame });
      return frame;
    },
    write(frames) {
      response.write(frames);
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

/**
 * A final, unmasked text frame (RFC 6455 §5.2), as a server sends it, holding `parts`
 * one after another: one allocation, the parts copied once. `ws`'s `Sender.frame` makes the
 * same bytes from a message already joined, two allocations and two copies; for a
 * graphql-ws stream of its own operation id, which frames every event of every batch, that
 * cost F1 (bench:fan-out, 1,000 streams) 0.66–0.68× against 0.73× this way, side by side.
 */
function textFrame(...parts: Buffer[]): Buffer {
  let length = 0;
  for (const part of parts) length += part.length;
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81;
  if (header === 2) frame[1] = length;
  else if (header === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  let offset = header;
  for (const part of parts) offset += part.copy(frame, offset);
  return frame;
}

/** Where the payload of the unmasked frame at `offset` (as textFrame makes them) begins, and its length: the frame's header read once. */
function payloadAt(frames: Buffer, offset: number): { start: number; length: number } {
  const short = frames[offset + 1]! & 0x7f;
  if (short < 126) return { start: offset + 2, length: short };
  if (short === 126) return { start: offset + 4, length: frames.readUInt16BE(offset + 2) };
  return { start: offset + 10, length: Number(frames.readBigUInt64BE(offset + 2)) };
}

/** Calls `visit` with where each payload of unmasked frames written one after another (as textFrame makes them) begins, and its length. */
function eachPayload(frames: Buffer, visit: (start: number, length: number) => void): void {
  for (let offset = 0; offset < frames.length; ) {
    const { start, length } = payloadAt(frames, offset);
    visit(start, length);
    offset = start + length;
  }
}

/** The payloads of unmasked frames written one after another (as textFrame makes them). */
function payloadsOfFrames(frames: Buffer): Buffer[] {
  const payloads: Buffer[] = [];
  eachPayload(frames, (start, length) => payloads.push(frames.subarray(start, start + length)));
  return payloads;
}

/** Whether `bytes` holds `part` at `offset`. */
function isAt(bytes: Buffer, offset: number, part: Buffer): boolean {
  return offset + part.length <= bytes.length && bytes.compare(part, 0, part.length, offset, offset + part.length) === 0;
}

/** Where a graphql-ws message's operation id (as JSON) begins in it: after `{"id":`. */
const ID_AT = '{"id":'.length;

/**
 * `next` frames another operation's outlet made (its id as long as this one's, as JSON) as
 * this operation's: a copy with `idJson` in each message. The frames' headers are the same,
 * since each message is as long: one copy and a few bytes a frame (where the ids are is found
 * once per frames), where framing each result again costs a result's look-up, an allocation
 * and three copies.
 */
function withOperationId(frames: Buffer, idJson: Buffer): Buffer {
  // Made for an operation of the same id (clients that name every operation alike): the very bytes.
  if (frames.length === 0 || isAt(frames, payloadAt(frames, 0).start + ID_AT, idJson)) return frames;
  const copy = Buffer.allocUnsafe(frames.length);
  copy.set(frames);
  for (const offset of idOffsetsOf(frames)) copy.set(idJson, offset);
  return copy;
}

/** Where the ids of frames' messages begin, found once per frames for every operation that adapts them. */
const idOffsets = new WeakMap<Buffer, number[]>();
function idOffsetsOf(frames: Buffer): number[] {
  let offsets = idOffsets.get(frames);
  if (offsets === undefined) {
    offsets = [];
    eachPayload(frames, (start) => offsets!.push(start + ID_AT));
    idOffsets.set(frames, offsets);
  }
  return offsets;
}

/**
 * graphql-ws on a WebSocket: one `next` message per result, for the operation `id`, as
 * graphql-ws writes it, in a text frame. The frames go to the socket in one write, beside
 * `ws`'s own: memstore's WebSocket server compresses nothing, so `ws` writes each frame as
 * it is sent and frames never interleave; were its sender ever to queue (compression,
 * binary data read asynchronously), the messages go through `ws.send`, after what it queued.
 */
export function webSocketOutlet(ws: WebSocket, socket: Socket | undefined, id: string): Outlet {
  const idJson = Buffer.from(JSON.stringify(id));
  const open = Buffer.concat([Buffer.from('{"id":'), idJson, Buffer.from(',"type":"next","payload":')]);
  const sender = (ws as unknown as { _sender?: { _queue?: unknown[]; _state?: number } })._sender;
  return {
    // Operations whose ids are as long write one result as frames of one layout, the id aside (adapt).
    sharingKey: () => `ws ${idJson.length}`,
    ready: () => true,
    gone: () => ws.readyState !== WebSocket.OPEN,
    unsent: () => ws.bufferedAmount,
    // The result's JSON is shared by every stream of its shape; the message around it is this operation's.
    frame: (result) => textFrame(open, jsonOf(result), CLOSE_BRACE),
    adapt: (frames) => withOperationId(frames, idJson),
    write(frames) {
      if (!socket || sender?._queue?.length || sender?._state) {
        for (const message of payloadsOfFrames(frames)) ws.send(message, { binary: false });
        return;
      }
      socket.write(frames);
    },
    onDrain(callback) {
      // graphql-ws ends the stream when the socket closes; `ws` queues nothing here (see write).
      if (socket) drainOrClose(socket, callback);
      else setTimeout(callback, DRAIN_RETRY_MS);
    },
  };
}
