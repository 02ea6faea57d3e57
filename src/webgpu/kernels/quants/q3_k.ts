/**
 * Q3_K: 256 weights in 110 bytes (ggml-common.h `block_q3_K`), 16 groups of 16; 2 bytes past a word
 * boundary for odd blocks.
 *
 * ggml's block:
 * - bytes 0–31: hmask[32], element 128h + 32j + l's high bit at hmask[l] bit 4h + j (clear: −4)
 * - bytes 32–95: qs[64], its 2 low bits at qs[32h + l] >> 2j
 * - bytes 96–107: scales[12], group g's 6-bit scale: low nibble of byte 96 + (g & 7) (shift 4·(g / 8)),
 *   top 2 bits of byte 104 + g % 4 (shift 2·(g / 4))
 * - bytes 108–109: f16 d
 *
 * No planes (not repacked).
 *
 * Dequantization (ggml-quants.c `dequantize_row_q3_K`): w = d·(sc_g − 32)·(q − 4), q the 3-bit quant,
 * g = r / 16; the chunk dots apply the −4 once per group through the activations' half sums.
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

/** loader.ts: `q3sc_<n>(o, g)` (group g's scale − 32; mmm.ts's int8 loader uses it too), `ld_<n>`, `dq32_<n>`. */
function loader(n: string): string {
  return `${byteReaders(n)}
fn q3sc_${n}(o: u32, g: u32) -> f32 {
  let lo = (rd8_${n}(o + 96u + (g & 7u)) >> ((g / 8u) * 4u)) & 0xfu;
  let hi = (rd8_${n}(o + 104u + (g % 4u)) >> ((g / 4u) * 2u)) & 3u;
  return f32(i32(lo | (hi << 4u)) - 32);
}
fn ld_${n}(i: u32) -> f32 {
  let o = (i / 256u) * 110u;
  let r = i % 256u;
  let h = r / 128u;
  let j = (r % 128u) / 32u;
  let l = r % 32u;
  let q = (rd8_${n}(o + 32u + h * 32u + l) >> (2u * j)) & 3u;
  let hb = (rd8_${n}(o + l) >> (4u * h + j)) & 1u;
  return f16_${n}(o + 108u) * q3sc_${n}(o, r / 16u) * f32(i32(q | (hb << 2u)) - 4);
}
fn dq32_${n}(i: u32, out: ptr<function, array<f32, 32>>) {
  let o = (i / 256u) * 110u;
  let r = i % 256u;
  let h = r / 128u;
  let j = (r % 128u) / 32u;
  let d = f16_${n}(o + 108u);
  let s0 = d * q3sc_${n}(o, r / 16u);
  let s1 = d * q3sc_${n}(o, r / 16u + 1u);
  for (var l = 0u; l < 32u; l += 4u) {
    let q = ((rd32_${n}(o + 32u + h * 32u + l) >> (2u * j)) & 0x03030303u) | (((rd32_${n}(o + l) >> (4u * h + j)) & 0x01010101u) << 2u);
    let sc = select(s0, s1, l >= 16u);
    for (var b = 0u; b < 4u; b++) { (*out)[l + b] = sc * f32(i32((q >> (b * 8u)) & 0xffu) - 4); }
  }
}`;
}

/**
 * The mmv chunk header and loads (float and integer chunk dots). Sub-block cc of 32: half hh = cc/4,
 * k = cc%4: 2 bits at qs byte 32hh + l, shift 2k; high bit hmask byte l, bit 4hh + k; groups g = 8hh + 2k
 * and g + 1 take 6-bit scales whose low nibbles are bytes 96 + 2k, 97 + 2k (shift 4hh) and top bits bytes
 * 104 + 2(k&1), +1 (shift 2⌊g/4⌋): `sc0`, `sc1` (× d). Words `a0…a8` (qs) and `b0…b8` (hmask), stitched
 * when `odd`.
 */
function chunkHeader(w: string, K: number, p: string): string {
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
${loads}`;
}

/** Word j (0–7) of the chunk's 3-bit quants (unsigned, q + 4). */
function word(p: string, j: number): string {
  const stitch = (v: string) =>
    `select(${p}${v}${j}, (${p}${v}${j} >> 16u) | (${p}${v}${j + 1} << 16u), ${p}odd)`;
  return `((${stitch('a')} >> ${p}qs) & 0x03030303u) | (((${stitch('b')} >> ${p}ms) & 0x01010101u) << 2u)`;
}

/** mmv float chunk dot: q − 4 through the chunk's half sums, per 16-weight scale. */
function chunkDot({ w, K, p, X, sum }: ChunkCtx): string {
  const lines = [chunkHeader(w, K, p)];
  for (let j = 0; j < 8; j++) lines.push(`let ${p}f${j} = ${u8x4n(word(p, j))};`);
  const part = (from: number, tt: number) =>
    Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
  lines.push(
    sum(
      (tt) =>
        `${p}sc0 * (${U8N} * (${part(0, tt)}) - 4.0 * xlo${tt}) + ${p}sc1 * (${U8N} * (${part(4, tt)}) - 4.0 * xhi${tt})`,
    ),
  );
  return lines.join('\n');
}

/** mmv integer-dot chunk. */
function intChunkDot({ w, K, p, sum, dots }: IntChunkCtx): string {
  const words = Array.from({ length: 8 }, (_, j) => `(${word(p, j)})`);
  return `${chunkHeader(w, K, p)}
${sum((tt) => `dx${tt} * (${p}sc0 * f32(${dots(words.slice(0, 4), tt)} - 4 * qlo${tt}) + ${p}sc1 * f32(${dots(words.slice(4), tt, 4)} - 4 * qhi${tt}))`)}`;
}

/** mmm.ts's int8 loader: (s0, s1, −4·s0, −4·s1), s = d·(sc − 32). */
function intLoader(n: string): string {
  return `${dqi32Head(n)}
  let o = (i / 256u) * 110u; let r = i % 256u; let h = r / 128u; let c = (r % 128u) / 32u;
  let d = f16_${n}(o + 108u); let s0 = d * q3sc_${n}(o, r / 16u); let s1 = d * q3sc_${n}(o, r / 16u + 1u);
  for (var j = 0u; j < 8u; j++) {
    (*out)[j] = ((rd32_${n}(o + 32u + h * 32u + 4u * j) >> (2u * c)) & 0x03030303u) | (((rd32_${n}(o + 4u * j) >> (4u * h + c)) & 0x01010101u) << 2u);
  }
  return vec4<f32>(s0, s1, -4.0 * s0, -4.0 * s1);
}`;
}

export const Q3_K: BlockDecoder = {
  loader,
  bindingType: 'array<u32>',
  needsXsum: false,
  needsXhalf: true,
  chunkDot,
  intChunkDot,
  intLoader,
  // (sc − 32)·(q − 4), 6-bit sc, 3-bit q: σ ≈ 43.
  syntheticFill: { scales: [{ at: 108, holds: 'd' }], stdAtUnitD: 43 },
};
