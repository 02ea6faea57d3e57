import { describe, expect, it } from 'vitest';
import { fmtDelta, pplDeltaPercent, qualitySummary } from './quality-view.ts';

describe('perplexity difference from f16', () => {
  it('is 100 · (ppl − f16) / f16, formatted with its sign', () => {
    expect(pplDeltaPercent(10.5, 10)).toBeCloseTo(5, 12);
    expect(pplDeltaPercent(9.87, 10)).toBeCloseTo(-1.3, 12);
    expect(fmtDelta(pplDeltaPercent(10.042, 10))).toBe('+0.42\u00a0%');
    expect(fmtDelta(pplDeltaPercent(9.87, 10))).toBe('−1.30\u00a0%');
    expect(fmtDelta(pplDeltaPercent(10.00001, 10))).toBe('0.00\u00a0%');
  });
  it('is null (—) without both figures or with a base that is not positive', () => {
    expect(pplDeltaPercent(undefined, 10)).toBe(null);
    expect(pplDeltaPercent(10, undefined)).toBe(null);
    expect(pplDeltaPercent(10, 0)).toBe(null);
    expect(pplDeltaPercent(Number.NaN, 10)).toBe(null);
    expect(fmtDelta(null)).toBe('—');
  });
});

describe("the card's closing line", () => {
  it('counts only the scored cache types and names those not run', () => {
    const ok = (kvType: 'f16' | 'q8_0' | 'q4_0') => ({ kvType, perplexity: 5, tokens: 10, ms: 1 });
    const bad = (kvType: 'q8_0' | 'q4_0') => ({
      kvType,
      error: 'needs a head size that is a multiple of 32',
    });
    expect(qualitySummary([ok('f16'), bad('q8_0'), bad('q4_0')], 3, false)).toBe(
      'Done: 1 of 3 cache types scored (q8_0, q4_0 not run)',
    );
    expect(qualitySummary([ok('f16'), ok('q8_0'), ok('q4_0')], 3, false)).toBe(
      'Done: 3 of 3 cache types scored',
    );
    expect(qualitySummary([ok('f16')], 3, true)).toBe('Stopped: 1 of 3 cache types scored');
  });
});
