/**
 * WGSL that reads weights in their ggml types, for the kernels that read a weight element by element or 32
 * at a time (matmul.ts's general kernels, mmm.ts's float tile, embed.ts, headnorm.ts, postnorm.ts):
 * {@link wgslLoader}'s `ld_<name>` and `dq32_<name>`, in ggml's block layout or repacked into planes
 * (kernels/repack.ts). Each type's loaders are its block decoder's (kernels/quants/<type>.ts; formulas:
 * ggml-quants.c `dequantize_row_*`). mmv.ts and mmm.ts's integer tile have their own, faster readers
 * (the decoders' chunk dots and int8 loaders).
 */
import type { WeightType } from './common.ts';
import { DECODERS } from './quants/index.ts';

/**
 * WGSL for reading a weight bound as `<name>`:
 * `fn ld_<name>(i: u32) -> f32` reads element i (row-major, in elements) for every type, and for
 * quantized types also `fn dq32_<name>(i: u32, out: ptr<function, array<f32, 32>>)` decoding the 32
 * weights starting at element i (a multiple of 32) with the block's scale read once. `planarBlocks`: the
 * weight was repacked into planes of that many blocks.
 * @throws Error for `planarBlocks` on a type without planes.
 */
export function wgslLoader(n: string, t: WeightType, planarBlocks?: number): string {
  const d = DECODERS[t];
  if (planarBlocks === undefined) return d.loader(n);
  if (!d.planarLoader) throw new Error(`${t} has no planar layout`);
  return d.planarLoader(n, planarBlocks);
}
