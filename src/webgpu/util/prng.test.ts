import { describe, expect, it } from 'vitest';
import { mulberry32, randn, randnArray } from './prng.ts';

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
});
