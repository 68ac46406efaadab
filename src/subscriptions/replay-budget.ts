import { ReadingWatch, type EventStream } from './event-stream.js';

/** How often the budget looks again, while replays wait for room: whether the first in line fits, and whether consumers that hold room read. */
const CHECK_MS = 20;

/**
 * What an instance's replays hold at once, in content (payloadBytes): the slices they have
 * loaded and not yet handed to their streams, and the replayed events that wait for the
 * consumers of those streams, also after a stream has gone live. Each stream's buffer is
 * bounded (STREAM_BUFFER_BYTES), and live events are shared by every stream (they are not
 * counted here); but a replay's events are its own. Without a bound across streams, many
 * resuming streams whose consumers read slowly (on as many keys as an admin mints) would
 * together hold as much as their number allows.
 *
 * A replay asks for room before it loads a slice (`reserve`), and waits its turn while there
 * is none: first come, first served, so that a large slice is not passed over for ever by
 * small ones. A replay alone is let through whatever its slice holds. While replays wait, a
 * stream that holds room and whose consumer reads nothing of what waits for it for the stall
 * time is cut off (SLOW_CONSUMER): a consumer that went away without closing never keeps
 * the others waiting for long. A stream in line with nothing waiting is not cut off for
 * waiting.
 */
export class ReplayBudget {
  private readonly shares = new Map<EventStream, ReplayShare>();
  private readonly line: Waiting[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly limitBytes: number,
    /** How long a consumer that holds room may read nothing while replays wait (STREAM_REPLAY_STALL_MS). */
    private readonly stallMs: number,
  ) {}

  /** A replay of `stream` begins: its part of the budget (a stream has one part, whichever replay of it holds it). */
  join(stream: EventStream): ReplayShare {
    // A stream that falls behind again: what it still holds of its last replay goes on counting.
    const share = new ReplayShare(this, stream, this.shares.get(stream)?.untaken() ?? []);
    this.shares.set(stream, share);
    return share;
  }

  /** The stream has ended: whatever part it had is given up (its replay, if any, ends too). */
  forget(stream: EventStream): void {
    this.shares.delete(stream);
  }

  /** What the instance's replays hold now, in content. */
  get heldBytes(): number {
    let total = 0;
    for (const share of this.shares.values()) {
      const bytes = share.bytes;
      if (bytes === 0 && share.finished) this.shares.delete(share.stream);
      total += bytes;
    }
    return total;
  }

  /** Replays waiting in line for room. */
  get waiting(): number {
    return this.line.length;
  }

  /** @internal ReplayShare.reserve */
  enqueue(waiting: Waiting): void {
    // Replays begin to wait: the stall time of those that hold room counts from now.
    if (this.line.length === 0) for (const share of this.shares.values()) share.watch.seen(performance.now());
    this.line.push(waiting);
    this.check();
  }

  /** @internal a share whose replay ends */
  leave(share: ReplayShare): void {
    if (share.bytes === 0 && this.shares.get(share.stream) === share) this.shares.delete(share.stream);
    this.check();
  }

  /** Cuts off the consumers that hold room and read nothing; answers (false) the replays whose streams ended; lets through, in line, every replay that fits. */
  private check(): void {
    if (this.line.length === 0) return;
    const now = performance.now();
    for (const share of this.shares.values()) {
      // A consumer with nothing waiting for it is not stalling anyone.
      if (share.stream.buffered === 0) share.watch.seen(now);
      else if (share.watch.stalled(now, this.stallMs) && share.bytes > 0) share.stream.cutOff();
    }
    for (let index = 0; index < this.line.length; ) {
      const waiting = this.line[index]!;
      if (!waiting.share.stream.isOpen) {
        this.line.splice(index, 1);
        waiting.answer(false);
      } else index += 1;
    }
    while (this.line.length > 0) {
      const first = this.line[0]!;
      const held = this.heldBytes;
      if (held + first.bytes > this.limitBytes && held - first.share.bytes > 0) break;
      this.line.shift();
      first.share.loading = first.bytes;
      first.answer(true);
    }
    if (this.line.length > 0 && this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.check();
      }, CHECK_MS);
      this.timer.unref?.();
    }
  }
}

interface Run {
  end: number;
  events: number;
  bytes: number;
}

interface Waiting {
  share: ReplayShare;
  bytes: number;
  answer(granted: boolean): void;
}

/**
 * One stream's part of the instance's ReplayBudget: what its replay has loaded and not yet
 * handed on, and the replayed events it has handed on that its consumer has not yet taken
 * (events are taken in the order they were given: `EventStream.given` and `takes`).
 */
export class ReplayShare {
  /** Content loaded for the stream and not yet handed to it. */
  loading = 0;
  private ended = false;
  readonly watch: ReadingWatch;

  constructor(
    private readonly budget: ReplayBudget,
    readonly stream: EventStream,
    /** The replayed events handed on and not yet all taken, as runs: the stream's `given` once the run was in, its events and their content. */
    private readonly runs: Run[] = [],
  ) {
    this.watch = new ReadingWatch(stream);
  }

  /** The runs its consumer has not yet taken all of. */
  untaken(): Run[] {
    const { takes } = this.stream;
    while (this.runs.length > 0 && takes >= this.runs[0]!.end) this.runs.shift();
    return this.runs;
  }

  /** What the stream holds of its replay's. */
  get bytes(): number {
    if (!this.stream.isOpen) return 0;
    const { takes } = this.stream;
    let total = this.loading;
    for (const run of this.untaken()) {
      const untaken = Math.min(run.events, run.end - takes);
      total += untaken === run.events ? run.bytes : Math.ceil((run.bytes * untaken) / run.events);
    }
    return total;
  }

  /** Whether the replay has ended (gone live, or its stream ended): the share only drains from here. */
  get finished(): boolean {
    return this.ended || !this.stream.isOpen;
  }

  /**
   * Waits for room for a slice of `bytes` (its events' sizes as the page read them): true
   * once it is the replay's (`loading`), false once the stream has ended, or has been cut off.
   */
  reserve(bytes: number): Promise<boolean> {
    return new Promise((answer) => this.budget.enqueue({ share: this, bytes, answer }));
  }

  /** The replay loaded a slice holding `bytes` (its memories may have grown since the page read their sizes). */
  loaded(bytes: number): void {
    this.loading = bytes;
  }

  /** The replay handed `events` events holding `bytes` of what it loaded to its stream (`given` counts them already). */
  handedOn(events: number, bytes: number): void {
    this.runs.push({ end: this.stream.given, events, bytes });
    this.loading = Math.max(0, this.loading - bytes);
  }

  /** The replay ended (the stream went live, or ended): what the consumer has not yet taken of it still counts, until it has. */
  leave(): void {
    this.ended = true;
    this.loading = 0;
    this.budget.leave(this);
  }
}
