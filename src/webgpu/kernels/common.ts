/**
 * Shared pieces of the WGSL kernels. Kernels are generated from TypeScript template functions (not
 * `.wgsl` files imported with `?raw`) so the same engine runs under Vite, in Vitest and in plain Node
 * (tsx) without a bundler; model dimensions are baked in as constants, so each pipeline is specialised
 * to one shape (the pipeline cache key is the generated source).
 */

/** Threads per workgroup used by every kernel (x dimension). */
export const WG = 64;

/**
 * Per-step parameters, one 16-byte uniform written with `queue.writeBuffer` before each submit:
 * `nTokens` = tokens in this batch (T), `pos0` = position of the batch's first token in the sequence.
 * Defined once here; {@link packStep} packs it.
 */
export const STEP_WGSL = `struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };`;

/** Bytes of the Step uniform. */
export const STEP_BYTES = 16;

/** Packs the Step uniform (see {@link STEP_WGSL}). */
export function packStep(nTokens: number, pos0: number, out = new Uint32Array(4)): Uint32Array {
  out[0] = nTokens;
  out[1] = pos0;
  out[2] = 0;
  out[3] = 0;
  return out;
}

/**
 * Weight storage types the kernels read, all dequantized in the kernel (never expanded in memory).
 * F16 is read as packed u32 with `unpack2x16float` (no shader-f16 needed), BF16 by shifting into f32
 * bits. Quantized blocks follow ggml's `ggml-common.h`: Q8_0 (32 weights in 34 bytes: f16 d, 32 × i8),
 * Q4_0 (32 in 18: f16 d, 16 bytes; low nibbles are weights 0–15, high nibbles 16–31; w = d·(q − 8)),
 * Q5_0 (32 in 22: f16 d, u32 qh of fifth bits, 16 bytes of nibbles as Q4_0; w = d·(q − 16); llama.cpp's
 * fallback in K-quant files for rows not divisible by 256),
 * Q4_K (256 in 144: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles),
 * Q6_K (256 in 210: ql[128], qh[64], i8 scales[16], f16 d),
 * Q4_1 (32 in 20: f16 d, f16 m, 16 bytes of nibbles as Q4_0; w = d·q + m),
 * Q5_1 (32 in 24: f16 d, f16 m, u32 qh, 16 bytes of nibbles; w = d·q + m),
 * IQ4_NL (32 in 18: f16 d, 16 bytes of nibbles as Q4_0; w = d·kvalues_iq4nl[q]),
 * IQ4_XS (256 in 136: f16 d, u16 scales_h, u8 scales_l[4], 128 bytes of nibbles, 16 per sub-block of
 * 32 with the 6-bit scale ls; w = d·(ls − 32)·kvalues_iq4nl[q]),
 * Q5_K (256 in 176: f16 d, f16 dmin, scales[12] as Q4_K, qh[32] fifth bits, qs[128] as Q4_K),
 * Q3_K (256 in 110: hmask[32] high bits, qs[64] 2-bit quants, 12 bytes of 6-bit scales, f16 d),
 * Q2_K (256 in 84: scales[16] 4-bit scale and min, qs[64] 2-bit quants, f16 d, f16 dmin). Blocks are read
 * from `array<u32>` at byte offsets, so rows need no alignment.
 */
export type WeightType =
  | 'F32'
  | 'F16'
  | 'BF16'
  | 'Q8_0'
  | 'Q4_0'
  | 'Q5_0'
  | 'Q4_K'
  | 'Q6_K'
  | 'Q4_1'
  | 'Q5_1'
  | 'IQ4_NL'
  | 'IQ4_XS'
  | 'Q5_K'
  | 'Q3_K'
  | 'Q2_K';

/** All weight types the kernels support, by ggml type name. */
export const WEIGHT_TYPES: readonly WeightType[] = [
  'F32',
  'F16',
  'BF16',
  'Q8_0',
  'Q4_0',
  'Q5_0',
  'Q4_K',
  'Q6_K',
  'Q4_1',
  'Q5_1',
  'IQ4_NL',
  'IQ4_XS',
  'Q5_K',
  'Q3_K',
  'Q2_K',
];

/** Block size (weights) and bytes per block for each weight type (ggml-common.h). */
export const WEIGHT_BLOCK: Record<WeightType, { size: number; bytes: number }> = {
  F32: { size: 1, bytes: 4 },
  F16: { size: 1, bytes: 2 },
  BF16: { size: 1, bytes: 2 },
  Q8_0: { size: 32, bytes: 34 },
  Q4_0: { size: 32, bytes: 18 },
  Q5_0: { size: 32, bytes: 22 },
  Q4_K: { size: 256, bytes: 144 },
  Q6_K: { size: 256, bytes: 210 },
  Q4_1: { size: 32, bytes: 20 },
  Q5_1: { size: 32, bytes: 24 },
  IQ4_NL: { size: 32, bytes: 18 },
  IQ4_XS: { size: 256, bytes: 136 },
  Q5_K: { size: 256, bytes: 176 },
  Q3_K: { size: 256, bytes: 110 },
  Q2_K: { size: 256, bytes: 84 },
};

/** True for block-quantized types (read 32 weights at a time by `dq32_<name>`). */
export function isQuantized(t: WeightType): boolean {
  return WEIGHT_BLOCK[t].size > 1;
}

/** Bytes of one row of K weights. @throws Error when K is not a multiple of the block size. */
export function rowBytes(t: WeightType, K: number): number {
  const b = WEIGHT_BLOCK[t];
  if (K % b.size !== 0)
    throw new Error(`a row of ${K} ${t} weights is not a whole number of ${b.size}-weight blocks`);
  return (K / b.size) * b.bytes;
}

/** WGSL storage array element type for a weight type. */
export function wgslArrayType(t: WeightType): string {
  return t === 'F32' ? 'array<f32>' : 'array<u32>';
}

/** Formats a number as a WGSL f32 literal. */
export function f32Lit(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`non-finite constant ${x}`);
  const s = x.toExponential(9);
  return `${s}f`;
}
