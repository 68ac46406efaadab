import type { EventStream } from './event-stream.js';

/** How often the budget looks again whether the first replay in line fits, and whether the waiting streams' consumers read. */
const CHECK_MS = 20;

/**
 * What an instance's replays hold at once, in content (payloadBytes): the slices they have
 * loaded and not yet handed to their streams, and what waits for the consumers of those
 * streams. Each stream's buffer is bounded (STREAM_BUFFER_BYTES), and live events are shared
 * by every stream; but a replay's events are its own. Without a bound across streams, many
 * resuming streams whose consumers read slowly (on as many keys as an admin mints) would
 * together hold as much as their number allows.
 *
 * A replay asks for room before it loads a slice (`reserve`), and waits its turn while there
 * is none: first come, first served, so a large slice is not passed over for ever by small
 * ones. A replay in line is not cut off for waiting; one whose consumer reads nothing of what
 * waits for it for the stall time is (it holds room that others wait for). A replay alone is
 * let through whatever its slice holds. A stream's part counts until the consumer has taken
 * every replayed event, also after the stream has gone live (`goneLive`).
 */
export class ReplayBudget {
  private readonly shares = new Map<EventStream, ReplayShare>();
  private readonly line: Waiting[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly limitBytes: number) {}

  /** A replay of `stream` begins: its part of the budget (a stream has one part, whichever replay of it holds it). */
  join(stream: EventStream): ReplayShare {
    const share = new ReplayShare(this, stream);
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
      if (bytes === 0 && share.done) this.shares.delete(share.stream);
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
    this.line.push(waiting);
    this.check();
  }

  /** @internal a share that ends */
  leave(share: ReplayShare): void {
    if (this.shares.get(share.stream) === share) this.shares.delete(share.stream);
    this.check();
  }

  /** Lets through, in line, every replay that fits; answers (false) those whose streams ended; cuts off consumers that stall. */
  private check(): void {
    const now = performance.now();
    for (let index = 0; index < this.line.length; ) {
      const waiting = this.line[index]!;
      const { stream } = waiting.share;
      if (stream.takes > waiting.takes || stream.unsent < waiting.unsent) waiting.readAt = now;
      waiting.takes = stream.takes;
      waiting.unsent = stream.unsent;
      if (stream.isOpen && stream.buffered > 0 && now - waiting.readAt > waiting.stallMs) stream.cutOff();
      if (!stream.isOpen) {
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

interface Waiting {
  share: ReplayShare;
  bytes: number;
  stallMs: number;
  readAt: number;
  takes: number;
  unsent: number;
  answer(granted: boolean): void;
}

/** One stream's part of the instance's ReplayBudget. */
export class ReplayShare {
  /** Content loaded for the stream and not yet handed to it. */
  loading = 0;
  /** Once the stream has gone live: how many events its consumer still had to take of the replay's, and when it had taken how many. */
  private residue: { events: number; bytes: number; takesAtLive: number } | null = null;
  private ended = false;

  constructor(
    private readonly budget: ReplayBudget,
    readonly stream: EventStream,
  ) {}

  /** What the stream holds of the replay's: what was loaded for it and what waits for its consumer. */
  get bytes(): number {
    if (this.ended || !this.stream.isOpen) return 0;
    if (this.residue === null) return this.loading + this.stream.bufferedBytes;
    // Live: the consumer takes the replayed events first (the buffer is in stream order).
    if (this.stream.takes - this.residue.takesAtLive >= this.residue.events) return 0;
    return Math.min(this.residue.bytes, this.stream.bufferedBytes);
  }

  /** Whether the share holds nothing any more and never will. */
  get done(): boolean {
    return this.ended || !this.stream.isOpen || this.residue !== null;
  }

  /**
   * Waits for room for a slice of `bytes` (its events' sizes as the page read them): true
   * once it is the replay's (`loading`), false once the stream has ended or its consumer has
   * been cut off for reading nothing of what waits for it for `stallMs`.
   */
  reserve(bytes: number, stallMs: number): Promise<boolean> {
    const { stream } = this;
    return new Promise((answer) =>
      this.budget.enqueue({ share: this, bytes, stallMs, readAt: performance.now(), takes: stream.takes, unsent: stream.unsent, answer }),
    );
  }

  /** The stream has gone live: what its consumer has not yet taken of the replay's still counts, until it has. */
  goneLive(): void {
    this.loading = 0;
    this.residue = { events: this.stream.buffered, bytes: this.stream.bufferedBytes, takesAtLive: this.stream.takes };
  }

  /** The replay ended (the stream ended, or failed). */
  leave(): void {
    this.ended = true;
    this.loading = 0;
    this.budget.leave(this);
  }
}
