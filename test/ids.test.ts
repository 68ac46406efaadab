import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ID_PREFIXES, isIdOfKind, kindOfId, newId, newIdBody } from '../src/domain/ids.js';

describe('ids', () => {
  it('are the prefix plus 10 base36 characters of milliseconds and 10 random ones', () => {
    const now = Date.UTC(2026, 7, 14, 10);
    const id = newId('memoryStore', now + 10_000_000);
    expect(id).toMatch(/^memstore_[0-9a-z]{20}$/);
    expect(Number.parseInt(id.slice('memstore_'.length, 'memstore_'.length + 10), 36)).toBe(now + 10_000_000);
  });

  it('strictly increase within a process, also within one millisecond and when the clock goes back', () => {
    const base = Date.now() + 60_000;
    const times = [base, base, base, base - 5_000, base + 1, base + 1];
    const bodies = [...times, ...Array.from({ length: 10_000 }, () => base + 2)].map((time) => newIdBody(time));
    for (let index = 1; index < bodies.length; index += 1) {
      expect(bodies[index]! > bodies[index - 1]!).toBe(true);
    }
  });

  it('sort by creation time across milliseconds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), (gap) => {
        const earlier = newIdBody(Date.now() + 120_000 + gap);
        const later = newIdBody(Date.now() + 120_000 + gap * 2);
        return earlier < later;
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
