/**
 * Q5_K: 256 weights in 176 bytes (ggml-common.h `block_q5_K`), 8 sub-blocks of 32; word-aligned (44 words).
 *
 * ggml's block:
 * - bytes 0–15: f16 d, f16 dmin, scales[12]: sub-block j's 6-bit scale sc and min m as Q4_K's
 *   (`get_scale_min_k4`, quants/q4_k.ts)
 * - bytes 16–47: qh[32], bit j of byte l the fifth bit of sub-block j's weight l
 * - bytes 48–175: qs[128], nibbles as Q4_K's (sub-blocks 2p and 2p + 1 the low and high nibbles of 32 bytes)
 *
 * No planes (not repacked).
 *
 * Dequantization (ggml-quants.c `dequantize_row_q5_K`): w = d·sc·q − dmin·m, q = nibble + 16·(qh bit).
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}); mmv.ts `chunkDot` ({@link chunkDot});
 * mmv-int.ts `intChunkDot` ({@link intChunkDot}); mmm.ts's int8 tile ({@link intLoader}).
 */
import { Q4K_SCALE_MIN, q4kScaleMin } from './q4_k.ts';
import {
  type BlockDecoder,
  byteReaders,
  type ChunkCtx,
  dqi32Head,
  type IntChunkCtx,
  nib,
  U8N,
  u8x4n,
} from './shared.ts';

/** loader.ts: `ld_<n>` and `dq32_<n>` over ggml's blocks. */
function loader(n: string): string {
  return `${byteReaders(n)}
${q4kScaleMin(n)}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 256u) * 176u;
  let r = i % 256u;
  let s = r / 32u;
  let l = r % 32u;
  let sm = scmin_${n}(o + 4u, s);
  let q = rd8_${n}(o + 48u + (s / 2u) * 32u + l);
  let nib = select(q & 0xfu, q >> 4u, (s & 1u) == 1u) | (((rd8_${n}(o + 16u + l) >> s) & 1u) << 4u);
  return f16_${n}(o) * sm.x * f32(nib) - f16_${n}(o + 2u) * sm.y;
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 256u) * 176u;
  let s = (i % 256u) / 32u;
  let sm = scmin_${n}(o + 4u, s);
  let d = f16_${n}(o) * sm.x;
  let m = f16_${n}(o + 2u) * sm.y;
  let qb = o + 48u + (s / 2u) * 32u;
  let sh = (s & 1u) * 4u;
  for (var l = 0u; l < 32u; l += 4u) {
    let q = ((rd32_${n}(qb + l) >> sh) & 0x0f0f0f0fu) | (((rd32_${n}(o + 16u + l) >> s) & 0x01010101u) << 4u);
    (*out)[l] = d * f32(q & 0xffu) - m; (*out)[l + 1u] = d * f32((q >> 8u) & 0xffu) - m;
    (*out)[l + 2u] = d * f32((q >> 16u) & 0xffu) - m; (*out)[l + 3u] = d * f32(q >> 24u) - m;
  }
}`;
}

/**
 * The mmv chunk header (float and integer chunk dots): block `bi` at word `o`, sub-block `j`, the header
 * vec4 `h`, `ds` = d·sc, `mm` = dmin·m, the nibble shift `sh`, the nibbles' first word `qw`.
 */
function chunkHeader(w: string, K: number, p: string): string {
  return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}o = ${p}bi * 44u;
let ${p}h = vec4<u32>(${w}[${p}o], ${w}[${p}o + 1u], ${w}[${p}o + 2u], ${w}[${p}o + 3u]);
let ${p}dm = unpack2x16float(${p}h.x); let ${p}sm = q4kScaleMin(${p}h, ${p}j);
let ${p}ds = ${p}dm.x * ${p}sm.x; let ${p}mm = ${p}dm.y * ${p}sm.y; let ${p}sh = (${p}j & 1u) * 4u;
let ${p}qw = ${p}o + 12u + (${p}j / 2u) * 8u;`;
}

/** Word k (0–7) of the chunk's 5-bit quants: the nibbles and the fifth bits from qh. */
const word = (w: string, p: string, k: number) =>
  `((${w}[${p}qw + ${k}u] >> ${p}sh) & 0x0f0f0f0fu) | (((${w}[${p}o + ${4 + k}u] >> ${p}j) & 0x01010101u) << 4u)`;

/** mmv float chunk dot: ds·Σq·x − mm·Σx. */
function chunkDot({ w, K, p, X, XS, sum }: ChunkCtx): string {
  const lines = [chunkHeader(w, K, p)];
  for (let k = 0; k < 8; k++) lines.push(`let ${p}f${k} = ${u8x4n(word(w, p, k))};`);
  lines.push(
    sum(
      (tt) =>
        `${p}ds * (${U8N} * (${Array.from({ length: 8 }, (_, k) => `dot(${p}f${k}, ${X(tt, k)})`).join(' + ')})) - ${p}mm * ${XS(tt)}`,
    ),
  );
  return lines.join('\n');
}

/** mmv integer-dot chunk: dx·(ds·Σq·qx − mm·Σqx). */
function intChunkDot({ w, K, p, sum, dots }: IntChunkCtx): string {
  const words = Array.from({ length: 8 }, (_, k) => `(${word(w, p, k)})`);
  return `${chunkHeader(w, K, p)}
${sum((tt) => `dx${tt} * (${p}ds * f32(${dots(words, tt)}) - ${p}mm * f32(qlo${tt} + qhi${tt}))`)}`;
}

/** mmm.ts's int8 loader: (d·sc, d·sc, −dmin·m, −dmin·m). */
function intLoader(n: string): string {
  return `${dqi32Head(n)}
  let o = (i / 256u) * 176u; let s = (i % 256u) / 32u; let sm = scmin_${n}(o + 4u, s);
  let d = f16_${n}(o) * sm.x; let m = f16_${n}(o + 2u) * sm.y;
  let qb = o + 48u + (s / 2u) * 32u; let sh = (s & 1u) * 4u;
  for (var j = 0u; j < 8u; j++) {
    (*out)[j] = (${nib(`rd32_${n}(qb + 4u * j) >> sh`)}) | (((rd32_${n}(o + 16u + 4u * j) >> s) & 0x01010101u) << 4u);
  }
  return vec4<f32>(d, d, -m, -m);
}`;
}

export const Q5_K: BlockDecoder = {
  loader,
  bindingType: 'array<u32>',
  needsXsum: true,
  needsXhalf: false,
  mmvPrelude: Q4K_SCALE_MIN,
  chunkDot,
  intChunkDot,
  intLoader,
  // sc·q, 6-bit sc, 5-bit q: σ ≈ 350; dmin = 15.5·d centres it.
  syntheticFill: {
    scales: [
      { at: 0, holds: 'd' },
      { at: 2, holds: 'min' },
    ],
    stdAtUnitD: 350,
    minPerD: 15.5,
  },
};
