/**
 * Seeded pseudo-random numbers for tests and test models: the same seed gives the same sequence on
 * every platform (32-bit integer arithmetic only).
 */

/** A source of uniform numbers in [0, 1). */
export type Rng = () => number;

/**
 * mulberry32 (Tommy Ettinger's 32-bit generator): fast, 2^32 period, good enough for test data.
 * @param seed any number; only its low 32 bits matter.
 */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One standard normal sample (Box–Muller), drawn from `rng`; `mean` and `std` scale it. */
export function randn(rng: Rng, mean = 0, std = 1): number {
  // 1 - u keeps the argument of the log in (0, 1].
  const u = 1 - rng();
  const v = rng();
  return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** A Float32Array of `n` normal samples with the given standard deviation (and mean). */
export function randnArray(rng: Rng, n: number, std = 1, mean = 0): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = randn(rng, mean, std);
  return out;
}

/**
 * PCG hash (Jarzynski & Olano, "Hash Functions for GPU Rendering", JCGT 9(3), 2020): one step of a
 * 32-bit LCG followed by PCG's RXS-M-XS output permutation. A bijection on u32, integer arithmetic only;
 * kernels/sample.ts has the same function in WGSL (`PRNG_WGSL`).
 * @param v any number; only its low 32 bits matter. @returns a u32.
 */
export function pcgHash(v: number): number {
  const s = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const w = Math.imul(((s >>> ((s >>> 28) + 4)) ^ s) >>> 0, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

/**
 * The counter-based generator the GPU sampler draws from: u32 number `index` of the stream `seed`,
 * `pcg(index + pcg(seed))` (the paper's nesting for several inputs). No state, so draw n of a request
 * is the same on every adapter and on the CPU, whatever was drawn before.
 * @param seed low 32 bits used. @param index draw number, low 32 bits used. @returns a u32.
 */
export function keyedU32(seed: number, index: number): number {
  return pcgHash((index + pcgHash(seed)) >>> 0);
}

/**
 * A uniform number in [0, 1) from {@link keyedU32}: its top 24 bits × 2⁻²⁴, so the value is exactly
 * representable in f32 and the GPU (kernels/sample.ts) gets the same number bit for bit.
 */
export function keyedUniform(seed: number, index: number): number {
  return (keyedU32(seed, index) >>> 8) / 16777216;
}

/**
 * `n` pseudo-random token ids in [1, nVocab) (never 0), from a 32-bit LCG (Numerical Recipes' constants,
 * 1664525 / 1013904223) seeded with `seed`: the benchmarks' prompts, whose content does not change the
 * speed. The same seed gives the same ids everywhere.
 * @param nVocab vocabulary size (≥ 2 for ids other than 1).
 */
export function benchTokenIds(n: number, nVocab: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = 1 + (s % Math.max(1, nVocab - 1));
  }
  return out;
}
