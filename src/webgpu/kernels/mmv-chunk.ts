/**
 * The float path of mmv.ts's kernels, per weight type: the WGSL that multiplies one 32-weight chunk of a
 * row by the chunk's activations of every token ({@link chunkDot}: ggml's blocks as in the file, with
 * their 2-byte misalignment stitched; planar layouts, kernels/repack.ts), and what each type needs of
 * the kernel (binding type, Σx and half sums). Formulas: ggml-quants.c `dequantize_row_*`; see mmv.ts's
 * header for the unpacking and offset tricks.
 */
import type { WeightType } from './common.ts';

/** WGSL binding element type for a weight in this kernel. */
export function bindingType(t: WeightType, planar?: number): string {
  if (planar !== undefined) return 'array<vec4<u32>>';
  switch (t) {
    case 'F32':
      return 'array<vec4<f32>>';
    case 'F16':
    case 'BF16':
    case 'Q4_K':
      return 'array<vec4<u32>>';
    default:
      return 'array<u32>';
  }
}

/** Whether a type's chunk dot needs the chunk's Σx (offset or min folded out of the loop). */
export function needsXsum(t: WeightType): boolean {
  return (
    t === 'Q4_1' ||
    t === 'Q5_1' ||
    t === 'Q4_0' ||
    t === 'Q5_0' ||
    t === 'Q4_K' ||
    t === 'Q8_0' ||
    t === 'Q5_K'
  );
}

/**
 * Whether the float path of `t` needs the half sums `xlo{t}` = Σx[0..16) and `xhi{t}` = Σx[16..32) of
 * the chunk (Q6_K: its −32 offset applied as −32·Σx per 16-weight scale instead of per weight).
 */
export function needsXhalf(t: WeightType): boolean {
  return t === 'Q6_K' || t === 'Q3_K' || t === 'Q2_K';
}

/** WGSL expression: 4 bytes of `v` as vec4<f32>, unsigned. */
function u8x4(v: string, packed: boolean): string {
  return packed
    ? `vec4<f32>(unpack4xU8(${v}))`
    : `vec4<f32>((vec4<u32>(${v}) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u))`;
}

/**
 * WGSL expression: 4 bytes of `v` as vec4<f32> scaled by 1/255 (`unpack4x8unorm`, core WGSL): the
 * caller multiplies the chunk's dot product by 255 once ({@link U8N}). On SwiftShader it costs ~20% less
 * per weight than `unpack4xU8` and a conversion (bench-floor / the Q4_0 and Q6_K decode kernels); a value
 * n comes back as n·(1 ± 2⁻²³), well inside the float64 tests' tolerance.
 */
function u8x4n(v: string): string {
  return `unpack4x8unorm(${v})`;
}

/** The factor that undoes {@link u8x4n}'s 1/255. */
const U8N = '255.0';

/**
 * Statements loading `n` + 1 words from word `wi` of `w` as `${p}v0…` and the expression of stitched
 * word j: a block field 2 bytes past a word boundary when `${p}odd` (ggml's 2-byte-aligned blocks).
 */
function stitched(
  p: string,
  w: string,
  wi: string,
  n: number,
): { loads: string; word: (j: number) => string } {
  const loads = Array.from({ length: n + 1 }, (_, j) => `let ${p}v${j} = ${w}[${wi} + ${j}u];`).join('\n');
  return { loads, word: (j) => `select(${p}v${j}, (${p}v${j} >> 16u) | (${p}v${j + 1} << 16u), ${p}odd)` };
}

/**
 * Statements computing the dot product of chunk `c` of row `row` of weight `w` with the activations
 * `x{t}_{j}` (vec4, j = 0..7) of every token t < TT, into `let s{t}` … as `${p}s${t}`. `${xs(t)}` is Σx of
 * the chunk for token t (when {@link needsXsum}). K is the row length.
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
  const X = (tt: number, j: number) => `x${tt}_${j}`;
  const XS = (tt: number) => `xs${tt}`;
  const sum = (f: (tt: number) => string) => toks.map((tt) => `let ${p}s${tt} = ${f(tt)};`).join('\n');
  const NB = K / 32;
  if (planar !== undefined) return planarChunkDot(t, w, K, TT, p, packed, planar, X, XS, sum);
  switch (t) {
    case 'F32': {
      const loads = Array.from({ length: 8 }, (_, j) => `let ${p}w${j} = ${w}[${p}b + ${j}u];`).join(' ');
      return `let ${p}b = row * ${K / 4}u + c * 8u; ${loads}
${sum((tt) => Array.from({ length: 8 }, (_, j) => `dot(${p}w${j}, ${X(tt, j)})`).join(' + '))}`;
    }
    case 'F16':
    case 'BF16': {
      const cvt = (v: string) =>
        t === 'F16'
          ? `vec4<f32>(unpack2x16float(${v}.x), unpack2x16float(${v}.y))`
          : `bitcast<vec4<f32>>(vec4<u32>(${v}.x << 16u, ${v}.x & 0xffff0000u, ${v}.y << 16u, ${v}.y & 0xffff0000u))`;
      const cvt2 = (v: string) =>
        t === 'F16'
          ? `vec4<f32>(unpack2x16float(${v}.z), unpack2x16float(${v}.w))`
          : `bitcast<vec4<f32>>(vec4<u32>(${v}.z << 16u, ${v}.z & 0xffff0000u, ${v}.w << 16u, ${v}.w & 0xffff0000u))`;
      const lines = [`let ${p}b = row * ${K / 8}u + c * 4u;`];
      for (let j = 0; j < 4; j++) {
        lines.push(
          `let ${p}q${j} = ${w}[${p}b + ${j}u]; let ${p}w${2 * j} = ${cvt(`${p}q${j}`)}; let ${p}w${2 * j + 1} = ${cvt2(`${p}q${j}`)};`,
        );
      }
      lines.push(sum((tt) => Array.from({ length: 8 }, (_, j) => `dot(${p}w${j}, ${X(tt, j)})`).join(' + ')));
      return lines.join('\n');
    }
    case 'Q8_0': {
      // 34-byte blocks: the 32 int8 start at byte 34·bi + 2, 4-byte aligned for odd bi, else 2 past.
      const lines = [
        `let ${p}bi = row * ${NB}u + c; let ${p}o = ${p}bi * 34u + 2u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
        `let ${p}dw = unpack2x16float(${w}[select(${p}wi - 1u, ${p}wi, ${p}odd)]); let ${p}d = select(${p}dw.y, ${p}dw.x, ${p}odd);`,
      ];
      const q = stitched(p, w, `${p}wi`, 8);
      lines.push(q.loads);
      // int8 q as (q + 128) / 255 (u8x4n of the bytes with their sign bits flipped): Σq·x = 255·Σu·x − 128·Σx.
      for (let j = 0; j < 8; j++) lines.push(`let ${p}f${j} = ${u8x4n(`${q.word(j)} ^ 0x80808080u`)};`);
      lines.push(
        sum(
          (tt) =>
            `${p}d * (${U8N} * (${Array.from({ length: 8 }, (_, j) => `dot(${p}f${j}, ${X(tt, j)})`).join(' + ')}) - 128.0 * ${XS(tt)})`,
        ),
      );
      return lines.join('\n');
    }
    case 'Q4_0': {
      // 18-byte blocks: f16 d, then 16 bytes of nibbles (low: weights 0–15, high: 16–31).
      const lines = [
        `let ${p}bi = row * ${NB}u + c; let ${p}o = ${p}bi * 18u + 2u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
        `let ${p}dw = unpack2x16float(${w}[select(${p}wi - 1u, ${p}wi, ${p}odd)]); let ${p}d = select(${p}dw.y, ${p}dw.x, ${p}odd);`,
      ];
      const q = stitched(p, w, `${p}wi`, 4);
      lines.push(q.loads);
      for (let j = 0; j < 4; j++) {
        lines.push(
          `let ${p}q${j} = ${q.word(j)}; let ${p}lo${j} = ${u8x4n(`${p}q${j} & 0x0f0f0f0fu`)}; let ${p}hi${j} = ${u8x4n(`(${p}q${j} >> 4u) & 0x0f0f0f0fu`)};`,
        );
      }
      lines.push(
        sum(
          (tt) =>
            `${p}d * (${U8N} * (${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')}) - 8.0 * ${XS(tt)})`,
        ),
      );
      return lines.join('\n');
    }
    case 'Q5_0': {
      // 22-byte blocks: f16 d, u32 qh (fifth bits), 16 bytes of nibbles as Q4_0; w = d·(q − 16).
      const lines = [
        `let ${p}bi = row * ${NB}u + c; let ${p}o = ${p}bi * 22u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
      ];
      for (let j = 0; j <= 5; j++) lines.push(`let ${p}v${j} = ${w}[${p}wi + ${j}u];`);
      lines.push(
        `let ${p}dw = unpack2x16float(${p}v0); let ${p}d = select(${p}dw.x, ${p}dw.y, ${p}odd);`,
        `let ${p}qh = select((${p}v0 >> 16u) | (${p}v1 << 16u), ${p}v1, ${p}odd);`,
      );
      for (let j = 0; j < 4; j++) {
        const hl = `vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${4 * j}u, ${4 * j + 1}u, ${4 * j + 2}u, ${4 * j + 3}u)) & vec4<u32>(1u))`;
        const hh = `vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${16 + 4 * j}u, ${17 + 4 * j}u, ${18 + 4 * j}u, ${19 + 4 * j}u)) & vec4<u32>(1u))`;
        lines.push(
          `let ${p}q${j} = select((${p}v${j + 1} >> 16u) | (${p}v${j + 2} << 16u), ${p}v${j + 2}, ${p}odd);`,
          `let ${p}lo${j} = ${u8x4(`${p}q${j} & 0x0f0f0f0fu`, packed)} + 16.0 * ${hl};`,
          `let ${p}hi${j} = ${u8x4(`(${p}q${j} >> 4u) & 0x0f0f0f0fu`, packed)} + 16.0 * ${hh};`,
        );
      }
      lines.push(
        sum(
          (tt) =>
            `${p}d * (${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')} - 16.0 * ${XS(tt)})`,
        ),
      );
      return lines.join('\n');
    }
    case 'Q4_K': {
      // 144-byte blocks = 9 vec4<u32>: [d|dmin, scales 0–11], then 128 bytes of nibbles, sub-blocks j and
      // j+1 sharing 32 bytes (low and high nibbles).
      const lines = [
        `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}h = ${w}[${p}bi * 9u];`,
        `let ${p}dm = unpack2x16float(${p}h.x); let ${p}sm = q4kScaleMin(${p}h, ${p}j);`,
        `let ${p}ds = ${p}dm.x * ${p}sm.x; let ${p}mm = ${p}dm.y * ${p}sm.y; let ${p}sh = (${p}j & 1u) * 4u;`,
        `let ${p}qa = ${w}[${p}bi * 9u + 1u + (${p}j / 2u) * 2u]; let ${p}qb = ${w}[${p}bi * 9u + 2u + (${p}j / 2u) * 2u];`,
      ];
      const words = ['qa.x', 'qa.y', 'qa.z', 'qa.w', 'qb.x', 'qb.y', 'qb.z', 'qb.w'];
      words.forEach((wd, k) => {
        lines.push(`let ${p}f${k} = ${u8x4n(`(${p}${wd} >> ${p}sh) & 0x0f0f0f0fu`)};`);
      });
      lines.push(
        sum(
          (tt) =>
            `${p}ds * (${U8N} * (${words.map((_, k) => `dot(${p}f${k}, ${X(tt, k)})`).join(' + ')})) - ${p}mm * ${XS(tt)}`,
        ),
      );
      return lines.join('\n');
    }
    case 'Q6_K': {
      // 210-byte blocks: ql[128], qh[64], int8 scales[16], f16 d. Sub-block cc of 32: half h = cc/4,
      // k = cc%4: ql bytes h·64 + (k&1)·32 + l (nibble k/2), qh bytes 128 + h·32 + l (bits 2k), scales
      // h·8 + 2k (l < 16) and +1 (l ≥ 16).
      const lines = [
        `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;`,
        `let ${p}o = ${p}bi * 210u; let ${p}odd = (${p}o & 2u) != 0u;`,
        `let ${p}lw = (${p}o + ${p}hh * 64u + (${p}k & 1u) * 32u) >> 2u; let ${p}hw = (${p}o + 128u + ${p}hh * 32u) >> 2u;`,
        `let ${p}so = ${p}o + 192u + ${p}hh * 8u + ${p}k * 2u; let ${p}sw = ${w}[${p}so >> 2u] >> ((${p}so & 2u) * 8u);`,
        `let ${p}dd = unpack2x16float(${w}[(${p}o + 208u) >> 2u]); let ${p}d = select(${p}dd.x, ${p}dd.y, ${p}odd);`,
        `let ${p}sc0 = ${p}d * f32((bitcast<i32>(${p}sw) << 24u) >> 24u); let ${p}sc1 = ${p}d * f32((bitcast<i32>(${p}sw) << 16u) >> 24u);`,
        `let ${p}ls = (${p}k / 2u) * 4u; let ${p}hs = ${p}k * 2u;`,
      ];
      for (let j = 0; j <= 8; j++)
        lines.push(`let ${p}a${j} = ${w}[${p}lw + ${j}u]; let ${p}b${j} = ${w}[${p}hw + ${j}u];`);
      for (let j = 0; j < 8; j++) {
        const L = `select(${p}a${j}, (${p}a${j} >> 16u) | (${p}a${j + 1} << 16u), ${p}odd)`;
        const H = `select(${p}b${j}, (${p}b${j} >> 16u) | (${p}b${j + 1} << 16u), ${p}odd)`;
        lines.push(
          `let ${p}f${j} = ${u8x4n(`((${L} >> ${p}ls) & 0x0f0f0f0fu) | (((${H} >> ${p}hs) & 0x03030303u) << 4u)`)};`,
        );
      }
      const half = (from: number, tt: number) =>
        Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
      // q − 32 through the chunk's half sums: Σ(q − 32)·x = Σq·x − 32·Σx per 16-weight scale.
      lines.push(
        sum(
          (tt) =>
            `${p}sc0 * (${U8N} * (${half(0, tt)}) - 32.0 * xlo${tt}) + ${p}sc1 * (${U8N} * (${half(4, tt)}) - 32.0 * xhi${tt})`,
        ),
      );
      return lines.join('\n');
    }
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
    case 'Q4_1':
    case 'Q5_1': {
      // 20- / 24-byte blocks, 4-byte aligned: word 0 = f16 d | f16 m, [Q5_1: word 1 = qh], then 4 words
      // of nibbles as Q4_0; w = d·q + m, so Σw·x = d·Σq·x + m·Σx.
      const q5 = t === 'Q5_1';
      const lines = [
        `let ${p}wi = (row * ${NB}u + c) * ${q5 ? 6 : 5}u; let ${p}dm = unpack2x16float(${w}[${p}wi]);`,
      ];
      if (q5) lines.push(`let ${p}qh = ${w}[${p}wi + 1u];`);
      const un = (v: string) => (q5 ? u8x4(v, packed) : u8x4n(v));
      const bits = (from: number) =>
        q5
          ? ` + 16.0 * vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${from}u, ${from + 1}u, ${from + 2}u, ${from + 3}u)) & vec4<u32>(1u))`
          : '';
      for (let j = 0; j < 4; j++) {
        lines.push(
          `let ${p}q${j} = ${w}[${p}wi + ${(q5 ? 2 : 1) + j}u];`,
          `let ${p}lo${j} = ${un(`${p}q${j} & 0x0f0f0f0fu`)}${bits(4 * j)};`,
          `let ${p}hi${j} = ${un(`(${p}q${j} >> 4u) & 0x0f0f0f0fu`)}${bits(16 + 4 * j)};`,
        );
      }
      lines.push(
        sum(
          (tt) =>
            `${p}dm.x * (${q5 ? '' : `${U8N} * `}(${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')})) + ${p}dm.y * ${XS(tt)}`,
        ),
      );
      return lines.join('\n');
    }
    case 'IQ4_NL':
    case 'IQ4_XS': {
      // IQ4_NL: 18-byte blocks as Q4_0 (f16 d, 16 bytes of nibbles, 2 bytes off a word boundary for odd
      // blocks). IQ4_XS: 136-byte blocks (8-byte aligned), word 0 = f16 d | u16 scales_h, word 1 =
      // scales_l, sub-block s's 16 bytes at word 2 + 4s; scale d·(ls − 32). w = scale·kvalues[q].
      const lines: string[] = [];
      let word: (j: number) => string;
      if (t === 'IQ4_NL') {
        lines.push(
          `let ${p}bi = row * ${NB}u + c; let ${p}o = ${p}bi * 18u + 2u; let ${p}wi = ${p}o >> 2u; let ${p}odd = (${p}o & 2u) != 0u;`,
          `let ${p}dw = unpack2x16float(${w}[select(${p}wi - 1u, ${p}wi, ${p}odd)]); let ${p}d = select(${p}dw.y, ${p}dw.x, ${p}odd);`,
        );
        const q = stitched(p, w, `${p}wi`, 4);
        lines.push(q.loads);
        word = q.word;
      } else {
        lines.push(
          `let ${p}bw = (row * ${K / 256}u + c / 8u) * 34u; let ${p}s = c % 8u; let ${p}h = ${w}[${p}bw];`,
          `let ${p}ls = ((${w}[${p}bw + 1u] >> (4u * ${p}s)) & 0xfu) | (((${p}h >> (16u + 2u * ${p}s)) & 3u) << 4u);`,
          `let ${p}d = unpack2x16float(${p}h).x * f32(i32(${p}ls) - 32);`,
        );
        for (let j = 0; j < 4; j++) lines.push(`let ${p}v${j} = ${w}[${p}bw + 2u + 4u * ${p}s + ${j}u];`);
        word = (j) => `${p}v${j}`;
      }
      const kv = (v: string, sh: number[]) =>
        `vec4<f32>(${sh.map((s) => `KVIQ4[(${v} >> ${s}u) & 0xfu]`).join(', ')})`;
      for (let j = 0; j < 4; j++) {
        lines.push(
          `let ${p}q${j} = ${word(j)}; let ${p}lo${j} = ${kv(`${p}q${j}`, [0, 8, 16, 24])}; let ${p}hi${j} = ${kv(`${p}q${j}`, [4, 12, 20, 28])};`,
        );
      }
      lines.push(
        sum(
          (tt) =>
            `${p}d * (${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')})`,
        ),
      );
      return lines.join('\n');
    }
  }
}

/**
 * {@link chunkDot} for weights repacked into planes (kernels/repack.ts) of `nB` blocks, bound as
 * `array<vec4<u32>>`: quants in whole aligned `vec4`s, the f16 `d` (and Q5_0's qh, Q6_K's scales) from
 * their planes.
 */
function planarChunkDot(
  t: WeightType,
  w: string,
  K: number,
  _TT: number,
  p: string,
  packed: boolean,
  nB: number,
  X: (tt: number, j: number) => string,
  XS: (tt: number) => string,
  sum: (f: (tt: number) => string) => string,
): string {
  // The 16-bit value at byte offset D of the binding, into `${p}${name}W` (low 16 bits).
  const half = (D: string, name: string) =>
    `let ${p}${name}D = ${D}; let ${p}${name}W = ${w}[${p}${name}D >> 4u][(${p}${name}D >> 2u) & 3u] >> (((${p}${name}D >> 1u) & 1u) * 16u);`;
  const NB = K / 32;
  switch (t) {
    case 'Q8_0': {
      const lines = [
        `let ${p}bi = row * ${NB}u + c; let ${p}qa = ${w}[2u * ${p}bi]; let ${p}qb = ${w}[2u * ${p}bi + 1u];`,
        half(`${32 * nB}u + 2u * ${p}bi`, 'd'),
        `let ${p}d = unpack2x16float(${p}dW).x;`,
      ];
      const words = ['qa.x', 'qa.y', 'qa.z', 'qa.w', 'qb.x', 'qb.y', 'qb.z', 'qb.w'];
      // As the raw layout: (q + 128) / 255 per byte, Σq·x = 255·Σu·x − 128·Σx.
      words.forEach((wd, j) => {
        lines.push(`let ${p}f${j} = ${u8x4n(`${p}${wd} ^ 0x80808080u`)};`);
      });
      lines.push(
        sum(
          (tt) =>
            `${p}d * (${U8N} * (${words.map((_, j) => `dot(${p}f${j}, ${X(tt, j)})`).join(' + ')}) - 128.0 * ${XS(tt)})`,
        ),
      );
      return lines.join('\n');
    }
    case 'Q4_0':
    case 'Q5_0': {
      const q5 = t === 'Q5_0';
      const lines = [
        `let ${p}bi = row * ${NB}u + c; let ${p}q = ${w}[${p}bi];`,
        half(`${(q5 ? 20 : 16) * nB}u + 2u * ${p}bi`, 'd'),
        `let ${p}d = unpack2x16float(${p}dW).x;`,
      ];
      if (q5) lines.push(`let ${p}qh = ${w}[${nB}u + (${p}bi >> 2u)][${p}bi & 3u];`);
      const un = (v: string) => (q5 ? u8x4(v, packed) : u8x4n(v));
      const comps = ['x', 'y', 'z', 'w'];
      for (let j = 0; j < 4; j++) {
        const bits = (from: number) =>
          q5
            ? ` + 16.0 * vec4<f32>((vec4<u32>(${p}qh) >> vec4<u32>(${from}u, ${from + 1}u, ${from + 2}u, ${from + 3}u)) & vec4<u32>(1u))`
            : '';
        lines.push(
          `let ${p}lo${j} = ${un(`${p}q.${comps[j]} & 0x0f0f0f0fu`)}${bits(4 * j)};`,
          `let ${p}hi${j} = ${un(`(${p}q.${comps[j]} >> 4u) & 0x0f0f0f0fu`)}${bits(16 + 4 * j)};`,
        );
      }
      // Q4_0 unpacks with u8x4n (×1/255, undone once per chunk); Q5_0 adds its fifth bits to whole values.
      lines.push(
        sum(
          (tt) =>
            `${p}d * (${q5 ? '' : `${U8N} * `}(${Array.from({ length: 4 }, (_, j) => `dot(${p}lo${j}, ${X(tt, j)}) + dot(${p}hi${j}, ${X(tt, j + 4)})`).join(' + ')}) - ${q5 ? '16.0' : '8.0'} * ${XS(tt)})`,
        ),
      );
      return lines.join('\n');
    }
    case 'Q4_K': {
      // Planes (repack.ts): sub-block j's 16 bytes in Q4_0's order, its scale and min as bytes, (d, dmin).
      const lines = [
        `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}q = ${w}[${p}bi * 8u + ${p}j];`,
        `let ${p}smw = ${w}[${8 * nB}u + ${p}bi][${p}j / 2u] >> ((${p}j & 1u) * 16u);`,
        `let ${p}dm = unpack2x16float(${w}[${9 * nB}u + (${p}bi >> 2u)][${p}bi & 3u]);`,
        `let ${p}ds = ${p}dm.x * f32(${p}smw & 0xffu); let ${p}mm = ${p}dm.y * f32((${p}smw >> 8u) & 0xffu);`,
      ];
      const comps = ['x', 'y', 'z', 'w'];
      for (let j = 0; j < 4; j++) {
        lines.push(
          `let ${p}lo${j} = ${u8x4n(`${p}q.${comps[j]} & 0x0f0f0f0fu`)}; let ${p}hi${j} = ${u8x4n(`(${p}q.${comps[j]} >> 4u) & 0x0f0f0f0fu`)};`,
        );
      }
      // Summed in the raw layout's order (weights 0–31 by fours), so both give the same f32 results.
      const terms = (tt: number) =>
        [0, 1, 2, 3]
          .map((j) => `dot(${p}lo${j}, ${X(tt, j)})`)
          .concat([0, 1, 2, 3].map((j) => `dot(${p}hi${j}, ${X(tt, j + 4)})`));
      lines.push(sum((tt) => `${p}ds * (${U8N} * (${terms(tt).join(' + ')})) - ${p}mm * ${XS(tt)}`));
      return lines.join('\n');
    }
    case 'Q6_K': {
      const lines = [
        `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;`,
        `let ${p}lv = ${p}bi * 8u + ${p}hh * 4u + (${p}k & 1u) * 2u; let ${p}la = ${w}[${p}lv]; let ${p}lb = ${w}[${p}lv + 1u];`,
        `let ${p}hv = ${8 * nB}u + ${p}bi * 4u + ${p}hh * 2u; let ${p}ha = ${w}[${p}hv]; let ${p}hb = ${w}[${p}hv + 1u];`,
        `let ${p}sw = ${w}[${12 * nB}u + ${p}bi][${p}hh * 2u + ${p}k / 2u] >> ((${p}k & 1u) * 16u);`,
        half(`${208 * nB}u + 2u * ${p}bi`, 'd'),
        `let ${p}d = unpack2x16float(${p}dW).x;`,
        `let ${p}sc0 = ${p}d * f32((bitcast<i32>(${p}sw) << 24u) >> 24u); let ${p}sc1 = ${p}d * f32((bitcast<i32>(${p}sw) << 16u) >> 24u);`,
        `let ${p}ls = (${p}k / 2u) * 4u; let ${p}hs = ${p}k * 2u;`,
      ];
      const L = ['la.x', 'la.y', 'la.z', 'la.w', 'lb.x', 'lb.y', 'lb.z', 'lb.w'];
      const H = ['ha.x', 'ha.y', 'ha.z', 'ha.w', 'hb.x', 'hb.y', 'hb.z', 'hb.w'];
      for (let j = 0; j < 8; j++) {
        lines.push(
          `let ${p}f${j} = ${u8x4n(`((${p}${L[j]} >> ${p}ls) & 0x0f0f0f0fu) | (((${p}${H[j]} >> ${p}hs) & 0x03030303u) << 4u)`)};`,
        );
      }
      const part = (from: number, tt: number) =>
        Array.from({ length: 4 }, (_, j) => `dot(${p}f${from + j}, ${X(tt, from + j)})`).join(' + ');
      lines.push(
        sum(
          (tt) =>
            `${p}sc0 * (${U8N} * (${part(0, tt)}) - 32.0 * xlo${tt}) + ${p}sc1 * (${U8N} * (${part(4, tt)}) - 32.0 * xhi${tt})`,
        ),
      );
      return lines.join('\n');
    }
    default:
      throw new Error(`${t} has no planar layout`);
  }
}

/** Q4_K's 6-bit scale and min of sub-block j from the header vec4 (ggml's get_scale_min_k4). */
export const Q4K_SCALE_MIN = `fn scByte(h: vec4<u32>, k: u32) -> u32 {
  let wd = select(select(h.w, h.z, k < 8u), h.y, k < 4u);
  return (wd >> ((k & 3u) * 8u)) & 0xffu;
}
fn q4kScaleMin(h: vec4<u32>, j: u32) -> vec2<f32> {
  if (j < 4u) { return vec2<f32>(f32(scByte(h, j) & 63u), f32(scByte(h, j + 4u) & 63u)); }
  let a = scByte(h, j + 4u);
  return vec2<f32>(f32((a & 0xfu) | ((scByte(h, j - 4u) >> 6u) << 4u)), f32((a >> 4u) | ((scByte(h, j) >> 6u) << 4u)));
}`;
