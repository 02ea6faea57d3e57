/**
 * Matrix × vector kernels for decode (T = 1..4 tokens): y = W·x, optionally of RMSNorm(x), with the same
 * segments, epilogues and binding order as matmul.ts's `matmulWGSL` (so one bind group serves either).
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
 *   a planar Q4_K chunk is one vec4 of nibbles in Q4_0's order plus its scale/min bytes and d/dmin, a
 *   planar Q6_K chunk one vec4 of nibbles in that order, two words of high bits, two scales and d),
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
 * scale per 16 weights through the half sums) follow `dequantize_row_q5_K/q2_K/q3_K`, and from the file's
 * blocks also have an integer-dot path (mmv-int.ts).
 *
 * Block formats: ggml-common.h (see common.ts). Dequantization formulas: ggml-quants.c
 * `dequantize_row_q4_0/q8_0/q5_0/q4_K/q6_K/q4_1/q5_1/iq4_nl/iq4_xs`.
 *
 * Needs K to be a multiple of 32 (every quantized row is; float rows that are not use matmul.ts `matmulWGSL`'s
 * decode variants: {@link mmvSupports}).
 */
import { f32Lit, STEP_WGSL, type WeightType } from './common.ts';
import { extraBindings, type MatmulOptions, segmentRanges, weightVar } from './matmul.ts';
import { bindingType, chunkDot, needsXhalf, needsXsum } from './mmv-chunk.ts';
import { intChunkDot, usesIntDot } from './mmv-int.ts';
import { mmvPreludes } from './quants/index.ts';

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

/** What {@link mmvWGSL}'s parts share: the options, the layout and the names of the accumulators. */
interface MmvParts {
  o: MmvOptions;
  L: MmvLayout;
  K: number;
  /** Tokens per workgroup. */
  TT: number;
  /** 0 … TT − 1. */
  toks: number[];
  /** Units per thread group (L.units). */
  R: number;
  /** Threads per workgroup (L.threads). */
  W: number;
  /** The most dot products of one unit in any segment. */
  maxDots: number;
  /** Lanes combined through subgroup shuffles. */
  sg: boolean;
  /** L.shareX (0: every thread loads its own activations). */
  S: number;
  /** Whether a weight takes the integer-dot path. */
  intOf: (w: { type: WeightType; planar?: number }) => boolean;
  /** Accumulator of unit r, dot d, token tt. */
  acc: (r: number, d: number, tt: number) => string;
}

/** {@link mmvWGSL}'s declarations: bindings in order (step, x, [gnorm], weights, extra) and the helper functions the weight types need. */
function declarations(lines: string[], o: MmvOptions, subgroups: boolean, types: WeightType[]): void {
  const normF32 = o.norm?.type === 'F32';
  if (subgroups) lines.push('enable subgroups;');
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
  lines.push(...mmvPreludes(types));
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
}

/** The loop body's activations of chunk c for every token: loaded (or broadcast through the subgroup), normed, and the sums the weight types need (Σx, half sums, int8 copies). */
function chunkActivations(
  lines: string[],
  c: MmvParts,
  need: { xsum: boolean; xhalf: boolean; anyInt: boolean },
): void {
  const { o, toks, S } = c;
  const normF32 = o.norm?.type === 'F32';
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
  if (need.xsum) {
    for (const tt of toks) {
      lines.push(
        `    let xs${tt} = dot(${Array.from({ length: 8 }, (_, j) => `x${tt}_${j}`).join(' + ')}, vec4<f32>(1.0));`,
      );
    }
  }
  if (need.xhalf) {
    for (const tt of toks) {
      const x4 = (from: number) => Array.from({ length: 4 }, (_, j) => `x${tt}_${from + j}`).join(' + ');
      lines.push(
        `    let xlo${tt} = dot(${x4(0)}, vec4<f32>(1.0));`,
        `    let xhi${tt} = dot(${x4(4)}, vec4<f32>(1.0));`,
      );
    }
  }
  if (need.anyInt) {
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
}

/** The loop body's dot products: each segment's units, each unit's dots of chunk c, into the accumulators. */
function segmentDots(lines: string[], c: MmvParts): void {
  const { TT, o, L, K, toks, R, intOf, acc } = c;
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
}

/** After the loop: the lanes of each thread group combined (subgroup shuffles or workgroup memory); lane 0 goes on. */
function reduceLanes(lines: string[], c: MmvParts): void {
  const { o, L, toks, R, W, maxDots, sg, acc } = c;
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
}

/** The stores: the norm's inverse RMS, then each segment's epilogue per unit and token in range. */
function epilogues(lines: string[], c: MmvParts): void {
  const { o, toks, R, acc } = c;
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
}

/**
 * The kernel's WGSL. Bindings as matmul.ts `matmulWGSL`: 0 step, 1 x, [2 gnorm], each segment's weights in
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
  const lines: string[] = [];
  const S = L.shareX ?? 0;
  declarations(lines, o, sg || S > 0, types);
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
  const c: MmvParts = { o, L, K, TT, toks, R, W, maxDots, sg, S, intOf, acc };
  for (let r = 0; r < R; r++)
    for (let d = 0; d < maxDots; d++) for (const tt of toks) lines.push(`  var ${acc(r, d, tt)} = 0.0;`);
  if (o.norm) for (const tt of toks) lines.push(`  var ss${tt} = 0.0;`);
  // With one lane per group, c is the same in every thread (a uniform loop: shareX's broadcasts need it).
  lines.push(`  for (var c = ${L.lanes === 1 ? '0u' : 'lane'}; c < ${NC}u; c += ${L.lanes}u) {`);
  chunkActivations(lines, c, { xsum, xhalf, anyInt });
  segmentDots(lines, c);
  lines.push('  }');
  reduceLanes(lines, c);
  epilogues(lines, c);
  lines.push('}');
  return lines.join('\n');
}
