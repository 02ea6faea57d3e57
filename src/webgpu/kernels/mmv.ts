/**
 * Matrix × vector kernels for decode (T = 1..4 tokens): y = W·x, optionally of RMSNorm(x), with the same
 * segments, epilogues and binding order as {@link matmulWGSL} (so one bind group serves either).
 *
 * Shapes (ggml order): x [T, K] f32, W [K, N] (N rows of K weights), y per the epilogue.
 *
 * Work is cut in 32-weight chunks along K (one Q4_0/Q8_0/Q5_0 block, one Q4_K/Q6_K sub-block, 32 floats):
 * - A *lane group* of `lanes` adjacent threads computes `units` output units (each 1–2 rows: a RoPE pair,
 *   gate and up) for all `TT` tokens; lane l takes chunks l, l + lanes, … so the lanes of a group read
 *   consecutive chunks of the same rows (coalesced on GPUs). `lanes` = 1 is a thread per group of rows,
 *   with no reduction and no barrier at all (what software adapters such as SwiftShader want).
 * - The 32 activations of a chunk are loaded once per token as 8 `vec4<f32>` and reused for every row
 *   of the group (x·gnorm applied once per chunk; the RMSNorm's 1/rms is one scalar per token, applied to
 *   the finished dot products, and its sum of squares is accumulated from the same loads: no extra pass
 *   over x, no per-workgroup norm).
 * - Weights are read as whole words: `vec4<f32>` (F32), `vec4<u32>` (F16, BF16, Q4_K, whose 144-byte
 *   blocks are 16-byte aligned; every type's planes, kernels/repack.ts, which the engine loads by default:
 *   a planar Q4_K chunk is one vec4 of nibbles in Q4_0's order plus its scale/min bytes and d/dmin),
 *   or `u32` with the block's 2-byte misalignment resolved once per block
 *   (Q4_0, Q8_0, Q5_0, Q6_K: 18/34/22/210-byte blocks). Nibbles and bytes are unpacked four at a time
 *   with `unpack4x8unorm` (n/255, the 255 applied once per chunk; Q8_0's int8 with their sign bits
 *   flipped, q + 128), which SwiftShader runs in 1/1.2–1/1.7 the time of `unpack4xU8`/`unpack4xI8` and a
 *   conversion (Q5_0 keeps `unpack4xU8`, or shifts and masks without the WGSL language feature
 *   `packed_4x8_integer_dot_product`); scales and mins are applied once per chunk, and the offsets
 *   (Q4_0's −8, Q5_0's −16, Q6_K's −32, Q8_0's −128 of the flipped bytes, Q4_K's min) through the chunk's
 *   sums of activations (d·Σq·x − 8·d·Σx), as llama.cpp's mul_mat_vec does.
 * - Partial sums of a lane group are combined with `subgroupShuffleXor` (needs the `subgroups` feature
 *   and lanes ≤ the adapter's subgroupMinSize) or through workgroup memory (the fallback).
 *
 * Q4_1 and Q5_1 (aligned 20/24-byte blocks) fold their min m in as m·Σx; IQ4_NL and IQ4_XS (float
 * path only) look each nibble up in kvalues_iq4nl (a WGSL const array), IQ4_XS applying its sub-block's
 * 6-bit scale once per chunk.
 *
 * Q5_K (176-byte blocks, word-aligned: Q4_K's header and nibbles plus a fifth bit from qh), Q2_K (84,
 * word-aligned: 2-bit quants, a 4-bit scale and min per 16 weights folded in through the chunk's half
 * sums) and Q3_K (110, stitched as Q6_K: 2 bits from qs and the high bit from hmask, q − 4 and a 6-bit
 * scale per 16 weights through the half sums) are float path only (`dequantize_row_q5_K/q2_K/q3_K`).
 *
 * Block formats: ggml-common.h (see common.ts). Dequantization formulas: ggml-quants.c
 * `dequantize_row_q4_0/q8_0/q5_0/q4_K/q6_K/q4_1/q5_1/iq4_nl/iq4_xs`.
 *
 * Needs K to be a multiple of 32 (every quantized row is; float rows that are not use {@link matmulWGSL}'s
 * decode variants: {@link mmvSupports}).
 */
import { f32Lit, iq4KvaluesWgsl, STEP_WGSL, type WeightType } from './common.ts';
import { extraBindings, type MatmulOptions, segmentRanges, weightVar } from './matmul.ts';

/** How a {@link mmvWGSL} kernel spreads work over threads. */
export interface MmvLayout {
  /** Adjacent threads sharing one group of units along K: 1, 2, 4, 8, 16 or 32. */
  lanes: number;
  /**
   * Output units per lane group (1–4, or 8 with lanes 1 and no intDot: the software adapters' prefill,
   * where each unit more shares a thread's activation loads and subgroup broadcasts once more).
   */
  units: number;
  /** Threads per workgroup (a multiple of `lanes`). */
  threads: number;
  /** How lanes' partial sums are combined when lanes > 1. */
  reduce: 'subgroup' | 'shared';
  /** Unpack with `unpack4xU8`/`unpack4xI8` (WGSL language feature packed_4x8_integer_dot_product). */
  packed: boolean;
  /**
   * Integer dot products (needs `packed`): each 32-activation chunk is rounded to int8 with one scale
   * (amax / 127, as ggml's quantize_row_q8_0) and Q8_0, Q4_0 and Q6_K (planar), Q4_K, and Q5_K, Q3_K,
   * Q2_K (raw) weights are multiplied with `dot4I8Packed`, llama.cpp's MMVQ scheme (its CPU path rounds
   * activations the same way).
   * Other types keep the float path in the same kernel.
   */
  intDot?: boolean;
  /**
   * Activations shared through subgroups: S (2, 4 or 8), on an adapter whose subgroups all have exactly S
   * invocations (subgroupMinSize = subgroupMaxSize = S) and with `lanes` 1 and `threads` a multiple of S.
   * Every thread of a workgroup multiplies the same activations by different rows, so each of a
   * subgroup's S threads loads 8/S of a chunk's 8 vec4 per token and takes the rest from the others with
   * `subgroupBroadcast`. On SwiftShader a storage load is a gather with bounds checks per invocation and a
   * broadcast a register shuffle: the 60M model's prefill matmuls (8 tokens × 4 rows per thread) read
   * their activations for about half their time; sharing them took its Q4_K gate+up matmul from 80 to
   * 54 ms and its down matmul from 53 to 31 ms per 64 tokens (SwiftShader in Node, 2026-12-02), and the
   * model's prefill from ~31 to ~47 tok/s (BENCHMARKS.md).
   */
  shareX?: number;
}

/**
 * Options for {@link mmvWGSL}: those of matmulWGSL (K a multiple of 32; TT = tokens per workgroup row,
 * 1–4 for decode, up to 16 for the software adapters' prefill, the dispatch's y covering ceil(T / TT)),
 * plus the layout.
 */
export interface MmvOptions extends MatmulOptions {
  layout: MmvLayout;
}

/**
 * What is wrong with a layout, or undefined when {@link mmvWGSL} takes it: lanes 1, 2, 4, 8, 16 or 32;
 * units 1–4, or 8 with lanes 1 and no intDot (the tested values); threads a multiple of lanes, 1–256 (WebGPU's default maxComputeInvocationsPerWorkgroup);
 * reduce 'subgroup' or 'shared'; intDot only with packed.
 */
export function mmvLayoutProblem(l: MmvLayout): string | undefined {
  if (![1, 2, 4, 8, 16, 32].includes(l.lanes)) return `lanes must be 1, 2, 4, 8, 16 or 32 (got ${l.lanes})`;
  const eight = l.units === 8 && l.lanes === 1 && !l.intDot;
  if (!Number.isInteger(l.units) || l.units < 1 || (l.units > 4 && !eight))
    return `units must be 1–4, or 8 with lanes 1 and no intDot (got ${l.units})`;
  if (!Number.isInteger(l.threads) || l.threads < 1 || l.threads > 256 || l.threads % l.lanes !== 0)
    return `threads must be a multiple of lanes, at most 256 (got ${l.threads})`;
  if (l.reduce !== 'subgroup' && l.reduce !== 'shared')
    return `reduce must be 'subgroup' or 'shared' (got ${l.reduce})`;
  if (l.intDot && !l.packed) return 'intDot needs packed';
  if (l.shareX !== undefined) {
    if (![2, 4, 8].includes(l.shareX)) return `shareX must be 2, 4 or 8 (got ${l.shareX})`;
    if (l.lanes !== 1) return `shareX needs lanes 1 (got ${l.lanes})`;
    if (l.threads % l.shareX !== 0)
      return `shareX needs threads a multiple of ${l.shareX} (got ${l.threads})`;
  }
  return undefined;
}

/** True when {@link mmvWGSL} can run rows of K weights of these types (K a multiple of 32). */
export function mmvSupports(K: number, types: readonly WeightType[]): boolean {
  return K % 32 === 0 && types.length > 0;
}

/** Units covered by one workgroup. */
function unitsPerWorkgroup(l: MmvLayout): number {
  return (l.threads / l.lanes) * l.units;
}

/** Workgroups along x for {@link mmvWGSL} with these segments and layout. */
export function mmvWorkgroupsX(segments: readonly { nUnits: number }[], layout: MmvLayout): number {
  return segmentRanges(segments, unitsPerWorkgroup(layout)).at(-1)?.end ?? 0;
}

/** WGSL binding element type for a weight in this kernel. */
function bindingType(t: WeightType, planar?: number): string {
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
function needsXsum(t: WeightType): boolean {
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
function needsXhalf(t: WeightType): boolean {
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
function chunkDot(
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

/**
 * Whether the integer-dot path covers this weight (planar Q8_0, Q4_0, Q6_K; Q4_K raw or planar; raw
 * Q5_K, Q3_K, Q2_K).
 */
function usesIntDot(w: { type: WeightType; planar?: number }): boolean {
  if (w.planar === undefined && (w.type === 'Q5_K' || w.type === 'Q3_K' || w.type === 'Q2_K')) return true;
  return w.type === 'Q4_K' || (w.planar !== undefined && ['Q8_0', 'Q4_0', 'Q6_K'].includes(w.type));
}

/**
 * The integer-dot chunk product (see {@link MmvLayout.intDot}) against the int8 activations `q{t}_{j}`
 * (scale `dx{t}`, half sums `qlo{t}`, `qhi{t}`), into `${p}s${t}`.
 */
function intChunkDot(t: WeightType, w: string, K: number, TT: number, p: string, planar?: number): string {
  const toks = Array.from({ length: TT }, (_, i) => i);
  const sum = (f: (tt: number) => string) => toks.map((tt) => `let ${p}s${tt} = ${f(tt)};`).join('\n');
  const Q = (tt: number, j: number) => `q${tt}_${j}`;
  const dots = (words: string[], tt: number, from = 0) =>
    words.map((wd, j) => `dot4I8Packed(${wd}, ${Q(tt, from + j)})`).join(' + ');
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
    case 'Q4_K': {
      if (planar !== undefined) {
        const c4 = ['x', 'y', 'z', 'w'];
        const lo = c4.map((c) => `(${p}q.${c} & 0x0f0f0f0fu)`);
        const hi = c4.map((c) => `((${p}q.${c} >> 4u) & 0x0f0f0f0fu)`);
        return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}q = ${w}[${p}bi * 8u + ${p}j];
let ${p}smw = ${w}[${8 * nB}u + ${p}bi][${p}j / 2u] >> ((${p}j & 1u) * 16u);
let ${p}dm = unpack2x16float(${w}[${9 * nB}u + (${p}bi >> 2u)][${p}bi & 3u]);
let ${p}ds = ${p}dm.x * f32(${p}smw & 0xffu); let ${p}mm = ${p}dm.y * f32((${p}smw >> 8u) & 0xffu);
${sum((tt) => `dx${tt} * (${p}ds * f32(${dots(lo, tt)} + ${dots(hi, tt, 4)}) - ${p}mm * f32(qlo${tt} + qhi${tt}))`)}`;
      }
      const words = ['qa.x', 'qa.y', 'qa.z', 'qa.w', 'qb.x', 'qb.y', 'qb.z', 'qb.w'].map(
        (x) => `((${p}${x} >> ${p}sh) & 0x0f0f0f0fu)`,
      );
      return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}j = c % 8u; let ${p}h = ${w}[${p}bi * 9u];
let ${p}dm = unpack2x16float(${p}h.x); let ${p}sm = q4kScaleMin(${p}h, ${p}j);
let ${p}ds = ${p}dm.x * ${p}sm.x; let ${p}mm = ${p}dm.y * ${p}sm.y; let ${p}sh = (${p}j & 1u) * 4u;
let ${p}qa = ${w}[${p}bi * 9u + 1u + (${p}j / 2u) * 2u]; let ${p}qb = ${w}[${p}bi * 9u + 2u + (${p}j / 2u) * 2u];
${sum((tt) => `dx${tt} * (${p}ds * f32(${dots(words, tt)}) - ${p}mm * f32(qlo${tt} + qhi${tt}))`)}`;
    }
    case 'Q6_K': {
      const L = ['la.x', 'la.y', 'la.z', 'la.w', 'lb.x', 'lb.y', 'lb.z', 'lb.w'];
      const H = ['ha.x', 'ha.y', 'ha.z', 'ha.w', 'hb.x', 'hb.y', 'hb.z', 'hb.w'];
      const words = L.map(
        (l, j) => `(((${p}${l} >> ${p}ls) & 0x0f0f0f0fu) | (((${p}${H[j]} >> ${p}hs) & 0x03030303u) << 4u))`,
      );
      return `let ${p}bi = row * ${K / 256}u + c / 8u; let ${p}cc = c % 8u; let ${p}hh = ${p}cc / 4u; let ${p}k = ${p}cc % 4u;
let ${p}lv = ${p}bi * 8u + ${p}hh * 4u + (${p}k & 1u) * 2u; let ${p}la = ${w}[${p}lv]; let ${p}lb = ${w}[${p}lv + 1u];
let ${p}hv = ${8 * nB}u + ${p}bi * 4u + ${p}hh * 2u; let ${p}ha = ${w}[${p}hv]; let ${p}hb = ${w}[${p}hv + 1u];
let ${p}sw = ${w}[${12 * nB}u + ${p}bi][${p}hh * 2u + ${p}k / 2u] >> ((${p}k & 1u) * 16u);
${half(`${208 * nB}u + 2u * ${p}bi`)}
let ${p}sc0 = f32((bitcast<i32>(${p}sw) << 24u) >> 24u); let ${p}sc1 = f32((bitcast<i32>(${p}sw) << 16u) >> 24u);
let ${p}ls = (${p}k / 2u) * 4u; let ${p}hs = ${p}k * 2u;
${sum((tt) => `${p}d * dx${tt} * (${p}sc0 * f32(${dots(words.slice(0, 4), tt)} - 32 * qlo${tt}) + ${p}sc1 * f32(${dots(words.slice(4), tt, 4)} - 32 * qhi${tt}))`)}`;
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
      // As chunkDot's Q3_K (110-byte blocks stitched across words): q − 4 with a 6-bit scale per 16.
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

/** Q4_K's 6-bit scale and min of sub-block j from the header vec4 (ggml's get_scale_min_k4). */
const Q4K_SCALE_MIN = `fn scByte(h: vec4<u32>, k: u32) -> u32 {
  let wd = select(select(h.w, h.z, k < 8u), h.y, k < 4u);
  return (wd >> ((k & 3u) * 8u)) & 0xffu;
}
fn q4kScaleMin(h: vec4<u32>, j: u32) -> vec2<f32> {
  if (j < 4u) { return vec2<f32>(f32(scByte(h, j) & 63u), f32(scByte(h, j + 4u) & 63u)); }
  let a = scByte(h, j + 4u);
  return vec2<f32>(f32((a & 0xfu) | ((scByte(h, j - 4u) >> 6u) << 4u)), f32((a >> 4u) | ((scByte(h, j) >> 6u) << 4u)));
}`;

/**
 * The kernel's WGSL. Bindings as {@link matmulWGSL}: 0 step, 1 x, [2 gnorm], each segment's weights in
 * order, then `extra`. Dispatch ({@link mmvWorkgroupsX}, ceil(T / TT)); T ≤ step.nTokens rows of x.
 */
export function mmvWGSL(o: MmvOptions): string {
  const { K, TT, layout: L } = o;
  if (K % 32 !== 0) throw new Error(`mmvWGSL needs K to be a multiple of 32 (got ${K})`);
  if (TT < 1 || TT > 16) throw new Error(`mmvWGSL computes 1–16 tokens per workgroup (got ${TT})`);
  const problem = mmvLayoutProblem(L);
  if (problem) throw new Error(`bad mmv layout ${JSON.stringify(L)}: ${problem}`);
  const NC = K / 32;
  const sg = L.lanes > 1 && L.reduce === 'subgroup';
  const toks = Array.from({ length: TT }, (_, i) => i);
  const maxDots = Math.max(...o.segments.map((s) => s.dots.length));
  const types = o.segments.flatMap((s) => s.weights.map((w) => w.type));
  const xsum = types.some(needsXsum);
  const intOf = (w: { type: WeightType; planar?: number }) => Boolean(L.intDot && L.packed && usesIntDot(w));
  const anyInt = o.segments.some((s) => s.weights.some(intOf));
  const xhalf = o.segments.some((s) => s.weights.some((w) => needsXhalf(w.type) && !intOf(w)));
  const normF32 = o.norm?.type === 'F32';
  const lines: string[] = [];
  const S = L.shareX ?? 0;
  if (sg || S) lines.push('enable subgroups;');
  lines.push(STEP_WGSL);
  let b = 0;
  lines.push(`@group(0) @binding(${b++}) var<uniform> step: Step;`);
  lines.push(`@group(0) @binding(${b++}) var<storage, read> x: array<vec4<f32>>;`);
  if (o.norm) {
    lines.push(
      `@group(0) @binding(${b++}) var<storage, read> gnorm: ${normF32 ? 'array<vec4<f32>>' : 'array<u32>'};`,
    );
  }
  o.segments.forEach((s, si) => {
    s.weights.forEach((w, wi) => {
      lines.push(
        `@group(0) @binding(${b++}) var<storage, read> ${weightVar(s, si, wi)}: ${bindingType(w.type, w.planar)};`,
      );
    });
  });
  for (const e of extraBindings(o)) lines.push(`@group(0) @binding(${b++}) ${e};`);
  if (types.includes('Q4_K') || types.includes('Q5_K')) lines.push(Q4K_SCALE_MIN);
  if (types.includes('IQ4_NL') || types.includes('IQ4_XS')) lines.push(iq4KvaluesWgsl('KVIQ4'));
  if (o.norm && !normF32) {
    // F16 / BF16 norm weights: four at a time from two words.
    const cv =
      o.norm.type === 'F16'
        ? (a: string) => `unpack2x16float(${a})`
        : (a: string) => `bitcast<vec2<f32>>(vec2<u32>(${a} << 16u, ${a} & 0xffff0000u))`;
    lines.push(
      `fn gnorm4(i: u32) -> vec4<f32> { return vec4<f32>(${cv('gnorm[2u * i]')}, ${cv('gnorm[2u * i + 1u]')}); }`,
    );
  }
  const W = L.threads;
  const per = unitsPerWorkgroup(L);
  const R = L.units;
  const nAcc = R * maxDots * TT;
  if (L.lanes > 1 && !sg) {
    lines.push(`var<workgroup> red: array<f32, ${W * (nAcc + (o.norm ? TT : 0))}>;`);
  }
  lines.push(`
const K: u32 = ${K}u;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32${S ? ', @builtin(subgroup_invocation_id) sl: u32' : ''}) {
  let lane = lid % ${L.lanes}u;
  let grp = lid / ${L.lanes}u;
  let t0 = ${o.lastTokenOnly ? '0u' : `wg.y * ${TT}u`};
  let nT = ${o.lastTokenOnly ? '1u' : 'step.nTokens'};
  let xrow0 = ${o.lastTokenOnly ? 'step.nTokens - 1u' : 't0'};`);
  // Rows of x for each token (clamped to the last token: a partial token group computes duplicates,
  // never stored).
  for (const tt of toks) lines.push(`  let xr${tt} = min(xrow0 + ${tt}u, xrow0 + nT - 1u - t0) * ${K / 4}u;`);
  const rg = segmentRanges(o.segments, per);
  lines.push('  var seg = 0u;\n  var ub = 0u;');
  rg.forEach((r, i) => {
    lines.push(
      `  ${i ? 'else ' : ''}if (wg.x < ${r.end}u) { seg = ${i}u; ub = (wg.x - ${r.start}u) * ${per}u + grp * ${R}u; }`,
    );
  });
  const acc = (r: number, d: number, tt: number) => `a${r}_${d}_${tt}`;
  for (let r = 0; r < R; r++)
    for (let d = 0; d < maxDots; d++) for (const tt of toks) lines.push(`  var ${acc(r, d, tt)} = 0.0;`);
  if (o.norm) for (const tt of toks) lines.push(`  var ss${tt} = 0.0;`);
  // With one lane per group, c is the same in every thread (a uniform loop: shareX's broadcasts need it).
  lines.push(`  for (var c = ${L.lanes === 1 ? '0u' : 'lane'}; c < ${NC}u; c += ${L.lanes}u) {`);
  // The chunk's activations as immutable values (a mutable `var` per activation costs a memory slot per
  // invocation on SwiftShader's code generator): raw loads, their squares for the norm, then × gnorm.
  const raw = o.norm ? 'r' : '';
  for (const tt of toks) {
    if (S) {
      // Thread sl of the subgroup loads vec4 j = sl, sl + S, …; vec4 j comes from thread j % S.
      for (let m = 0; m < 8 / S; m++)
        lines.push(`    let xm${tt}_${m} = x[xr${tt} + c * 8u + sl + ${m * S}u];`);
      for (let j = 0; j < 8; j++)
        lines.push(`    let x${raw}${tt}_${j} = subgroupBroadcast(xm${tt}_${Math.floor(j / S)}, ${j % S}u);`);
    } else {
      for (let j = 0; j < 8; j++) lines.push(`    let x${raw}${tt}_${j} = x[xr${tt} + c * 8u + ${j}u];`);
    }
    if (o.norm) {
      lines.push(
        `    ss${tt} += ${Array.from({ length: 8 }, (_, j) => `dot(xr${tt}_${j}, xr${tt}_${j})`).join(' + ')};`,
      );
    }
  }
  if (o.norm) {
    for (let j = 0; j < 8; j++) {
      lines.push(`    let g${j} = ${normF32 ? `gnorm[c * 8u + ${j}u]` : `gnorm4(c * 8u + ${j}u)`};`);
      for (const tt of toks) lines.push(`    let x${tt}_${j} = xr${tt}_${j} * g${j};`);
    }
  }
  if (xsum) {
    for (const tt of toks) {
      lines.push(
        `    let xs${tt} = dot(${Array.from({ length: 8 }, (_, j) => `x${tt}_${j}`).join(' + ')}, vec4<f32>(1.0));`,
      );
    }
  }
  if (xhalf) {
    for (const tt of toks) {
      const x4 = (from: number) => Array.from({ length: 4 }, (_, j) => `x${tt}_${from + j}`).join(' + ');
      lines.push(
        `    let xlo${tt} = dot(${x4(0)}, vec4<f32>(1.0));`,
        `    let xhi${tt} = dot(${x4(4)}, vec4<f32>(1.0));`,
      );
    }
  }
  if (anyInt) {
    // The chunk's activations rounded to int8 (one scale per token), and the sums Σq of each half.
    for (const tt of toks) {
      const ab = Array.from({ length: 8 }, (_, j) => `abs(x${tt}_${j})`);
      lines.push(
        `    let am${tt} = max(max(max(${ab[0]}, ${ab[1]}), max(${ab[2]}, ${ab[3]})), max(max(${ab[4]}, ${ab[5]}), max(${ab[6]}, ${ab[7]})));`,
        `    let dx${tt} = max(max(am${tt}.x, am${tt}.y), max(am${tt}.z, am${tt}.w)) / 127.0;`,
        `    let ix${tt} = select(0.0, 1.0 / dx${tt}, dx${tt} > 0.0);`,
      );
      for (let j = 0; j < 8; j++)
        lines.push(`    let q${tt}_${j} = pack4xI8(vec4<i32>(round(x${tt}_${j} * ix${tt})));`);
      lines.push(
        `    let qlo${tt} = ${[0, 1, 2, 3].map((j) => `dot4I8Packed(q${tt}_${j}, 0x01010101u)`).join(' + ')};`,
        `    let qhi${tt} = ${[4, 5, 6, 7].map((j) => `dot4I8Packed(q${tt}_${j}, 0x01010101u)`).join(' + ')};`,
      );
    }
  }
  o.segments.forEach((s, si) => {
    const body: string[] = [];
    for (let r = 0; r < R; r++) {
      body.push(`      { let u = min(ub + ${r}u, ${s.nUnits - 1}u);`);
      s.dots.forEach((d, di) => {
        const wname = weightVar(s, si, d.w);
        const p = `p${r}_${di}_`;
        body.push(`        { let row = ${d.row};`);
        body.push(
          (intOf(s.weights[d.w])
            ? intChunkDot(s.weights[d.w].type, wname, K, TT, p, s.weights[d.w].planar)
            : chunkDot(s.weights[d.w].type, wname, K, TT, p, L.packed, s.weights[d.w].planar)
          )
            .split('\n')
            .map((l) => `          ${l}`)
            .join('\n'),
        );
        for (const tt of toks) body.push(`          ${acc(r, di, tt)} += ${p}s${tt};`);
        body.push('        }');
      });
      body.push('      }');
    }
    lines.push(`    ${si ? 'else ' : ''}if (seg == ${si}u) {\n${body.join('\n')}\n    }`);
  });
  lines.push('  }');
  // Combine the lanes of each group.
  const all: string[] = [];
  for (let r = 0; r < R; r++)
    for (let d = 0; d < maxDots; d++) for (const tt of toks) all.push(acc(r, d, tt));
  if (o.norm) for (const tt of toks) all.push(`ss${tt}`);
  if (L.lanes > 1) {
    if (sg) {
      for (let m = L.lanes / 2; m >= 1; m /= 2) {
        for (const v of all) lines.push(`  ${v} += subgroupShuffleXor(${v}, ${m}u);`);
      }
    } else {
      all.forEach((v, i) => {
        lines.push(`  red[${i * W}u + lid] = ${v};`);
      });
      lines.push('  workgroupBarrier();');
      for (let m = L.lanes / 2; m >= 1; m /= 2) {
        lines.push(`  if (lane < ${m}u) {`);
        all.forEach((_, i) => {
          lines.push(`    red[${i * W}u + lid] += red[${i * W}u + lid + ${m}u];`);
        });
        lines.push('  }\n  workgroupBarrier();');
      }
      all.forEach((v, i) => {
        lines.push(`  ${v} = red[${i * W}u + lid];`);
      });
    }
    lines.push('  if (lane != 0u) { return; }');
  }
  if (o.norm) {
    for (const tt of toks)
      lines.push(`  let inv${tt} = inverseSqrt(ss${tt} / f32(K) + ${f32Lit(o.norm.eps)});`);
  }
  o.segments.forEach((s, si) => {
    const body: string[] = [];
    for (let r = 0; r < R; r++) {
      body.push(`    { let u = ub + ${r}u; if (u < ${s.nUnits}u) {`);
      for (const tt of toks) {
        const ds = s.dots
          .map((_, di) => `let d${di} = ${acc(r, di, tt)}${o.norm ? ` * inv${tt}` : ''};`)
          .join(' ');
        body.push(
          `      if (t0 + ${tt}u < nT) { let t = t0 + ${tt}u; let pos = step.pos0 + ${o.lastTokenOnly ? 'step.nTokens - 1u' : 't'}; ${ds}\n        ${s.epilogue}\n      }`,
        );
      }
      body.push('    } }');
    }
    lines.push(`  ${si ? 'else ' : ''}if (seg == ${si}u) {\n${body.join('\n')}\n  }`);
  });
  lines.push('}');
  return lines.join('\n');
}
