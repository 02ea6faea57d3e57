/**
 * The float path of mmv.ts's kernels, per weight type: the WGSL that multiplies one 32-weight chunk of a
 * row by the chunk's activations of every token ({@link chunkDot}: ggml's blocks as in the file, with
 * their 2-byte misalignment stitched; planar layouts, kernels/repack.ts), and what each type needs of
 * the kernel (binding type, Σx and half sums). Each type's chunk dot is its block decoder's
 * (kernels/quants/<type>.ts; formulas: ggml-quants.c `dequantize_row_*`); see mmv.ts's header for the
 * unpacking and offset tricks.
 */
import type { WeightType } from './common.ts';
import { type ChunkCtx, DECODERS } from './quants/index.ts';

/** WGSL binding element type for a weight in this kernel. */
export function bindingType(t: WeightType, planar?: number): string {
  if (planar !== undefined) return 'array<vec4<u32>>';
  return DECODERS[t].bindingType;
}

/** Whether a type's chunk dot needs the chunk's Σx (offset or min folded out of the loop). */
export function needsXsum(t: WeightType): boolean {
  return DECODERS[t].needsXsum;
}

/**
 * Whether the float path of `t` needs the half sums `xlo{t}` = Σx[0..16) and `xhi{t}` = Σx[16..32) of
 * the chunk (Q6_K: its −32 offset applied as −32·Σx per 16-weight scale instead of per weight).
 */
export function needsXhalf(t: WeightType): boolean {
  return DECODERS[t].needsXhalf;
}

/**
 * Statements computing the dot product of chunk `c` of row `row` of weight `w` with the activations
 * `x{t}_{j}` (vec4, j = 0..7) of every token t < TT, into `let s{t}` … as `${p}s${t}`. `xs{t}` is Σx of
 * the chunk for token t (when {@link needsXsum}). K is the row length; `planar`: the weight's planes'
 * block count (kernels/repack.ts).
 * @throws Error for `planar` on a type without planes.
 */
export function chunkDot(
  t: WeightType,
  w: string,
  K: number,
  TT: number,
  p: string,
  packed: boolean,
  planar?: number,
): string {
  const toks = Array.from({ length: TT }, (_, i) => i);
  const ctx: ChunkCtx = {
    w,
    K,
    p,
    packed,
    X: (tt, j) => `x${tt}_${j}`,
    XS: (tt) => `xs${tt}`,
    sum: (f) => toks.map((tt) => `let ${p}s${tt} = ${f(tt)};`).join('\n'),
  };
  const d = DECODERS[t];
  if (planar === undefined) return d.chunkDot(ctx);
  if (!d.planarChunkDot) throw new Error(`${t} has no planar layout`);
  return d.planarChunkDot(ctx, planar);
}
