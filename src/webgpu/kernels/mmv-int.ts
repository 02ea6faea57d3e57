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
  if (d) return Boolean(w.planar === undefined ? d.intChunkDot : d.planarIntChunkDot);
  return w.type === 'Q4_K' || (w.planar !== undefined && ['Q8_0', 'Q4_0', 'Q6_K'].includes(w.type));
}

/**
 * The integer-dot chunk product (see mmv.ts `MmvLayout.intDot`) against the int8 activations `q{t}_{j}`
 * (scale `dx{t}`, half sums `qlo{t}`, `qhi{t}`), into `${p}s${t}`.
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
  if (dec) {
    const ctx: IntChunkCtx = { w, K, p, sum, dots };
    if (planar === undefined && dec.intChunkDot) return dec.intChunkDot(ctx);
    if (planar !== undefined && dec.planarIntChunkDot) return dec.planarIntChunkDot(ctx, planar);
    throw new Error(`no integer-dot path for ${t}`);
  }
  const NB = K / 32;
  const nB = planar ?? 0;
  const half = (D: string) =>
    `let ${p}dD = ${D}; let ${p}dW = ${w}[${p}dD >> 4u][(${p}dD >> 2u) & 3u] >> (((${p}dD >> 1u) & 1u) * 16u); let ${p}d = unpack2x16float(${p}dW).x;`;
  switch (t) {
    case 'Q8_0': {
      const words = ['qa.x', 'qa.y', 'qa.z', 'qa.w', 'qb.x', 'qb.y', 'qb.z', 'qb.w'].map((x) => `${p}${x}`);
      return `let ${p}bi = row * ${NB}u + c; let ${p}qa = ${w}[2u * ${p}bi]; let ${p}qb = ${w}[2u * ${p}bi + 1u];
${half(`${32 * nB}u + 2u * ${p}bi`)}
${sum((tt) => `${p}d * dx${tt} * f32(${dots(words, tt)})`)}`;
    }
    case 'Q4_0': {
      const c4 = ['x', 'y', 'z', 'w'];
      const lo = c4.map((c) => `(${p}q.${c} & 0x0f0f0f0fu)`);
      const hi = c4.map((c) => `((${p}q.${c} >> 4u) & 0x0f0f0f0fu)`);
      return `let ${p}bi = row * ${NB}u + c; let ${p}q = ${w}[${p}bi];
${half(`${16 * nB}u + 2u * ${p}bi`)}
${sum((tt) => `${p}d * dx${tt} * f32(${dots(lo, tt)} + ${dots(hi, tt, 4)} - 8 * (qlo${tt} + qhi${tt}))`)}`;
    }
    default:
      throw new Error(`no integer-dot path for ${t}`);
  }
}
