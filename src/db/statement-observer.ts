/**
 * What the database handles tell about their work, for metrics and traces: each statement a
 * request sends (to the observer of its StatementScope, deadline.ts), and how much work
 * holds or waits for the database's connections. Nothing is counted or timed until someone
 * asks: without an observer, and before `watchPool`, a statement costs one lookup more.
 */

/** Called once the statement has its answer, with its error if it failed. */
export type StatementDone = (error?: unknown) => void;
/** Called as a statement is sent, with its text (`$n` placeholders, never the values). */
export type StatementObserver = (text: string) => StatementDone;

/**
 * The parts of the database's connections (client.ts, poolSizes): one for compiled reads and
 * one for everything else, or a single part for all (`all`: PGlite, which runs one statement
 * at a time, and a PostgreSQL pool of one connection).
 */
export type PoolPart = 'reads' | 'general' | 'all';

/** How busy each part of the database's connections is. */
export type PoolUses = Partial<Record<PoolPart, PoolUse>>;

/** How busy a part of the database's connections is. */
export interface PoolUse {
  /** Connections the part may open (PGlite: 1). */
  size: number;
  /** Connections held by a statement or a transaction. */
  inUse: number;
  /** Statements and transactions beyond the pool's size: they wait for a connection another holds. */
  waiting: number;
}

/**
 * Work in progress that needs a connection: a statement outside a transaction, or a whole
 * transaction. Its size beyond the pool's is what waits.
 */
export class PoolDemand {
  private watched = false;
  private current = 0;

  constructor(readonly size: number) {}

  /** Starts counting (work begun before is not counted); returns how the pool is used now. */
  watch(): () => PoolUse {
    this.watched = true;
    return () => {
      const inUse = Math.min(this.size, this.current);
      return { size: this.size, inUse, waiting: this.current - inUse };
    };
  }

  /** Work that needs a connection starts: the function it returns ends it (undefined while nobody watches). */
  begin(): (() => void) | undefined {
    if (!this.watched) return undefined;
    this.current += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.current -= 1;
    };
  }
}

/** The statement's command (its first keyword), of a short fixed list: a bounded metric label. */
const COMMANDS = new Set(['select', 'insert', 'update', 'delete', 'with', 'begin', 'commit', 'rollback', 'set']);
const FIRST_WORD = /^[\s(]*([A-Za-z]+)/;

export function statementCommand(text: string): string {
  const word = FIRST_WORD.exec(text)?.[1]?.toLowerCase();
  return word !== undefined && COMMANDS.has(word) ? word : 'other';
}
