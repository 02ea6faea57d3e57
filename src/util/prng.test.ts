import { describe, expect, it } from 'vitest';
import { keyedU32, keyedUniform, mulberry32, pcgHash, randn, randnArray } from './prng.ts';

describe('prng', () => {
  it('mulberry32 is deterministic, seed-dependent and uniform in [0, 1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const xs = Array.from({ length: 10000 }, () => a());
    expect(xs.slice(0, 100)).toEqual(Array.from({ length: 100 }, () => b()));
    expect(xs[0]).not.toBe(c());
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.02);
    // Known first value (32-bit arithmetic only, so the same on every platform).
    expect(mulberry32(1)()).toBeCloseTo(0.6270739405881613, 15);
  });

  it('randn has mean 0 and std 1; randnArray scales', () => {
    const rng = mulberry32(7);
    const xs = Array.from({ length: 20000 }, () => randn(rng));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((s, x) => s + (x - mean) ** 2, 0) / xs.length);
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(Math.abs(sd - 1)).toBeLessThan(0.03);
    expect(xs.every(Number.isFinite)).toBe(true);
    const arr = randnArray(mulberry32(7), 20000, 0.5, 2);
    const m2 = arr.reduce((s, x) => s + x, 0) / arr.length;
    expect(Math.abs(m2 - 2)).toBeLessThan(0.02);
  });

  it('the keyed PCG hash matches a BigInt reference, is keyed by seed and index, and is uniform', () => {
    // Independent reference in arbitrary-precision integers (mod 2^32 by hand).
    const M = 0xffffffffn;
    const pcgRef = (v: bigint): bigint => {
      const s = (v * 747796405n + 2891336453n) & M;
      const w = (((s >> ((s >> 28n) + 4n)) ^ s) * 277803737n) & M;
      return (w >> 22n) ^ w;
    };
    const inputs = [0, 1, 2, 0x7fffffff, 0x80000000, 0xffffffff, 123456789, 0xdeadbeef];
    for (const v of inputs) expect(pcgHash(v)).toBe(Number(pcgRef(BigInt(v))));
    for (const seed of inputs) {
      for (const i of [0, 1, 7, 0xffffffff]) {
        const ref = pcgRef((BigInt(i) + pcgRef(BigInt(seed))) & M);
        expect(keyedU32(seed, i)).toBe(Number(ref));
      }
    }
    // Negative and > 32-bit seeds use their low 32 bits, as the GPU's u32 does.
    expect(keyedU32(-1, 3)).toBe(keyedU32(0xffffffff, 3));
    expect(keyedU32(2 ** 32 + 5, 3)).toBe(keyedU32(5, 3));
    const xs = Array.from({ length: 20000 }, (_, i) => keyedUniform(42, i));
    expect(xs.every((x) => x >= 0 && x < 1 && Math.fround(x) === x)).toBe(true);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.01);
    // 10 equal bins: chi-square with 9 degrees of freedom, 33.7 is its 1e-4 upper quantile.
    const bins = new Array(10).fill(0);
    for (const x of xs) bins[Math.floor(x * 10)]++;
    const chi2 = bins.reduce((s, b) => s + (b - 2000) ** 2 / 2000, 0);
    expect(chi2).toBeLessThan(33.7);
    expect(keyedUniform(42, 0)).not.toBe(keyedUniform(43, 0));
  });
});
