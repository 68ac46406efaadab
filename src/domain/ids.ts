import { randomInt } from 'node:crypto';

/** The prefixes of the API's own ids. */
export const ID_PREFIXES = {
  memoryStore: 'memstore_',
  memory: 'mem_',
  memoryVersion: 'memver_',
  session: 'sesn_',
  apiKey: 'key_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const BASE = 36;
const TIME_CHARACTERS = 10;
const RANDOM_CHARACTERS = 10;
const HALF_RANDOM_SPACE = BASE ** (RANDOM_CHARACTERS / 2);
/** 36^10 ≈ 3.7e15: still an exact integer in a double (< 2^53). */
const RANDOM_SPACE = HALF_RANDOM_SPACE * HALF_RANDOM_SPACE;
const BODY_PATTERN = new RegExp(`^[0-9a-z]{${TIME_CHARACTERS + RANDOM_CHARACTERS}}$`);

function encode(value: number, width: number): string {
  return value.toString(BASE).padStart(width, '0');
}

function freshRandom(): number {
  // randomInt accepts ranges below 2^48 only, so draw the 10 characters as two halves.
  return randomInt(HALF_RANDOM_SPACE) * HALF_RANDOM_SPACE + randomInt(HALF_RANDOM_SPACE);
}

/** The largest step between the random parts of two ids of one millisecond (2^40). */
const MAX_RANDOM_STEP = 2 ** 40;

/**
 * Makes id bodies: 10 base36 characters of milliseconds since the epoch, then 10 random
 * ones. Bodies of one generator strictly increase: when the clock has not moved on (or
 * moved back), the previous time is kept and the random part grows by a random step of 1
 * to 2^40, so ids made in one millisecond still sort in creation order, and none gives
 * away another (a neighbour lies somewhere among a trillion values).
 */
export class IdGenerator {
  private lastTime = -1;
  private lastRandom = 0;

  nextBody(nowMs: number = Date.now()): string {
    let time = Math.floor(nowMs);
    let random: number;
    if (time > this.lastTime) {
      random = freshRandom();
    } else {
      time = this.lastTime;
      random = this.lastRandom + 1 + randomInt(MAX_RANDOM_STEP - 1);
      if (random >= RANDOM_SPACE) {
        time += 1;
        random = freshRandom();
      }
    }
    this.lastTime = time;
    this.lastRandom = random;
    return encode(time, TIME_CHARACTERS) + encode(random, RANDOM_CHARACTERS);
  }
}

/** The process's generator: every id the server makes comes from it. */
const processIds = new IdGenerator();

export function newId(kind: IdKind, nowMs?: number): string {
  return ID_PREFIXES[kind] + processIds.nextBody(nowMs);
}

/** The kind of a well-formed id of ours, or `null` for anything else (unknown prefix, bad body). */
export function kindOfId(id: string): IdKind | null {
  for (const [kind, prefix] of Object.entries(ID_PREFIXES) as [IdKind, string][]) {
    if (id.startsWith(prefix)) {
      return BODY_PATTERN.test(id.slice(prefix.length)) ? kind : null;
    }
  }
  return null;
}

export function isIdOfKind(id: string, kind: IdKind): boolean {
  return kindOfId(id) === kind;
}
