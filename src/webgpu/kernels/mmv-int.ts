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
  if (w.planar === undefined && (w.type === 'Q5_K' || w.type === 'Q3_K' || w.type === 'Q2_K')) return true;
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
    case 'Q5_K': {
      // As chunkDot's Q5_K: Q4_K's header and nibbles plus the fifth bit from qh (dequantize_row_q5_K).
      const words = Array.from(
        { length: 8 },
        (_, k) =>
          `(((${w}[${p}qw + ${k}u] >> ${p}sh) & 0x0f0f0f0fu) | (((${w}[${p}o + ${4 + k}u] >> ${p}j) & 0x01010101u) << 4u))`,
      );
      return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}o = ${p}bi * 44u;
let ${p}h = vec4<u32>(${w}[${p}o], ${w}[${p}o + 1u], ${w}[${p}o + 2u], ${w}[${p}o + 3u]);
let ${p}dm = unpack2x16float(${p}h.x); let ${p}sm = q4kScaleMin(${p}h, ${p}j);
let ${p}ds = ${p}dm.x * ${p}sm.x; let ${p}mm = ${p}dm.y * ${p}sm.y; let ${p}sh = (${p}j & 1u) * 4u;
let ${p}qw = ${p}o + 12u + (${p}j / 2u) * 8u;
${sum((tt) => `dx${tt} * (${p}ds * f32(${dots(words, tt)}) - ${p}mm * f32(qlo${tt} + qhi${tt}))`)}`;
    }
    case 'Q2_K': {
      // As chunkDot's Q2_K: 2-bit quants, a 4-bit scale and min per 16 weights (dequantize_row_q2_K).
      const words = Array.from({ length: 8 }, (_, j) => `((${w}[${p}qw + ${j}u] >> ${p}sh) & 0x03030303u)`);
      return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;
let ${p}o = ${p}bi * 21u; let ${p}dm = unpack2x16float(${w}[${p}o + 20u]);
let ${p}so = ${p}bi * 84u + ${p}hh * 8u + ${p}k * 2u; let ${p}sw = ${w}[${p}so >> 2u] >> ((${p}so & 2u) * 8u);
let ${p}sc0 = ${p}dm.x * f32(${p}sw & 0xfu); let ${p}m0 = ${p}dm.y * f32((${p}sw >> 4u) & 0xfu);
let ${p}sc1 = ${p}dm.x * f32((${p}sw >> 8u) & 0xfu); let ${p}m1 = ${p}dm.y * f32((${p}sw >> 12u) & 0xfu);
let ${p}qw = ${p}o + 4u + ${p}hh * 8u; let ${p}sh = ${p}k * 2u;
${sum((tt) => `dx${tt} * (${p}sc0 * f32(${dots(words.slice(0, 4), tt)}) - ${p}m0 * f32(qlo${tt}) + ${p}sc1 * f32(${dots(words.slice(4), tt, 4)}) - ${p}m1 * f32(qhi${tt}))`)}`;
    }
    case 'Q3_K': {
      // As mmv-chunk-k.ts lowKChunkDot's Q3_K (110-byte blocks stitched across words): q − 4 with a 6-bit scale per 16.
      const stitch = (v: string, j: number) =>
        `select(${p}${v}${j}, (${p}${v}${j} >> 16u) | (${p}${v}${j + 1} << 16u), ${p}odd)`;
      const words = Array.from(
        { length: 8 },
        (_, j) =>
          `(((${stitch('a', j)} >> ${p}qs) & 0x03030303u) | (((${stitch('b', j)} >> ${p}ms) & 0x01010101u) << 2u))`,
      );
      const loads = Array.from(
        { length: 9 },
        (_, j) => `let ${p}a${j} = ${w}[${p}qw + ${j}u]; let ${p}b${j} = ${w}[${p}mw + ${j}u];`,
      ).join('\n');
      return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;
let ${p}o = ${p}bi * 110u; let ${p}odd = (${p}o & 2u) != 0u;
let ${p}qw = (${p}o + 32u + ${p}hh * 32u) >> 2u; let ${p}mw = ${p}o >> 2u;
let ${p}lo = ${p}o + 96u + ${p}k * 2u; let ${p}lw = ${w}[${p}lo >> 2u] >> ((${p}lo & 2u) * 8u);
let ${p}ho = ${p}o + 104u + (${p}k & 1u) * 2u; let ${p}hw = ${w}[${p}ho >> 2u] >> ((${p}ho & 2u) * 8u);
let ${p}lsh = ${p}hh * 4u; let ${p}hsh = (${p}hh * 2u + ${p}k / 2u) * 2u;
let ${p}dd = unpack2x16float(${w}[(${p}o + 108u) >> 2u]); let ${p}d = select(${p}dd.x, ${p}dd.y, ${p}odd);
let ${p}sc0 = ${p}d * f32(i32(((${p}lw >> ${p}lsh) & 0xfu) | (((${p}hw >> ${p}hsh) & 3u) << 4u)) - 32);
let ${p}sc1 = ${p}d * f32(i32(((${p}lw >> (8u + ${p}lsh)) & 0xfu) | (((${p}hw >> (8u + ${p}hsh)) & 3u) << 4u)) - 32);
let ${p}qs = ${p}k * 2u; let ${p}ms = ${p}hh * 4u + ${p}k;
${loads}
${sum((tt) => `dx${tt} * (${p}sc0 * f32(${dots(words.slice(0, 4), tt)} - 4 * qlo${tt}) + ${p}sc1 * f32(${dots(words.slice(4), tt, 4)} - 4 * qhi${tt}))`)}`;
    }
    default:
      throw new Error(`no integer-dot path for ${t}`);
  }
}
