/**
 * The float path of mmv.ts's kernels, per weight type: the WGSL that multiplies one 32-weight chunk of a
 * row by the chunk's activations of every token ({@link chunkDot}: ggml's blocks as in the file, with
 * their 2-byte misalignment stitched; planar layouts, kernels/repack.ts), and what each type needs of
 * the kernel (binding type, Σx and half sums). Formulas: ggml-quants.c `dequantize_row_*`; see mmv.ts's
 * header for the unpacking and offset tricks. The float types, the 32-weight block types and IQ4 are
 * here, the K-quants in mmv-chunk-k.ts, the shared unpacking expressions in mmv-unpack.ts.
 */
import type { WeightType } from './common.ts';
import { stitched, U8N, u8x4, u8x4n } from './mmv-unpack.ts';
import { type ChunkCtx, DECODERS } from './quants/index.ts';

/** WGSL binding element type for a weight in this kernel. */
export function bindingType(t: WeightType, planar?: number): string {
  if (planar !== undefined) return 'array<vec4<u32>>';
  const d = DECODERS[t];
  if (d) return d.bindingType;
  switch (t) {
    case 'F32':
      return 'array<vec4<f32>>';
    case 'F16':
    case 'BF16':
      return 'array<vec4<u32>>';
    default:
      return 'array<u32>';
  }
}

/** Whether a type's chunk dot needs the chunk's Σx (offset or min folded out of the loop). */
export function needsXsum(t: WeightType): boolean {
  const d = DECODERS[t];
  if (d) return d.needsXsum;
  return t === 'Q4_1' || t === 'Q5_1' || t === 'Q4_0' || t === 'Q5_0' || t === 'Q8_0';
}

/**
 * Whether the float path of `t` needs the half sums `xlo{t}` = Σx[0..16) and `xhi{t}` = Σx[16..32) of
 * the chunk (Q6_K: its −32 offset applied as −32·Σx per 16-weight scale instead of per weight).
 */
export function needsXhalf(t: WeightType): boolean {
  const d = DECODERS[t];
  if (d) return d.needsXhalf;
  return false;
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
  const dec = DECODERS[t];
  if (dec) {
    const ctx: ChunkCtx = { w, K, p, packed, X, XS, sum };
    if (planar === undefined) return dec.chunkDot(ctx);
    if (!dec.planarChunkDot) throw new Error(`${t} has no planar layout`);
    return dec.planarChunkDot(ctx, planar);
  }
  if (planar !== undefined) throw new Error(`${t} has no planar layout`);
  const dot =
    t === 'F32' || t === 'F16' || t === 'BF16'
      ? floatChunkDot
      : t === 'IQ4_NL' || t === 'IQ4_XS'
        ? iq4ChunkDot
        : blockChunkDot;
  return dot(t, w, K, p, packed, X, XS, sum);
}

/** {@link chunkDot} of the float types (F32, F16, BF16). */
function floatChunkDot(
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
    default:
      throw new Error(`floatChunkDot: not for ${t}`);
  }
}

/** {@link chunkDot} of the 32-weight block types (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1). */
function blockChunkDot(
  t: WeightType,
  w: string,
  K: number,
  p: string,
  packed: boolean,
  X: (tt: number, j: number) => string,
  XS: (tt: number) => string,
  sum: (f: (tt: number) => string) => string,
): string {
  const NB = K / 32;
  switch (t) {
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
    default:
      throw new Error(`blockChunkDot: not for ${t}`);
  }
}

/** {@link chunkDot} of IQ4_NL and IQ4_XS (non-linear 4-bit grid). */
function iq4ChunkDot(
  t: WeightType,
  w: string,
  K: number,
  p: string,
  _packed: boolean,
  X: (tt: number, j: number) => string,
  _XS: (tt: number) => string,
  sum: (f: (tt: number) => string) => string,
): string {
  const NB = K / 32;
  switch (t) {
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
    default:
      throw new Error(`iq4ChunkDot: not for ${t}`);
  }
}
