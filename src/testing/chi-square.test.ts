import { describe, expect, it } from 'vitest';
import { chiSquareTest, chiSquareUpperTail } from './chi-square.ts';

describe('chiSquareUpperTail', () => {
  it('matches tabulated chi-square quantiles', () => {
    expect(chiSquareUpperTail(3.841459, 1)).toBeCloseTo(0.05, 6);
    expect(chiSquareUpperTail(6.634897, 1)).toBeCloseTo(0.01, 6);
    expect(chiSquareUpperTail(18.307038, 10)).toBeCloseTo(0.05, 6);
    expect(chiSquareUpperTail(0.1, 10)).toBeCloseTo(1, 6);
    // df 2: exactly exp(−x / 2)
    for (const x of [0.5, 3, 40]) expect(chiSquareUpperTail(x, 2) / Math.exp(-x / 2)).toBeCloseTo(1, 10);
    // the 1e-4 quantiles other tests quote (prng.test.ts: df 9 → 33.7)
    expect(chiSquareUpperTail(33.72, 9)).toBeCloseTo(1e-4, 5);
    expect(chiSquareUpperTail(0, 5)).toBe(1);
    expect(chiSquareUpperTail(Infinity, 5)).toBe(0);
  });
});

describe('chiSquareTest', () => {
  it('pools outcomes expected fewer than 5 times, and fails an impossible outcome outright', () => {
    const probs = new Map([
      ['a', 0.5],
      ['b', 0.48],
      ['c', 0.01],
      ['d', 0.01],
    ]);
    // 100 draws: c and d (1 expected each) pool into 2 expected, still short, so join b (48 + 2).
    const r = chiSquareTest(
      new Map([
        ['a', 50],
        ['b', 47],
        ['c', 2],
        ['d', 1],
      ]),
      probs,
      100,
    );
    expect(r.bins).toBe(2);
    expect(r.df).toBe(1);
    expect(r.chi2).toBeCloseTo(0, 12);
    expect(r.p).toBeCloseTo(1, 12);
    expect(chiSquareTest(new Map([['e', 1]]), probs, 1).p).toBe(0);
  });
});
