import { describe, expect, it } from 'vitest';
import { isEngineError } from '../core/errors.ts';
import type { SamplingParams } from '../core/types.ts';
import { keyedUniform, mulberry32, randnArray } from '../util/prng.ts';
import { argmax, keyedDraw, Sampler, seedFor } from './sampler.ts';

/** A fresh seed per run; printed in failure messages so a failure can be replayed. */
const SEED = (Math.random() * 2 ** 32) >>> 0;
const rng = mulberry32(SEED);
const msg = (s: string) => `${s} (seed ${SEED})`;

/** Random logits, N(0, std²), never all-equal, never zeros. */
function randomLogits(n: number, std = 3): Float32Array {
  return randnArray(rng, n, std, 0.5);
}

/** float64 reference: logits[ids]/T softmax. */
function refSoftmax(logits: ArrayLike<number>, ids: number[], temperature = 1): Map<number, number> {
  const max = Math.max(...ids.map((i) => logits[i]));
  const e = ids.map((i) => Math.exp((logits[i] - max) / temperature));
  const sum = e.reduce((a, b) => a + b, 0);
  return new Map(ids.map((id, k) => [id, e[k] / sum]));
}

/** ids sorted by logit, highest first, lower id first on ties. */
function refSorted(logits: ArrayLike<number>, ids: number[]): number[] {
  return [...ids].sort((a, b) => logits[b] - logits[a] || a - b);
}

function refTopK(logits: ArrayLike<number>, ids: number[], k: number): number[] {
  return refSorted(logits, ids).slice(0, k);
}

function refTopP(logits: ArrayLike<number>, ids: number[], p: number): number[] {
  const sorted = refSorted(logits, ids);
  const probs = refSoftmax(logits, sorted);
  let cum = 0;
  for (let i = 0; i < sorted.length; i++) {
    cum += probs.get(sorted[i])!;
    if (cum >= p) return sorted.slice(0, i + 1);
  }
  return sorted;
}

function refMinP(logits: ArrayLike<number>, ids: number[], minP: number): number[] {
  const probs = refSoftmax(logits, ids);
  const pMax = Math.max(...probs.values());
  return ids.filter((id) => probs.get(id)! >= minP * pMax);
}

/** Distance of p from the nearest cumulative-probability boundary of the sorted distribution. */
function topPMargin(logits: ArrayLike<number>, p: number): number {
  const all = Array.from({ length: logits.length }, (_, i) => i);
  const sorted = refSorted(logits, all);
  const probs = refSoftmax(logits, sorted);
  let cum = 0;
  let margin = Number.POSITIVE_INFINITY;
  for (const id of sorted) {
    cum += probs.get(id)!;
    margin = Math.min(margin, Math.abs(cum - p));
  }
  return margin;
}

const set = (a: ArrayLike<number>) => [...Array.from(a)].sort((x, y) => x - y);

describe('Sampler', () => {
  it('is greedy (argmax) at temperature 0 on fresh random logits', () => {
    for (let t = 0; t < 50; t++) {
      const n = 50 + Math.floor(rng() * 2000);
      const logits = randomLogits(n);
      let best = 0;
      for (let i = 1; i < n; i++) if (logits[i] > logits[best]) best = i;
      const s = new Sampler({ temperature: 0, topK: 5, topP: 0.5, minP: 0.2 }, n);
      expect(s.sample(logits), msg('argmax')).toBe(best);
      expect(new Sampler({}, n).sample(logits), msg('default params are greedy')).toBe(best);
    }
  });

  it('picks the lowest id among tied maxima when greedy', () => {
    const logits = randomLogits(100);
    const top = Math.max(...logits) + 1;
    logits[70] = top;
    logits[30] = top;
    logits[90] = top;
    expect(new Sampler({ temperature: 0 }, 100).sample(logits)).toBe(30);
    expect(argmax(logits)).toBe(30);
  });

  it('keeps exactly the top-k set', () => {
    for (let t = 0; t < 30; t++) {
      const n = 20 + Math.floor(rng() * 500);
      const k = 1 + Math.floor(rng() * (n - 1));
      const logits = randomLogits(n);
      const d = new Sampler({ temperature: 1, topK: k }, n).distribution(logits);
      const all = Array.from({ length: n }, (_, i) => i);
      expect(set(d.ids), msg(`top-${k} of ${n}`)).toEqual(set(refTopK(logits, all, k)));
    }
  });

  it('breaks top-k ties towards lower ids', () => {
    const logits = Float32Array.from([1.5, 3.25, 2.5, 3.25, 3.25, -1.5]);
    const d = new Sampler({ temperature: 1, topK: 2 }, 6).distribution(logits);
    expect(set(d.ids)).toEqual([1, 3]);
  });

  it('keeps exactly the top-p set', () => {
    for (let t = 0; t < 30; t++) {
      const n = 20 + Math.floor(rng() * 500);
      const logits = randomLogits(n);
      let p = 0.05 + 0.9 * rng();
      while (topPMargin(logits, p) < 1e-9) p = 0.05 + 0.9 * rng();
      const d = new Sampler({ temperature: 1, topP: p }, n).distribution(logits);
      const all = Array.from({ length: n }, (_, i) => i);
      const expected = refTopP(logits, all, p);
      expect(set(d.ids), msg(`top-p ${p} of ${n}`)).toEqual(set(expected));
      // the kept mass reaches p, and dropping the last kept token would not
      const full = refSoftmax(logits, all);
      const mass = expected.reduce((a, id) => a + full.get(id)!, 0);
      expect(mass).toBeGreaterThanOrEqual(p);
      expect(mass - full.get(expected[expected.length - 1])!).toBeLessThan(p);
    }
  });

  it('keeps exactly the min-p set', () => {
    for (let t = 0; t < 30; t++) {
      const n = 20 + Math.floor(rng() * 500);
      const logits = randomLogits(n);
      const minP = 0.001 + 0.5 * rng();
      const d = new Sampler({ temperature: 1, minP }, n).distribution(logits);
      const all = Array.from({ length: n }, (_, i) => i);
      expect(set(d.ids), msg(`min-p ${minP} of ${n}`)).toEqual(set(refMinP(logits, all, minP)));
    }
  });

  it('chains penalty → top-k → top-p → min-p → temperature as llama.cpp does', () => {
    for (let t = 0; t < 30; t++) {
      const n = 50 + Math.floor(rng() * 500);
      const logits = randomLogits(n);
      const params: SamplingParams = {
        temperature: 0.3 + 1.5 * rng(),
        topK: 5 + Math.floor(rng() * 40),
        topP: 0.5 + 0.45 * rng(),
        minP: 0.01 + 0.1 * rng(),
        repetitionPenalty: 1.1 + rng(),
        repetitionLastN: 16,
      };
      const history = Array.from({ length: 40 }, () => Math.floor(rng() * n));
      // reference, float64, step by step (penalised logits in f32, as llama.cpp stores them)
      const pen = Array.from(logits, (x) => x);
      for (const id of new Set(history.slice(-16))) {
        const p = params.repetitionPenalty!;
        pen[id] = Math.fround(pen[id] <= 0 ? pen[id] * p : pen[id] / p);
      }
      let ids = Array.from({ length: n }, (_, i) => i);
      ids = refTopK(pen, ids, params.topK!);
      ids = refTopP(pen, ids, params.topP!); // before temperature
      ids = refMinP(pen, ids, params.minP!); // before temperature
      const expected = refSoftmax(pen, ids, params.temperature);

      const d = new Sampler(params, n).distribution(logits, history);
      expect(set(d.ids), msg('candidates')).toEqual(set(ids));
      for (let i = 0; i < d.ids.length; i++) {
        expect(d.probs[i], msg(`p(${d.ids[i]})`)).toBeCloseTo(expected.get(d.ids[i])!, 12);
      }
    }
  });

  it('draws with the softmax probabilities (empirical frequencies within 5 sigma)', () => {
    const n = 12;
    const logits = randomLogits(n, 1.2);
    const temperature = 0.7 + rng();
    const s = new Sampler({ temperature, seed: SEED }, n);
    const draws = 200_000;
    const counts = new Float64Array(n);
    for (let i = 0; i < draws; i++) counts[s.sample(logits)]++;
    const p = refSoftmax(
      logits,
      Array.from({ length: n }, (_, i) => i),
      temperature,
    );
    let chi2 = 0;
    for (let id = 0; id < n; id++) {
      const pi = p.get(id)!;
      const sigma = Math.sqrt((pi * (1 - pi)) / draws);
      expect(Math.abs(counts[id] / draws - pi), msg(`token ${id}: p ${pi}`)).toBeLessThan(5 * sigma + 1e-6);
      chi2 += (counts[id] - draws * pi) ** 2 / (draws * pi);
    }
    // 11 degrees of freedom: P(chi2 > 40) ≈ 3e-5
    expect(chi2, msg('chi-square')).toBeLessThan(40);
  });

  it('never draws a token outside the filtered set', () => {
    const n = 300;
    const logits = randomLogits(n);
    const s = new Sampler({ temperature: 1.5, topK: 10, topP: 0.9, minP: 0.05, seed: SEED }, n);
    const allowed = new Set(s.distribution(logits).ids);
    for (let i = 0; i < 5000; i++) expect(allowed.has(s.sample(logits))).toBe(true);
  });

  it('reproduces the same sequence from the same seed, and reset restarts it', () => {
    const n = 64;
    const logitsSeq = Array.from({ length: 100 }, () => randomLogits(n));
    const run = (s: Sampler) => logitsSeq.map((l) => s.sample(l));
    const params = { temperature: 1.2, topK: 40, topP: 0.95, seed: SEED };
    const a = new Sampler(params, n);
    const first = run(a);
    expect(run(new Sampler(params, n))).toEqual(first);
    a.reset();
    expect(run(a)).toEqual(first);
    a.reset(SEED ^ 0x5bd1e995);
    const other = run(a);
    expect(other).not.toEqual(first);
    expect(run(new Sampler({ ...params, seed: SEED ^ 0x5bd1e995 }, n))).toEqual(other);
    expect(new Sampler(params, n).seed).toBe(SEED);
  });

  it('with { keyed: true } draws keyedUniform(seed, n) over the candidates in id order, as the GPU sampler', () => {
    const n = 300;
    const logits = randomLogits(n);
    const params = { temperature: 0.9, topK: 50, topP: 0.9, seed: SEED };
    const d = new Sampler(params, n).distribution(logits);
    // The same candidates and probabilities as the default draw; only the uniform → id map differs.
    const byId = Array.from(d.ids.keys()).sort((a, b) => d.ids[a] - d.ids[b]);
    const ref = (r: number): number => {
      let cum = 0;
      for (const i of byId) {
        cum += d.probs[i];
        if (cum > r) return d.ids[i];
      }
      return d.ids[byId[byId.length - 1]];
    };
    const s = new Sampler(params, n, { keyed: true });
    const ids = Array.from({ length: 200 }, () => s.sample(logits));
    expect(ids, msg('keyed ids')).toEqual(Array.from({ length: 200 }, (_, i) => ref(keyedUniform(SEED, i))));
    expect(ids).toEqual(Array.from({ length: 200 }, (_, i) => keyedDraw(d, SEED, i)));
    s.reset();
    expect(s.sample(logits), msg('reset restarts the counter')).toBe(ids[0]);
    // 200 draws vary unless the random logits left one candidate almost all the mass (CI saw a seed
    // whose draws were all one id): the largest probability ≤ 0.9 makes 200 equal draws < 1e-9 likely.
    if (Math.max(...d.probs) <= 0.9) expect(new Set(ids).size, msg('it does vary')).toBeGreaterThan(1);
  });

  it('applies the repetition penalty once per distinct recent token, by sign', () => {
    const n = 40;
    const logits = randomLogits(n);
    logits[5] = 2.5; // positive: divided
    logits[6] = -1.75; // negative: multiplied
    logits[7] = 3; // outside the window: untouched
    const penalty = 1.5;
    const history = [7, 1, 5, 5, 5, 6, 2]; // lastN = 6 drops the 7
    const s = new Sampler({ temperature: 1, repetitionPenalty: penalty, repetitionLastN: 6 }, n);
    const d = s.distribution(logits, history);
    const pen = Array.from(logits, (x) => x);
    for (const id of [1, 5, 6, 2])
      pen[id] = Math.fround(pen[id] <= 0 ? pen[id] * penalty : pen[id] / penalty); // f32, as llama.cpp
    expect(pen[5]).toBeCloseTo(2.5 / 1.5, 6);
    expect(pen[6]).toBeCloseTo(-1.75 * 1.5, 12);
    const expected = refSoftmax(
      pen,
      Array.from({ length: n }, (_, i) => i),
    );
    for (let i = 0; i < d.ids.length; i++) expect(d.probs[i]).toBeCloseTo(expected.get(d.ids[i])!, 12);

    // Greedy follows the penalised logits: a repeated favourite loses to the runner-up.
    const g = randomLogits(n, 0.5);
    g[10] = 5;
    g[11] = 4;
    expect(new Sampler({ temperature: 0 }, n).sample(g, [10])).toBe(10);
    expect(new Sampler({ temperature: 0, repetitionPenalty: 1.3 }, n).sample(g, [10])).toBe(11);
    expect(
      new Sampler({ temperature: 0, repetitionPenalty: 1.3, repetitionLastN: 0 }, n).sample(g, [10]),
    ).toBe(10);
  });

  it('rejects out-of-range parameters and short logits with invalid_argument', () => {
    const bad: SamplingParams[] = [
      { temperature: -1 },
      { temperature: Number.NaN },
      { topK: -1 },
      { topK: 1.5 },
      { topP: 0 },
      { topP: 1.5 },
      { minP: -0.1 },
      { minP: 2 },
      { repetitionPenalty: 0 },
      { repetitionLastN: -2 },
    ];
    for (const params of bad) {
      let err: unknown;
      try {
        new Sampler(params, 10);
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err, 'invalid_argument'), JSON.stringify(params)).toBe(true);
    }
    expect(() => new Sampler({}, 10).sample(new Float32Array(5))).toThrow(/expected 10 logits/);
  });
});

describe('seedFor: a request seed as the PRNG 32-bit seed', () => {
  it("-1 (llama.cpp's default) and none are random; negatives wrap as llama.cpp's uint32_t; 2^32 and up keep their high bits", () => {
    const randoms = new Set(Array.from({ length: 8 }, () => seedFor(-1)));
    for (let i = 0; i < 8; i++) randoms.add(seedFor(undefined));
    expect(randoms.size).toBeGreaterThan(14);
    const n = Math.floor(Math.random() * 2 ** 31);
    expect(seedFor(n)).toBe(n);
    expect(seedFor(-2)).toBe(2 ** 32 - 2);
    expect(seedFor(2 ** 32 - 1)).toBe(2 ** 32 - 1);
    expect(seedFor(2 ** 32 + 1)).not.toBe(1);
    expect(seedFor(2 ** 32 + 1)).toBe(seedFor(2 ** 32 + 1));
    expect(seedFor(2 ** 40 + n)).not.toBe(seedFor(2 ** 41 + n));
    for (const s of [2 ** 32, 2 ** 53 - 1, -(2 ** 40)]) {
      const v = seedFor(s);
      expect(Number.isInteger(v) && v >= 0 && v < 2 ** 32, String(s)).toBe(true);
    }
  });
});
