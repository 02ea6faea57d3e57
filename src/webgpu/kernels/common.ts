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

/** Weight storage types the kernels read. F16 is read as packed u32 with `unpack2x16float` (no shader-f16 needed). */
export type WeightType = 'F32' | 'F16';

/** WGSL storage array element type for a weight type. */
export function wgslArrayType(t: WeightType): string {
  return t === 'F32' ? 'array<f32>' : 'array<u32>';
}

/**
 * WGSL function `fn ld_<name>(i: u32) -> f32` reading element i (in elements, row-major) of a weight
 * bound as `<name>`. F16 elements are unpacked from u32 pairs (ggml stores F16 little-endian, element
 * 2j in the low half of word j).
 */
export function wgslLoader(name: string, t: WeightType): string {
  if (t === 'F32') return `fn ld_${name}(i: u32) -> f32 { return ${name}[i]; }`;
  return `fn ld_${name}(i: u32) -> f32 { let p = unpack2x16float(${name}[i >> 1u]); return select(p.x, p.y, (i & 1u) == 1u); }`;
}

/** Formats a number as a WGSL f32 literal. */
export function f32Lit(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`non-finite constant ${x}`);
  const s = x.toExponential(9);
  return `${s}f`;
}
