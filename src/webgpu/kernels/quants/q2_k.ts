/**
 * Q2_K: 256 weights in 84 bytes (ggml-common.h `block_q2_K`), 16 groups of 16; word-aligned (21 words).
 *
 * ggml's block:
 * - bytes 0–15: scales[16], group g's 4-bit scale (low nibble) and 4-bit min (high nibble)
 * - bytes 16–79: qs[64], element 128h + 32j + l (j < 4, l < 32): 2 bits at qs[32h + l] >> 2j
 * - bytes 80–83: f16 d, f16 dmin
 *
 * No planes (not repacked).
 *
 * Dequantization (ggml-quants.c `dequantize_row_q2_K`): w = d·sc_g·q − dmin·m_g, g = r / 16; the chunk
 * dots fold the mins in through the activations' half sums.
 *
 * Used by: loader.ts `wgslLoader` ({@link loader}); mmv.ts `chunkDot` ({@link chunkDot});
 * mmv-int.ts `intChunkDot` ({@link intChunkDot}); mmm.ts's int8 tile ({@link intLoader}).
 */
import {
  type BlockDecoder,
  byteReaders,
  type ChunkCtx,
  dqi32Head,
  type IntChunkCtx,
  U8N,
  u8x4n,
} from './shared.ts';

/** loader.ts: `ld_<n>` and `dq32_<n>` over ggml's blocks. */
function loader(n: string): string {
  return `${byteReaders(n)}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 256u) * 84u;
  let r = i % 256u;
  let sc = rd8_${n}(o + r / 16u);
  let q = (rd8_${n}(o + 16u + (r / 128u) * 32u + r % 32u) >> (2u * ((r % 128u) / 32u))) & 3u;
  return f16_${n}(o + 80u) * f32(sc & 0xfu) * f32(q) - f16_${n}(o + 82u) * f32(sc >> 4u);
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 256u) * 84u;
  let r = i % 256u;
  let d = f16_${n}(o + 80u);
  let dm = f16_${n}(o + 82u);
  let sa = rd8_${n}(o + r / 16u);
  let sb = rd8_${n}(o + r / 16u + 1u);
  let qb = o + 16u + (r / 128u) * 32u;
  let sh = 2u * ((r % 128u) / 32u);
  for (var l = 0u; l < 32u; l += 4u) {
    let q = (rd32_${n}(qb + l) >> sh) & 0x03030303u;
    let sc = select(sa, sb, l >= 16u);
    let ds = d * f32(sc & 0xfu);
    let m = dm * f32(sc >> 4u);
    for (var b = 0u; b < 4u; b++) { (*out)[l + b] = ds * f32((q >> (b * 8u)) & 0xffu) - m; }
  }
}`;
}

/**
 * The mmv chunk header (float and integer chunk dots). Sub-block cc of 32: half hh = cc/4, k = cc%4: 2
 * bits at qs byte 32hh + l, shift 2k (`qw`, `sh`); groups 8hh + 2k (l < 16: `sc0`, `m0`) and +1 (`sc1`, `m1`).
 */
function chunkHeader(w: string, K: number, p: string): string {
  return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;
let ${p}o = ${p}bi * 21u; let ${p}dm = unpack2x16float(${w}[${p}o + 20u]);
let ${p}so = ${p}bi * 84u + ${p}hh * 8u + ${p}k * 2u; let ${p}sw = ${w}[${p}so >> 2u] >> ((${p}so & 2u) * 8u);
let ${p}sc0 = ${p}dm.x * f32(${p}sw & 0xfu); let ${p}m0 = ${p}dm.y * f32((${p}sw >> 4u) & 0xfu);
let ${p}sc1 = ${p}dm.x * f32((${p}sw >> 8u) & 0xfu); let ${p}m1 = ${p}dm.y * f32((${p}sw >> 12u) & 0xfu);
let ${p}qw = ${p}o + 4u + ${p}hh * 8u; let ${p}sh = ${p}k * 2u;`;
}

/** mmv float chunk dot: Σ(s·q − m)·x = s·Σq·x − m·Σx per 16-weight group. */
function chunkDot({ w, K, p, X, sum }: ChunkCtx): string {
  const lines = [chunkHeader(w, K, p)];
  for (let j = 0; j < 8; j++) {
    lines.push(`let ${p}f${j} = ${u8x4n(`(${w}[${p}qw + ${j}u] >> ${p}sh) & 0x03030303u`)};`);
  }
  const part = (from: number, tt: number) =>
    Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
  lines.push(
    sum(
      (tt) =>
        `${p}sc0 * ${U8N} * (${part(0, tt)}) - ${p}m0 * xlo${tt} + ${p}sc1 * ${U8N} * (${part(4, tt)}) - ${p}m1 * xhi${tt}`,
    ),
  );
  return lines.join('\n');
}

/** mmv integer-dot chunk. */
function intChunkDot({ w, K, p, sum, dots }: IntChunkCtx): string {
  const words = Array.from({ length: 8 }, (_, j) => `((${w}[${p}qw + ${j}u] >> ${p}sh) & 0x03030303u)`);
  return `${chunkHeader(w, K, p)}
${sum((tt) => `dx${tt} * (${p}sc0 * f32(${dots(words.slice(0, 4), tt)}) - ${p}m0 * f32(qlo${tt}) + ${p}sc1 * f32(${dots(words.slice(4), tt, 4)}) - ${p}m1 * f32(qhi${tt}))`)}`;
}

/** mmm.ts's int8 loader: (d·sc0, d·sc1, −dmin·m0, −dmin·m1). */
function intLoader(n: string): string {
  return `${dqi32Head(n)}
  let o = (i / 256u) * 84u; let r = i % 256u; let d = f16_${n}(o + 80u); let dm = f16_${n}(o + 82u);
  let sa = rd8_${n}(o + r / 16u); let sb = rd8_${n}(o + r / 16u + 1u);
  let qb = o + 16u + (r / 128u) * 32u; let sh = 2u * ((r % 128u) / 32u);
  for (var j = 0u; j < 8u; j++) { (*out)[j] = (rd32_${n}(qb + 4u * j) >> sh) & 0x03030303u; }
  return vec4<f32>(d * f32(sa & 0xfu), d * f32(sb & 0xfu), -dm * f32(sa >> 4u), -dm * f32(sb >> 4u));
}`;
}

export const Q2_K: BlockDecoder = {
  loader,
  bindingType: 'array<u32>',
  needsXsum: false,
  needsXhalf: true,
  chunkDot,
  intChunkDot,
  intLoader,
  // sc·q, 4-bit sc, 2-bit q: σ ≈ 9; dmin = 1.5·d centres it.
  syntheticFill: {
    scales: [
      { at: 80, holds: 'd' },
      { at: 82, holds: 'min' },
    ],
    stdAtUnitD: 9,
    minPerD: 1.5,
  },
};
