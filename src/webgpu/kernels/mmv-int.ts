/**
 * The integer-dot path of mmv.ts's kernels (`MmvLayout.intDot`): the chunk's activations rounded to int8
 * with one scale (as ggml's quantize_row_q8_0) and multiplied with `dot4I8Packed`, llama.cpp's MMVQ
 * scheme, for the types {@link usesIntDot} covers.
 */
import type { WeightType } from './common.ts';
import { DECODERS, type IntChunkCtx } from './quants/index.ts';

/**
 * Whether the integer-dot path covers this weight (planar Q8_0, Q4_0, Q6_K; Q4_K raw or planar; raw
 * Q5_K, Q3_K, Q2_K).
 */
export function usesIntDot(w: { type: WeightType; planar?: number }): boolean {
  const d = DECODERS[w.type];
  return Boolean(w.planar === undefined ? d.intChunkDot : d.planarIntChunkDot);
}

/**
 * The integer-dot chunk product (see mmv.ts `MmvLayout.intDot`) against the int8 activations `q{t}_{j}`
 * (scale `dx{t}`, half sums `qlo{t}`, `qhi{t}`), into `${p}s${t}`: the type's block decoder's
 * (kernels/quants/<type>.ts).
 * @throws Error where {@link usesIntDot} is false (the decoder has no integer-dot chunk for that layout).
 */
export function intChunkDot(
  t: WeightType,
  w: string,
  K: number,
  TT: number,
  p: string,
  planar?: number,
): string {
  const toks = Array.from({ length: TT }, (_, i) => i);
  const sum = (f: (tt: number) => string) => toks.map((tt) => `let ${p}s${tt} = ${f(tt)};`).join('\n');
  const Q = (tt: number, j: number) => `q${tt}_${j}`;
  const dots = (words: string[], tt: number, from = 0) =>
    words.map((wd, j) => `dot4I8Packed(${wd}, ${Q(tt, from + j)})`).join(' + ');
  const dec = DECODERS[t];
  const ctx: IntChunkCtx = { w, K, p, sum, dots };
  if (planar === undefined && dec.intChunkDot) return dec.intChunkDot(ctx);
  if (planar !== undefined && dec.planarIntChunkDot) return dec.planarIntChunkDot(ctx, planar);
  throw new Error(`no integer-dot path for ${t}`);
}
