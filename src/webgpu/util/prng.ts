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
