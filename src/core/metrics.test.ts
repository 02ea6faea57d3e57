import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../util/prng.ts';
import {
  decodeTokPerS,
  e2eMs,
  itlMs,
  percentile,
  percentileSorted,
  prefillTokPerS,
  requestMetrics,
  summarize,
  tokensPerTargetPass,
  tokenTimesFromChunks,
  tpotMs,
  ttftMs,
} from './metrics.ts';

function close(actual: number, expected: number, rel = 1e-12): void {
  if (!Number.isFinite(expected)) {
    expect(actual).toBe(expected);
    return;
  }
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(rel * Math.max(1, Math.abs(expected)));
}

describe('per-request metrics, hand-computed', () => {
  // Start at 100 ms; 4 tokens at 150, 160, 175, 200 ms; 10 prompt tokens.
  const g = { tStartMs: 100, tokenTimesMs: [150, 160, 175, 200], promptTokens: 10 };

  it('TTFT, E2E, ITL, TPOT', () => {
    expect(ttftMs(g)).toBe(50);
    expect(e2eMs(g)).toBe(100);
    expect(itlMs(g)).toEqual([10, 15, 25]);
    // (E2E − TTFT) / (n − 1) = (100 − 50) / 3
    expect(tpotMs(g)).toBeCloseTo(50 / 3, 12);
  });

  it('decode and prefill tokens per second', () => {
    // (n − 1) / (E2E − TTFT) = 3 / 0.050 s
    expect(decodeTokPerS(g)).toBeCloseTo(60, 10);
    // prompt / TTFT = 10 / 0.050 s
    expect(prefillTokPerS(g)).toBeCloseTo(200, 10);
  });

  it('requestMetrics gathers them', () => {
    const m = requestMetrics(g);
    expect(m).toMatchObject({
      promptTokens: 10,
      outputTokens: 4,
      ttftMs: 50,
      e2eMs: 100,
      itlMs: [10, 15, 25],
    });
    expect(m.decodeTokPerS).toBeCloseTo(60, 10);
  });

  it('one output token: no decode figures', () => {
    const one = { tStartMs: 0, tokenTimesMs: [20], promptTokens: 5 };
    expect(ttftMs(one)).toBe(20);
    expect(e2eMs(one)).toBe(20);
    expect(itlMs(one)).toEqual([]);
    expect(tpotMs(one)).toBeNaN();
    expect(decodeTokPerS(one)).toBeNaN();
    expect(prefillTokPerS(one)).toBeCloseTo(250, 10);
  });

  it('tokens in one chunk share its time (zero gaps count)', () => {
    const t = tokenTimesFromChunks([30, 50, 90], [1, 3, 0]);
    expect(t).toEqual([30, 50, 50, 50]);
    const m = requestMetrics({ tStartMs: 10, tokenTimesMs: t, promptTokens: 4 });
    expect(m.itlMs).toEqual([20, 0, 0]);
    expect(m.decodeTokPerS).toBeCloseTo(3 / 0.02, 10);
    expect(() => tokenTimesFromChunks([1], [1, 2])).toThrow(RangeError);
    expect(() => tokenTimesFromChunks([1], [1.5])).toThrow(RangeError);
  });

  it('rejects bad timestamps', () => {
    expect(() => ttftMs({ tStartMs: 0, tokenTimesMs: [], promptTokens: 1 })).toThrow(/no output tokens/);
    expect(() => ttftMs({ tStartMs: 10, tokenTimesMs: [5], promptTokens: 1 })).toThrow(/before tStartMs/);
    expect(() => e2eMs({ tStartMs: 0, tokenTimesMs: [5, 4], promptTokens: 1 })).toThrow(
      /before tokenTimesMs\[0\]/,
    );
    expect(() => itlMs({ tStartMs: 0, tokenTimesMs: [1, Number.NaN], promptTokens: 1 })).toThrow(/finite/);
    expect(() => prefillTokPerS({ tStartMs: 0, tokenTimesMs: [1], promptTokens: -1 })).toThrow(
      /promptTokens/,
    );
  });
});

describe('tokensPerTargetPass', () => {
  it('counts the output tokens after the prefill one per target pass', () => {
    expect(tokensPerTargetPass(13, 4)).toBe(3);
    expect(tokensPerTargetPass(1, 0)).toBeNaN();
    expect(tokensPerTargetPass(0, 2)).toBe(0);
    expect(tokensPerTargetPass(8, 7)).toBe(1); // plain decode: one token a pass
  });
});

describe('summary statistics, hand-computed', () => {
  it('1..5', () => {
    const s = summarize([5, 3, 1, 4, 2]);
    expect(s.n).toBe(5);
    expect(s.mean).toBe(3);
    expect(s.median).toBe(3);
    // h = 4·0.9 = 3.6 → 4 + 0.6·(5 − 4)
    expect(s.p90).toBeCloseTo(4.6, 12);
    // h = 4·0.99 = 3.96 → 4.96
    expect(s.p99).toBeCloseTo(4.96, 12);
    // population variance (4 + 1 + 0 + 1 + 4) / 5 = 2
    expect(s.std).toBeCloseTo(Math.SQRT2, 12);
    expect(s.min).toBe(1);
    expect(s.max).toBe(5);
  });

  it('two values', () => {
    const s = summarize([20, 10]);
    expect(s.median).toBe(15);
    expect(s.p90).toBeCloseTo(19, 12);
    expect(s.p99).toBeCloseTo(19.9, 12);
    expect(s.std).toBe(5);
  });

  it("matches NumPy's linear percentiles", () => {
    // np.percentile([3,1,4,1,5,9,2,6], [0, 25, 50, 90, 100]) = [1, 1.75, 3.5, 6.9, 9]
    const v = [3, 1, 4, 1, 5, 9, 2, 6];
    expect(percentile(v, 0)).toBe(1);
    expect(percentile(v, 25)).toBeCloseTo(1.75, 12);
    expect(percentile(v, 50)).toBeCloseTo(3.5, 12);
    expect(percentile(v, 90)).toBeCloseTo(6.9, 12);
    expect(percentile(v, 100)).toBe(9);
  });

  it('a single value, equal values', () => {
    expect(summarize([7])).toEqual({ n: 1, mean: 7, median: 7, p90: 7, p99: 7, std: 0, min: 7, max: 7 });
    const s = summarize([0.1, 0.1, 0.1]);
    expect(s.median).toBe(0.1);
    expect(s.p99).toBe(0.1);
  });

  it('rejects empty samples, NaN and p outside [0, 100]', () => {
    expect(() => summarize([])).toThrow(RangeError);
    expect(() => summarize([1, Number.NaN])).toThrow(/NaN/);
    expect(() => percentileSorted([1], -1)).toThrow(RangeError);
    expect(() => percentileSorted([1], 101)).toThrow(RangeError);
    expect(() => percentileSorted([], 50)).toThrow(RangeError);
  });
});

describe('random inputs against a direct float64 computation', () => {
  /** Reference percentile written differently: (1 − f)·x[lo] + f·x[hi] on a fresh sort. */
  function refPercentile(values: number[], p: number): number {
    const s = [...values].sort((a, b) => a - b);
    const h = ((s.length - 1) * p) / 100;
    const lo = Math.floor(h);
    const hi = Math.ceil(h);
    const f = h - lo;
    return (1 - f) * s[lo] + f * s[hi];
  }

  it('per-request metrics', () => {
    const r = mulberry32(42);
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(r() * 200);
      const tStartMs = r() * 1e6;
      const times: number[] = [];
      let t = tStartMs + r() * 500;
      for (let i = 0; i < n; i++) {
        times.push(t);
        t += r() < 0.1 ? 0 : r() * 50; // some tokens arrive together
      }
      const promptTokens = 1 + Math.floor(r() * 300);
      const g = { tStartMs, tokenTimesMs: times, promptTokens };
      const m = requestMetrics(g);

      const ttft = times[0] - tStartMs;
      const e2e = times[n - 1] - tStartMs;
      close(m.ttftMs, ttft);
      close(m.e2eMs, e2e);
      close(m.prefillTokPerS, promptTokens / (ttft / 1000), 1e-9);
      expect(m.outputTokens).toBe(n);
      expect(m.itlMs.length).toBe(n - 1);
      let itlSum = 0;
      for (let i = 1; i < n; i++) {
        close(m.itlMs[i - 1], times[i] - times[i - 1]);
        itlSum += times[i] - times[i - 1];
      }
      if (n >= 2) {
        // TPOT is both (E2E − TTFT)/(n − 1) and the mean ITL; decode tok/s is 1000/TPOT.
        close(m.tpotMs, (e2e - ttft) / (n - 1), 1e-9);
        close(m.tpotMs, itlSum / (n - 1), 1e-9);
        if (e2e > ttft) close(m.decodeTokPerS, (n - 1) / ((e2e - ttft) / 1000), 1e-9);
        if (e2e > ttft) close(m.decodeTokPerS * m.tpotMs, 1000, 1e-9);
      } else {
        expect(m.tpotMs).toBeNaN();
        expect(m.decodeTokPerS).toBeNaN();
      }
    }
  });

  it('summaries', () => {
    const r = mulberry32(7);
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(r() * 60);
      const scale = 10 ** Math.floor(r() * 6 - 2);
      const offset = r() < 0.3 ? 1e4 * scale : 0; // far from zero: tests the two-pass variance
      const v = Array.from({ length: n }, () => offset + (r() < 0.2 ? Math.round(r() * 3) : r()) * scale);
      const s = summarize(v);

      let sum = 0;
      for (const x of v) sum += x;
      const mean = sum / n;
      let ss = 0;
      for (const x of v) ss += (x - mean) ** 2;
      const spread = Math.max(...v) - Math.min(...v);
      close(s.mean, mean, 1e-12);
      // absolute tolerance relative to the data's magnitude
      expect(Math.abs(s.std - Math.sqrt(ss / n))).toBeLessThanOrEqual(
        1e-9 * Math.max(spread, 1e-300) + 1e-12 * scale,
      );
      for (const [p, got] of [
        [50, s.median],
        [90, s.p90],
        [99, s.p99],
      ] as const) {
        close(got, refPercentile(v, p), 1e-12);
        expect(got).toBeGreaterThanOrEqual(s.min);
        expect(got).toBeLessThanOrEqual(s.max);
      }
      expect(s.min).toBe(Math.min(...v));
      expect(s.max).toBe(Math.max(...v));
      expect(s.median).toBeLessThanOrEqual(s.p90);
      expect(s.p90).toBeLessThanOrEqual(s.p99);
      if (n % 2 === 1) expect(s.median).toBe([...v].sort((a, b) => a - b)[(n - 1) / 2]);
    }
  });
});
