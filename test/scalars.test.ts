import { describe, expect, it } from 'vitest';
import { SafeIntScalar } from '../src/graphql/scalars.js';

describe('SafeInt', () => {
  it('takes whole numbers up to 2^53 - 1 and refuses unsafe or fractional ones', () => {
    expect(SafeIntScalar.parseValue(2 ** 53 - 1)).toBe(2 ** 53 - 1);
    expect(SafeIntScalar.serialize(-(2 ** 53 - 1))).toBe(-(2 ** 53 - 1));
    expect(() => SafeIntScalar.parseValue(2 ** 53)).toThrow(/SafeInt/);
    expect(() => SafeIntScalar.parseValue(1.5)).toThrow(/SafeInt/);
    expect(() => SafeIntScalar.serialize('9007199254740993')).toThrow(/SafeInt/);
  });
});
