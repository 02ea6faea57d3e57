/**
 * Seeded inputs for checking the quantizer against llama.cpp bit for bit (`scripts/golden-quant.ts`
 * quantizes them with ggml, `quantize.test.ts` with ours). Built from mulberry32 with + − × ÷ only (no
 * Math.log/cos, whose last bits may differ between JavaScript engines), so every platform makes the
 * same floats.
 */
import { mulberry32, type Rng } from '../util/prng.ts';

/** One input: rows of `nPerRow` elements, and the types it is meant for. */
export interface QuantCase {
  name: string;
  nPerRow: number;
  data: Float32Array;
  types: readonly string[];
}

/** Types compared with ggml. */
export const GOLDEN_QUANT_TYPES = [
  'Q8_0',
  'Q4_0',
  'Q5_0',
  'Q4_K',
  'Q6_K',
  'F16',
  'BF16',
  'Q4_1',
  'Q5_1',
  'IQ4_NL',
  'IQ4_XS',
  'Q5_K',
  'Q3_K',
  'Q2_K',
] as const;

/** Roughly normal (Irwin–Hall, 4 uniforms), mean 0, std 1. */
function gauss(r: Rng): number {
  return (r() + r() + r() + r() - 2) * Math.sqrt(3);
}

/** The inputs (about 130k elements; every row a multiple of 256). */
export function quantGoldenCases(): QuantCase[] {
  const all = GOLDEN_QUANT_TYPES;
  const cases: QuantCase[] = [];
  {
    // Weight-like: 64 rows of 256 normal values with std 0.02.
    const r = mulberry32(1);
    const d = new Float32Array(64 * 256);
    for (let i = 0; i < d.length; i++) d[i] = gauss(r) * 0.02;
    cases.push({ name: 'normal', nPerRow: 256, data: d, types: all });
  }
  {
    // Each 32-block with its own scale (1e-5 … 1e3) and offset; heavy tails; one-signed blocks
    // (Q4_K's min > 0 and max < 0 branches).
    const r = mulberry32(2);
    const d = new Float32Array(128 * 256);
    for (let b = 0; b < d.length / 32; b++) {
      const scale = 10 ** (Math.floor(r() * 9) - 5);
      const kind = b % 6;
      const offset = kind === 1 ? 3 * scale : kind === 2 ? -3 * scale : 0;
      for (let j = 0; j < 32; j++) {
        let v = gauss(r);
        if (kind === 3) v = v * v * v;
        if (kind === 4) v = r() < 0.05 ? v * 50 : v;
        if (kind === 5) v = Math.abs(v);
        d[b * 32 + j] = v * scale + offset;
      }
    }
    cases.push({ name: 'mixed-scales', nPerRow: 512, data: d, types: all });
  }
  {
    // Edge blocks: zeros, constants, one spike, values on the quantization grids (ties for roundf and
    // for the +8.5 truncation), tiny values, a lone negative maximum.
    const d = new Float32Array(16 * 256);
    const r = mulberry32(3);
    const blocks: ((j: number) => number)[] = [
      () => 0,
      () => 0.75,
      () => -1.25,
      (j) => (j === 7 ? 3 : 0),
      (j) => (j === 31 ? -5 : 0.001 * (j - 16)),
      (j) => (j === 0 ? 127 : (j % 5) - 2 + 0.5), // Q8_0: d = 1, halves round away from zero
      (j) => (j === 0 ? -8 : (j % 16) - 8 + (j > 16 ? 0.5 : 0)), // Q4_0: d = 1
      (j) => (j === 0 ? -16 : (j % 32) - 16), // Q5_0: d = 1
      (j) => 1e-6 * (j - 15.5),
      (j) => 1e-30 * (j + 1),
      (j) => (j < 16 ? 1 : -1),
      (j) => (j % 2 ? 2 ** -14 : -(2 ** -20)),
      (j) => j / 31,
      (j) => -j / 31,
      () => gauss(r),
      (j) => (j === 3 ? -1e3 : gauss(r)),
    ];
    for (let b = 0; b < d.length / 32; b++) {
      const f = blocks[b % blocks.length];
      for (let j = 0; j < 32; j++) d[b * 32 + j] = f(j);
    }
    cases.push({ name: 'edge', nPerRow: 256, data: d, types: all });
  }
  {
    // F16 and BF16 conversion: ties to even, subnormals, overflow, signed zeros, infinities, f32
    // subnormals.
    const vals: number[] = [
      0,
      -0,
      1,
      -1,
      65504,
      65519.99,
      65520,
      1e6,
      -1e6,
      2 ** -24,
      2 ** -25,
      3 * 2 ** -25,
      2 ** -26,
    ];
    vals.push(1.5 * 2 ** -24, 2 ** -14, 2 ** -14 - 2 ** -25, 1e-40, -1e-40, 1e-45, 3.4e38, -3.4e38);
    vals.push(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY);
    for (let k = 0; k < 16; k++) {
      vals.push(1 + (2 * k + 1) * 2 ** -11, -(1 + (2 * k + 1) * 2 ** -11)); // F16 halfway
      vals.push(1 + (2 * k + 1) * 2 ** -8, -(1 + (2 * k + 1) * 2 ** -8)); // BF16 halfway
      vals.push((k + 1) * 2 ** -24 + 2 ** -25); // F16 subnormal halfway
    }
    const r = mulberry32(4);
    while (vals.length % 256 !== 0) vals.push(gauss(r) * 10 ** (Math.floor(r() * 12) - 6));
    cases.push({ name: 'half-special', nPerRow: 256, data: Float32Array.from(vals), types: ['F16', 'BF16'] });
  }
  return cases;
}
