/**
 * mmv-chunk.ts `chunkDot` for the K-quants (256-weight super-blocks of 8 chunks of 32: Q4_K, Q6_K,
 * Q5_K, Q2_K, Q3_K) in ggml's block layout, and Q4_K/Q5_K's scale-and-min WGSL helper. Formulas:
 * ggml-quants.c `dequantize_row_q*_K`.
 */
import type { WeightType } from './common.ts';
import { U8N, u8x4n } from './mmv-unpack.ts';

/** mmv-chunk.ts `chunkDot` of Q4_K, Q6_K and Q5_K (256-weight super-blocks). */
export function kQuantChunkDot(
  t: WeightType,
  w: string,
  K: number,
  p: string,
  _packed: boolean,
  X: (tt: number, j: number) => string,
  XS: (tt: number) => string,
  sum: (f: (tt: number) => string) => string,
): string {
  switch (t) {
    case 'Q5_K': {
      // 176-byte blocks = 44 words: [d|dmin, scales 0–11] as Q4_K, qh[32] (bit j of byte l: 5th bit of
      // sub-block j's weight l), qs[128] as Q4_K (dequantize_row_q5_K).
      const lines = [
        `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}o = ${p}bi * 44u;`,
        `let ${p}h = vec4<u32>(${w}[${p}o], ${w}[${p}o + 1u], ${w}[${p}o + 2u], ${w}[${p}o + 3u]);`,
        `let ${p}dm = unpack2x16float(${p}h.x); let ${p}sm = q4kScaleMin(${p}h, ${p}j);`,
        `let ${p}ds = ${p}dm.x * ${p}sm.x; let ${p}mm = ${p}dm.y * ${p}sm.y; let ${p}sh = (${p}j & 1u) * 4u;`,
        `let ${p}qw = ${p}o + 12u + (${p}j / 2u) * 8u;`,
      ];
      for (let k = 0; k < 8; k++) {
        lines.push(
          `let ${p}f${k} = ${u8x4n(`((${w}[${p}qw + ${k}u] >> ${p}sh) & 0x0f0f0f0fu) | (((${w}[${p}o + ${4 + k}u] >> ${p}j) & 0x01010101u) << 4u)`)};`,
        );
      }
      lines.push(
        sum(
          (tt) =>
            `${p}ds * (${U8N} * (${Array.from({ length: 8 }, (_, k) => `dot(${p}f${k}, ${X(tt, k)})`).join(' + ')})) - ${p}mm * ${XS(tt)}`,
        ),
      );
      return lines.join('\n');
    }
    default:
      throw new Error(`kQuantChunkDot: not for ${t}`);
  }
}

/** mmv-chunk.ts `chunkDot` of Q2_K and Q3_K. */
export function lowKChunkDot(
  t: WeightType,
  w: string,
  K: number,
  p: string,
  _packed: boolean,
  X: (tt: number, j: number) => string,
  _XS: (tt: number) => string,
  sum: (f: (tt: number) => string) => string,
): string {
  switch (t) {
    case 'Q2_K': {
      // 84-byte blocks = 21 words: scales[16] (scale | min << 4 per 16 weights), qs[64], d|dmin.
      // Sub-block cc of 32: half hh = cc/4, k = cc%4: 2 bits at qs byte 32hh + l, shift 2k; groups
      // 8hh + 2k (l < 16) and +1 (dequantize_row_q2_K).
      const lines = [
        `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;`,
        `let ${p}o = ${p}bi * 21u; let ${p}dm = unpack2x16float(${w}[${p}o + 20u]);`,
        `let ${p}so = ${p}bi * 84u + ${p}hh * 8u + ${p}k * 2u; let ${p}sw = ${w}[${p}so >> 2u] >> ((${p}so & 2u) * 8u);`,
        `let ${p}sc0 = ${p}dm.x * f32(${p}sw & 0xfu); let ${p}m0 = ${p}dm.y * f32((${p}sw >> 4u) & 0xfu);`,
        `let ${p}sc1 = ${p}dm.x * f32((${p}sw >> 8u) & 0xfu); let ${p}m1 = ${p}dm.y * f32((${p}sw >> 12u) & 0xfu);`,
        `let ${p}qw = ${p}o + 4u + ${p}hh * 8u; let ${p}sh = ${p}k * 2u;`,
      ];
      for (let j = 0; j < 8; j++) {
        lines.push(`let ${p}f${j} = ${u8x4n(`(${w}[${p}qw + ${j}u] >> ${p}sh) & 0x03030303u`)};`);
      }
      const part = (from: number, tt: number) =>
        Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
      // The min through the chunk's half sums: Σ(s·q − m)·x = s·Σq·x − m·Σx per 16-weight group.
      lines.push(
        sum(
          (tt) =>
            `${p}sc0 * ${U8N} * (${part(0, tt)}) - ${p}m0 * xlo${tt} + ${p}sc1 * ${U8N} * (${part(4, tt)}) - ${p}m1 * xhi${tt}`,
        ),
      );
      return lines.join('\n');
    }
    case 'Q3_K': {
      // 110-byte blocks (2 bytes past a word boundary for odd blocks): hmask[32], qs[64], scales[12], f16
      // d. Sub-block cc of 32: half hh = cc/4, k = cc%4: 2 bits at qs byte 32hh + l, shift 2k; high bit
      // hmask byte l, bit 4hh + k (clear: −4); groups g = 8hh + 2k and g + 1 take 6-bit scales whose low
      // nibbles are bytes 96 + 2k, 97 + 2k (shift 4hh) and top bits bytes 104 + 2(k&1), +1 (shift 2⌊g/4⌋)
      // (dequantize_row_q3_K).
      const lines = [
        `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;`,
        `let ${p}o = ${p}bi * 110u; let ${p}odd = (${p}o & 2u) != 0u;`,
        `let ${p}qw = (${p}o + 32u + ${p}hh * 32u) >> 2u; let ${p}mw = ${p}o >> 2u;`,
        `let ${p}lo = ${p}o + 96u + ${p}k * 2u; let ${p}lw = ${w}[${p}lo >> 2u] >> ((${p}lo & 2u) * 8u);`,
        `let ${p}ho = ${p}o + 104u + (${p}k & 1u) * 2u; let ${p}hw = ${w}[${p}ho >> 2u] >> ((${p}ho & 2u) * 8u);`,
        `let ${p}lsh = ${p}hh * 4u; let ${p}hsh = (${p}hh * 2u + ${p}k / 2u) * 2u;`,
        `let ${p}dd = unpack2x16float(${w}[(${p}o + 108u) >> 2u]); let ${p}d = select(${p}dd.x, ${p}dd.y, ${p}odd);`,
        `let ${p}sc0 = ${p}d * f32(i32(((${p}lw >> ${p}lsh) & 0xfu) | (((${p}hw >> ${p}hsh) & 3u) << 4u)) - 32);`,
        `let ${p}sc1 = ${p}d * f32(i32(((${p}lw >> (8u + ${p}lsh)) & 0xfu) | (((${p}hw >> (8u + ${p}hsh)) & 3u) << 4u)) - 32);`,
        `let ${p}qs = ${p}k * 2u; let ${p}ms = ${p}hh * 4u + ${p}k;`,
      ];
      for (let j = 0; j <= 8; j++)
        lines.push(`let ${p}a${j} = ${w}[${p}qw + ${j}u]; let ${p}b${j} = ${w}[${p}mw + ${j}u];`);
      for (let j = 0; j < 8; j++) {
        const Q = `select(${p}a${j}, (${p}a${j} >> 16u) | (${p}a${j + 1} << 16u), ${p}odd)`;
        const H = `select(${p}b${j}, (${p}b${j} >> 16u) | (${p}b${j + 1} << 16u), ${p}odd)`;
        lines.push(
          `let ${p}f${j} = ${u8x4n(`((${Q} >> ${p}qs) & 0x03030303u) | (((${H} >> ${p}ms) & 0x01010101u) << 2u)`)};`,
        );
      }
      const part = (from: number, tt: number) =>
        Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
      // q − 4 through the chunk's half sums, per 16-weight scale.
      lines.push(
        sum(
          (tt) =>
            `${p}sc0 * (${U8N} * (${part(0, tt)}) - 4.0 * xlo${tt}) + ${p}sc1 * (${U8N} * (${part(4, tt)}) - 4.0 * xhi${tt})`,
        ),
      );
      return lines.join('\n');
    }
    default:
      throw new Error(`lowKChunkDot: not for ${t}`);
  }
}
