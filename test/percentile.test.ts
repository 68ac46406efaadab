import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentile } from './support/percentile.js';

/** The latency figures of the benchmark and the scripts: the nearest-rank percentile. */
describe('percentile', () => {
  it('is a value of the list with at least the fraction of values at or below it, and fewer strictly below', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: 1, maxLength: 200 }), fc.double({ min: 0, max: 1, noNaN: true }), (values, fraction) => {
        const sorted = [...values].sort((a, b) => a - b);
        const value = percentile(sorted, fraction);
        expect(sorted).toContain(value);
        const rank = Math.max(1, Math.ceil(fraction * sorted.length));
        expect(sorted.filter((other) => other <= value).length).toBeGreaterThanOrEqual(rank);
        expect(sorted.filter((other) => other < value).length).toBeLessThan(rank);
      }),
    );
  });

  it('gives the textbook nearest ranks, and NaN for no values', () => {
    const hundred = Array.from({ length: 100 }, (_, index) => index + 1);
    expect([percentile(hundred, 0.5), percentile(hundred, 0.99), percentile(hundred, 1), percentile(hundred, 0)]).toEqual([50, 99, 100, 1]);
    expect(percentile([], 0.5)).toBeNaN();
  });
});
