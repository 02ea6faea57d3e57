import { describe, expect, it } from 'vitest';
import { sampleResult, sampleRun } from '../testing/sample-result.ts';
import { cpuComparisonFrom, decodeRatioSentence, fmtRatio } from './cpu-compare.ts';
import { parseResultsJson, resultToJson } from './result-io.ts';
import { resultProblems } from './types.ts';

/** A seeded LCG in [0, 1) (the figures differ per run but the test is repeatable). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** The median of numbers (independent of src/core/metrics.ts): the middle one, or the mean of the two. */
function med(xs: number[]): number {
  const a = [...xs].sort((x, y) => x - y);
  const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2;
}

describe('cpuComparisonFrom', () => {
  it('medians of the CPU runs and GPU ÷ CPU ratios (TTFT inverted, so > 1 = GPU faster)', () => {
    const r = rng(48);
    const gpu = sampleResult();
    // 7 CPU runs (odd and off every multiple), random figures.
    const runs = Array.from({ length: 7 }, () =>
      sampleRun({
        ttftMs: 20 + 200 * r(),
        prefillTokensPerSecond: 10 + 90 * r(),
        decodeTokensPerSecond: 5 + 50 * r(),
      }),
    );
    const c = cpuComparisonFrom(gpu.summary, runs, { threads: 3, crossOriginIsolated: true });
    const ttft = med(runs.map((x) => x.ttftMs));
    const prefill = med(runs.map((x) => x.prefillTokensPerSecond));
    const decode = med(runs.map((x) => x.decodeTokensPerSecond));
    expect(c.engine).toBe('wllama');
    expect(c.threads).toBe(3);
    expect(c.crossOriginIsolated).toBe(true);
    expect(c.runs).toBe(7);
    expect(c.ttftMs).toBeCloseTo(ttft, 9);
    expect(c.prefillTokS).toBeCloseTo(prefill, 9);
    expect(c.decodeTokS).toBeCloseTo(decode, 9);
    const g = gpu.runs;
    expect(c.ratio.ttft).toBeCloseTo(ttft / med(g.map((x) => x.ttftMs)), 9);
    expect(c.ratio.prefill).toBeCloseTo(med(g.map((x) => x.prefillTokensPerSecond)) / prefill, 9);
    // The GPU's one-token run has no decode rate (NaN, left out of the summary): the median of the other two.
    const gDecode = med(g.map((x) => x.decodeTokensPerSecond).filter(Number.isFinite));
    expect(c.ratio.decode).toBeCloseTo(gDecode / decode, 9);
    expect(resultProblems({ ...gpu, cpu: c })).toEqual([]);
  });

  it('a figure missing on either side gives a NaN ratio, not a made-up one', () => {
    const gpu = sampleResult();
    const oneToken = [
      sampleRun({ outputTokens: 1, outputTokenIds: [13], itlMs: [], decodeTokensPerSecond: Number.NaN }),
    ];
    const c = cpuComparisonFrom(gpu.summary, oneToken, { threads: 1, crossOriginIsolated: false });
    expect(c.decodeTokS).toBeNaN();
    expect(c.ratio.decode).toBeNaN();
    expect(Number.isFinite(c.ratio.prefill)).toBe(true);
    expect(decodeRatioSentence(c)).toBeUndefined();
    const none = cpuComparisonFrom({}, oneToken, { threads: 1, crossOriginIsolated: false });
    expect(none.ratio.ttft).toBeNaN();
  });

  it('the sentence says which is faster', () => {
    const c = cpuComparisonFrom(sampleResult().summary, [sampleRun()], {
      threads: 1,
      crossOriginIsolated: false,
    });
    expect(decodeRatioSentence({ ...c, ratio: { ...c.ratio, decode: 7.3125 } })).toBe(
      'this GPU is 7.3× your CPU at decode',
    );
    expect(decodeRatioSentence({ ...c, ratio: { ...c.ratio, decode: 0.25 } })).toBe(
      'your CPU is 4.0× this GPU at decode',
    );
    expect(fmtRatio(12.6)).toBe('13×');
    expect(fmtRatio(0.4987)).toBe('0.50×');
    expect(fmtRatio(Number.NaN)).toBe('–');
  });
});

describe('a result with a cpu block', () => {
  it('round-trips through the JSON file (NaN ratio as null and back)', () => {
    const gpu = sampleResult();
    const oneToken = [
      sampleRun({ outputTokens: 1, outputTokenIds: [13], itlMs: [], decodeTokensPerSecond: Number.NaN }),
    ];
    const cpu = cpuComparisonFrom(gpu.summary, [sampleRun(), ...oneToken], {
      threads: 2,
      crossOriginIsolated: true,
      createdAt: '2026-12-05T03:00:00.000Z',
    });
    const r = { ...gpu, cpu };
    const text = resultToJson(r);
    expect(JSON.parse(text).cpu.engine).toBe('wllama');
    expect(parseResultsJson(text)).toEqual([r]);
    // Files without it stay valid (the field is optional: schema version 1 unchanged).
    expect(parseResultsJson(resultToJson(gpu))[0].cpu).toBeUndefined();
  });

  it('a malformed cpu block is refused with its path', () => {
    const bad = JSON.parse(resultToJson(sampleResult()));
    bad.cpu = { engine: 'wllama', threads: 'many' };
    expect(() => parseResultsJson(JSON.stringify(bad))).toThrow(/result.cpu.threads must be a number/);
  });
});
