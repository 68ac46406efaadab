import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ID_PREFIXES, IdGenerator, isIdOfKind, kindOfId, newId } from '../src/domain/ids.js';

describe('ids', () => {
  it('are the prefix plus 10 base36 characters of milliseconds and 10 random ones', () => {
    const now = Date.UTC(2026, 7, 14, 10);
    const body = new IdGenerator().nextBody(now);
    expect(body).toMatch(/^[0-9a-z]{20}$/);
    expect(Number.parseInt(body.slice(0, 10), 36)).toBe(now);
    expect(newId('memoryStore')).toMatch(/^memstore_[0-9a-z]{20}$/);
  });

  it('strictly increase within a process, also within one millisecond and when the clock goes back', () => {
    const ids = new IdGenerator();
    const base = Date.UTC(2026, 7, 14, 10);
    const times = [base, base, base, base - 5_000, base + 1, base + 1];
    const bodies = [...times, ...Array.from({ length: 10_000 }, () => base + 2)].map((time) => ids.nextBody(time));
    for (let index = 1; index < bodies.length; index += 1) {
      expect(bodies[index]! > bodies[index - 1]!).toBe(true);
    }
  });

  it('sort by creation time across milliseconds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 42 }), fc.integer({ min: 1, max: 10_000_000 }), (start, gap) => {
        const ids = new IdGenerator();
        const earlier = ids.nextBody(start);
        return earlier < ids.nextBody(start + gap) && earlier < new IdGenerator().nextBody(start + gap);
      }),
      { numRuns: 200 },
    );
  });

  it('tell their kind by prefix and refuse malformed bodies', () => {
    for (const kind of Object.keys(ID_PREFIXES) as (keyof typeof ID_PREFIXES)[]) {
      expect(kindOfId(newId(kind))).toBe(kind);
    }
    expect(kindOfId('mem_0000000000000000000')).toBeNull();
    expect(kindOfId('mem_000000000000000000000')).toBeNull();
    expect(kindOfId('mem_0000000000000000000A')).toBeNull();
    expect(kindOfId('thing_00000000000000000000')).toBeNull();
    expect(isIdOfKind(newId('memory'), 'memoryStore')).toBe(false);
    expect(isIdOfKind(newId('memoryStore'), 'memory')).toBe(false);
  });
});
