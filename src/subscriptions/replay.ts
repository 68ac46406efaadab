import type { Database } from '../db/client.js';
import { loadEventSubjects, readReplayPage, type EventPosition, type ReplayEventRecord } from '../domain/events.js';
import { STREAM_BUFFER_BYTES } from '../domain/limits.js';
import type { Logger } from '../logger.js';
import { PAYLOAD_OVERHEAD_BYTES, payloadOf, ReadingWatch, streamError, totalBytes, type EventStream, type MemoryEventPayload } from './event-stream.js';
import type { ReplayBudget, ReplayShare } from './replay-budget.js';

export interface ReplayLimits {
  /** The most events one statement reads (EVENT_BATCH_SIZE). */
  batchSize: number;
  /** The stream's buffer, in events (STREAM_BUFFER_EVENTS). */
  bufferEvents: number;
  /** A consumer that takes nothing of what waits for it for this long is cut off (STREAM_REPLAY_STALL_MS). */
  stallMs: number;
  /** What the instance's replays may hold together (the hub's); without it, only each stream's own bound holds. */
  budget?: ReplayBudget;
}

/** How often a replay looks again whether its consumer has taken what waits. */
const DRAIN_CHECK_MS = 20;
/** A replay whose read fails (the database dropped, say) tries again this often, at most REPLAY_ATTEMPTS times in a row. */
const RETRY_MS = 1_000;
const REPLAY_ATTEMPTS = 5;

/**
 * Replays a stream from the table, from its position, at its consumer's pace, then hands it
 * to the live batches (goLive): a resuming stream, or one that fell behind (a live delivery
 * did not fit its buffer). A page reads up to half the buffer's events, without content, with
 * what each event's memory and version hold (their sizes); its events are loaded and
 * delivered in slices of at most half the buffer's content (STREAM_BUFFER_BYTES), each once
 * the consumer has taken all but a quarter of what waited. So a replay holds at most one
 * slice it has loaded, whatever its events hold. Before it loads a slice, it waits for room in
 * the instance's budget (replay-budget.ts). A consumer that takes nothing for `stallMs`
 * is cut off (SLOW_CONSUMER). `known`: how far the live reader has read (the pages read every
 * event it handed on, whatever the horizon says then: readReplayPage). A read that
 * fails is tried again (readWithRetries). A page that finds the retention sweep has deleted an
 * event after the stream's position ends the stream with CURSOR_EXPIRED: it never passes over
 * what was deleted.
 */
export async function replayStream(stream: EventStream, reads: Database, limits: ReplayLimits, logger: Logger, known: () => EventPosition | null): Promise<void> {
  const sliceEvents = Math.max(1, Math.min(limits.batchSize, Math.floor(limits.bufferEvents / 2)));
  const sliceBytes = STREAM_BUFFER_BYTES / 2;
  const drained = () => drainedTo(stream, sliceEvents / 2, sliceBytes / 2, limits.stallMs);
  const readAgain = <T>(read: () => Promise<T>) => readWithRetries(stream, read, logger);
  const share = limits.budget?.join(stream) ?? null;
  try {
    while (stream.isOpen) {
      if (!(await drained())) return;
      const dropped = stream.heldDropped;
      const read = await readAgain(() => readReplayPage(reads, stream.viewer.workspaceId, stream.filter.memoryStoreId, stream.position, sliceEvents, known()));
      if (read === null) return;
      if (read.swept) {
        stream.fail(streamError('CURSOR_EXPIRED', 'Events after this stream\'s position have passed the retention and were deleted: subscribe again without `after` to start from now.'));
        return;
      }
      const page = read.events;
      const matching = page.filter((event) => stream.matches(event));
      for (let start = 0; start < matching.length; ) {
        if (start > 0 && !(await drained())) return;
        const { end, bytes } = sliceEnd(matching, start, sliceBytes);
        if (share && !(await share.reserve(bytes))) return;
        const slice = matching.slice(start, end);
        const subjects = await readAgain(() => loadEventSubjects(reads, slice));
        if (subjects === null || !(await deliverInRoom(stream, slice.map((event) => payloadOf(event, subjects)), drained, share))) return;
        start = end;
      }
      if (page.length > 0) stream.position = page.at(-1)!.position;
      // Caught up, and every live event since this page's read began is held: live from here.
      if (page.length < sliceEvents && stream.heldDropped === dropped) {
        stream.goLive();
        return;
      }
    }
  } catch (error) {
    failReplay(stream, logger, error);
  } finally {
    // What its consumer has not yet taken of the replay's still counts, until it has.
    share?.leave();
  }
}

/** Ends a stream whose replay cannot go on, with INTERNAL_SERVER_ERROR (it resumes from its last cursor). */
function failReplay(stream: EventStream, logger: Logger, error: unknown): void {
  logger.error('live updates: a stream could not replay', { error });
  stream.fail(streamError('INTERNAL_SERVER_ERROR', 'The stream could not be resumed; subscribe again with `after` set to the last cursor received.'));
}

/**
 * Delivers `payloads` as the stream's buffer has room for them, waiting for the consumer
 * between parts: their content may have grown since the page read their sizes. False once
 * the stream has ended.
 */
async function deliverInRoom(stream: EventStream, payloads: MemoryEventPayload[], drained: () => Promise<boolean>, share: ReplayShare | null): Promise<boolean> {
  let rest = payloads;
  // The slice as loaded (its memories may have grown since the page): the replay holds it until it is handed on.
  share?.loaded(totalBytes(rest));
  try {
    while (stream.isOpen && rest.length > 0) {
      // One event always goes once the consumer has drained: it is less than a quarter of the buffer.
      const room = Math.max(stream.room(rest), stream.buffered === 0 ? 1 : 0);
      if (room > 0) {
        const handed = rest.slice(0, room);
        stream.deliver(handed);
        rest = rest.slice(room);
        share?.handedOn(handed.length, totalBytes(handed));
      }
      if (rest.length > 0 && !(await drained())) return false;
    }
    return stream.isOpen;
  } finally {
    share?.loaded(0);
  }
}

/** Runs a read of the replay, again after RETRY_MS when it fails, at most REPLAY_ATTEMPTS times: null once the stream has ended or failed. */
async function readWithRetries<T>(stream: EventStream, read: () => Promise<T>, logger: Logger): Promise<T | null> {
  for (let failures = 1; stream.isOpen; failures += 1) {
    try {
      return await read();
    } catch (error) {
      if (!stream.isOpen) return null;
      if (failures >= REPLAY_ATTEMPTS) {
        failReplay(stream, logger, error);
        return null;
      }
      logger.warn('live updates: a stream\'s replay failed to read; trying again', { error });
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
  return null;
}

/** Where the slice from `start` ends, and what it holds: at most `bytes` of content (as payloadBytes counts it, from the events' sizes), and at least one event. */
function sliceEnd(events: readonly ReplayEventRecord[], start: number, bytes: number): { end: number; bytes: number } {
  let end = start;
  let total = 0;
  while (end < events.length) {
    const next = PAYLOAD_OVERHEAD_BYTES + events[end]!.contentBytes;
    if (end > start && total + next > bytes) break;
    total += next;
    end += 1;
  }
  return { end, bytes: total };
}

/**
 * Waits until at most `events` events and `bytes` of content wait for the stream's consumer,
 * and its connection is not saturated: false once the stream has ended, or has been cut off
 * because its consumer read nothing for `stallMs` (ReadingWatch).
 */
async function drainedTo(stream: EventStream, events: number, bytes: number, stallMs: number): Promise<boolean> {
  const watch = new ReadingWatch(stream);
  while (stream.isOpen && (stream.buffered > events || stream.bufferedBytes > bytes || stream.saturated)) {
    if (watch.stalled(performance.now(), stallMs)) stream.cutOff();
    else await new Promise((resolve) => setTimeout(resolve, DRAIN_CHECK_MS));
  }
  return stream.isOpen;
}
