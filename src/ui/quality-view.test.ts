import { describe, expect, it } from 'vitest';
import { fmtDelta, pplDeltaPercent } from './quality-view.ts';

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
