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
 *   flipped, q + 128), which SwiftShader runs faster than `unpack4xU8`/`unpack4xI8` and a conversion
 *   (BENCHMARKS.md, "Why the kernel defaults…", mmv.ts) (Q5_0 keeps `unpack4xU8`, or shifts and masks without the WGSL language feature
 *   `packed_4x8_integer_dot_product`); scales and mins are applied once per chunk, and the offsets
 *   (Q4_0's −8, Q5_0's −16, Q6_K's −32, Q8_0's −128 of the flipped bytes, Q4_K's min) through the chunk's
 *   sums of activations (d·Σq·x − 8·d·Σx), as llama.cpp's mul_mat_vec does.
 * - Partial sums of a lane group are combined with `subgroupShuffleXor` (needs the `subgroups` feature
 *   and lanes ≤ the adapter's subgroupMinSize) or through workgroup memory (the fallback), or, for lane
 *   groups wider than a subgroup (64–256 lanes: the whole workgroup on 1–4 rows, llama.cpp Vulkan
 *   mul_mat_vec's NVIDIA shape of 128 threads on 2 rows, `reduce_result`'s "hybrid" variant), by shuffles
 *   within each run of `shuffleLanes` lanes and then one slot per run through workgroup memory, summed by
 *   lane 0 after a single barrier.
 *
 * The kernel, in outline (tt: token, r: unit of the lane group, d: dot of the unit, j: vec4 of the chunk;
 * [ ] where the options ask for it; `npm run wgsl -- mmv-q4_k-planar` prints a whole one):
 *
 *   @group(0) @binding(0) var<uniform> step: Step;       // then x, [gnorm], the weights, extra
 *   [var<workgroup> red: array<f32, …>;]                  // lanes > 1 reducing without subgroups
 *   const K: u32 = …;
 *   @compute @workgroup_size(threads)
 *   fn main(…) {
 *     let lane = lid % lanes; let grp = lid / lanes;      // lane group grp: units ub … ub + units − 1
 *     let xr{tt} = …;                                     // each token's row of x
 *     if (wg.x < …) { seg = …; ub = …; } else if …       // the workgroup's segment and first unit
 *     var a{r}_{d}_{tt} = 0.0; [var ss{tt} = 0.0;]
 *     for (var c = lane; c < K / 32; c += lanes) {        // lane l takes chunks l, l + lanes, …
 *       let x{tt}_{j} = x[xr{tt} + c * 8u + j];           // [× gnorm; ss{tt}; xs{tt}; int8 q{tt}_{j}]
 *       if (seg == 0u) {
 *         { let u = min(ub + r, nUnits − 1);
 *           { let row = …; <the type's chunk dot: p{r}_{d}_s{tt}>; a{r}_{d}_{tt} += p{r}_{d}_s{tt}; } }
 *       } else if …
 *     }
 *     a{r}_{d}_{tt} += subgroupShuffleXor(a{r}_{d}_{tt}, m); // or a tree through red
 *     if (lane != 0u) { return; }
 *     [let inv{tt} = inverseSqrt(ss{tt} / f32(K) + eps);]
 *     if (seg == 0u) { { let u = ub + r; if (u < nUnits) {
 *       if (t0 + tt < nT) { let t = …; let pos = …; let d{d} = a{r}_{d}_{tt} [* inv{tt}]; <epilogue> } } } }
 *   }
 *
 * mmvWGSL below builds it section by section in that order (declarations, reductionMemory, the opening of
 * main, chunkActivations, segmentDots, laneReduction, epilogues).
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
import { extraBindings, type MatmulOptions, type MatmulSegment, segmentRanges, weightVar } from './matmul.ts';
import { intChunkDot, usesIntDot } from './mmv-int.ts';
import { type ChunkCtx, DECODERS, mmvPreludes } from './quants/index.ts';

/** How a {@link mmvWGSL} kernel spreads work over threads. */
export interface MmvLayout {
  /**
   * Adjacent threads sharing one group of units along K: 1, 2, 4, 8, 16, 32, or 64, 128, 256 (a lane group
   * wider than a subgroup: the GPU shape where a whole workgroup of 64–256 threads walks K of 1–4 rows).
   */
  lanes: number;
  /**
   * Output units per lane group (1–4, or 8 with lanes 1 and no intDot: the software adapters' prefill,
   * where each unit more shares a thread's activation loads and subgroup broadcasts once more).
   */
  units: number;
  /** Threads per workgroup (a multiple of `lanes`). */
  threads: number;
  /**
   * How lanes' partial sums are combined when lanes > 1: `subgroupShuffleXor` over all lanes (lanes ≤
   * the adapter's subgroupMinSize), a tree through workgroup memory, or 'hybrid': shuffles within each run
   * of `shuffleLanes` adjacent lanes, then the runs' sums through workgroup memory (one barrier).
   */
  reduce: 'subgroup' | 'shared' | 'hybrid';
  /**
   * With reduce 'hybrid': lanes combined by shuffles before workgroup memory (2–32, < lanes, ≤ the
   * adapter's subgroupMinSize; 32 on NVIDIA, 4 on SwiftShader).
   */
  shuffleLanes?: number;
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
   * broadcast a register shuffle, so sharing pays where the activation loads take much of the time
   * (BENCHMARKS.md, "Why the kernel defaults…", MmvLayout.shareX).
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
 * What is wrong with a layout, or undefined when {@link mmvWGSL} takes it: lanes 1, 2, 4, …, 256;
 * units 1–4, or 8 with lanes 1 and no intDot (the tested values); threads a multiple of lanes, 1–256 (WebGPU's default maxComputeInvocationsPerWorkgroup);
 * reduce 'subgroup' (≤ 32 lanes), 'shared', or 'hybrid' with shuffleLanes (2–32, < lanes); intDot only with packed.
 */
export function mmvLayoutProblem(l: MmvLayout): string | undefined {
  if (![1, 2, 4, 8, 16, 32, 64, 128, 256].includes(l.lanes))
    return `lanes must be 1, 2, 4, 8, 16, 32, 64, 128 or 256 (got ${l.lanes})`;
  const eight = l.units === 8 && l.lanes === 1 && !l.intDot;
  if (!Number.isInteger(l.units) || l.units < 1 || (l.units > 4 && !eight))
    return `units must be 1–4, or 8 with lanes 1 and no intDot (got ${l.units})`;
  if (!Number.isInteger(l.threads) || l.threads < 1 || l.threads > 256 || l.threads % l.lanes !== 0)
    return `threads must be a multiple of lanes, at most 256 (got ${l.threads})`;
  if (l.reduce !== 'subgroup' && l.reduce !== 'shared' && l.reduce !== 'hybrid')
    return `reduce must be 'subgroup', 'shared' or 'hybrid' (got ${l.reduce})`;
  if (l.reduce === 'subgroup' && l.lanes > 32)
    return `reduce 'subgroup' takes at most 32 lanes (got ${l.lanes}; wider groups: 'hybrid')`;
  if (l.reduce === 'hybrid') {
    const s = l.shuffleLanes;
    if (s === undefined || ![2, 4, 8, 16, 32].includes(s) || s >= l.lanes)
      return `reduce 'hybrid' needs shuffleLanes 2, 4, 8, 16 or 32, below lanes ${l.lanes} (got ${s})`;
  } else if (l.shuffleLanes !== undefined) return `shuffleLanes needs reduce 'hybrid' (got ${l.reduce})`;
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

/**
 * Bytes of workgroup memory a {@link mmvWGSL} kernel of this layout reduces its lanes' sums through, at
 * `TT` tokens per workgroup row with `maxDots` dots per unit (2: gate and up) and a fused norm or not:
 * 0 where lanes are 1 or reduced by subgroup shuffles alone. The kernel is refused above 16,384 bytes
 * (WebGPU's default maxComputeWorkgroupStorageSize).
 */
export function mmvReduceBytes(l: MmvLayout, TT: number, maxDots: number, norm: boolean): number {
  if (!(l.lanes > 1 && l.reduce !== 'subgroup')) return 0;
  const slots = l.threads / (l.reduce === 'hybrid' ? (l.shuffleLanes ?? 1) : 1);
  return 4 * slots * (l.units * maxDots * TT + (norm ? TT : 0));
}

/** Units covered by one workgroup. */
function unitsPerWorkgroup(l: MmvLayout): number {
  return (l.threads / l.lanes) * l.units;
}

/** Workgroups along x for {@link mmvWGSL} with these segments and layout. */
export function mmvWorkgroupsX(segments: readonly { nUnits: number }[], layout: MmvLayout): number {
  return segmentRanges(segments, unitsPerWorkgroup(layout)).at(-1)?.end ?? 0;
}

/** What every part of one {@link mmvWGSL} kernel is built from: the options and the numbers derived from them. */
interface MmvKernel {
  options: MmvOptions;
  layout: MmvLayout;
  /** Weights per row (a multiple of 32). */
  K: number;
  /** Tokens per workgroup (options.TT): each thread's accumulators cover them all. */
  tokens: number;
  /** 0 … tokens − 1, the `tt` of the WGSL names. */
  eachToken: number[];
  /** Output units a lane group computes (layout.units): the `r` of the WGSL names. */
  unitsPerGroup: number;
  /** Adjacent threads splitting one group's chunks between them (layout.lanes). */
  lanesPerGroup: number;
  /** Threads per workgroup (layout.threads). */
  threads: number;
  /** Units covered by one workgroup: (threads / lanesPerGroup) · unitsPerGroup. */
  unitsPerWorkgroup: number;
  /** 32-weight chunks per row: the loop's trip count over all lanes. */
  chunks: number;
  /** The most dot products of one unit in any segment: the `d` of the WGSL names. */
  maxDotsPerUnit: number;
  /** Lanes combined through subgroup shuffles (else through workgroup memory `red`). */
  subgroupReduce: boolean;
  /** Lanes combined by shuffles before workgroup memory (reduce 'hybrid'; 0 otherwise). */
  shuffleLanes: number;
  /** Threads of a subgroup sharing a chunk's loads (layout.shareX; 0: each thread loads its own). */
  threadsSharingX: number;
  /** The chunk's sums Σx (`xs{tt}`), half sums (`xlo{tt}`, `xhi{tt}`) and int8 copy (`q{tt}_{j}`) are needed. */
  wantsXsum: boolean;
  wantsXhalf: boolean;
  wantsInt8X: boolean;
  /** Whether a weight takes the integer-dot path. */
  takesIntDot: (w: { type: WeightType; planar?: number }) => boolean;
}

/** WGSL of the parts of a kernel: one line, several, or none (undefined, false). */
type Section = string | readonly string[] | undefined | false;

/** The sections one under the other, as `lines.push` of each then `join('\n')` would (none for undefined/false). */
function lines(...sections: Section[]): string {
  return sections.flatMap((s) => (s === undefined || s === false ? [] : s)).join('\n');
}

/** Every line of `text` indented by `pad`. */
function indent(text: string, pad: string): string {
  return text
    .split('\n')
    .map((l) => `${pad}${l}`)
    .join('\n');
}

/** A chunk's 32 activations of one token are 8 `vec4<f32>`: j = 0 … 7. */
const VEC4S_PER_CHUNK = [0, 1, 2, 3, 4, 5, 6, 7];

/** The accumulator of unit `r`, dot `d`, token `tt`: `a{r}_{d}_{tt}`. */
function accumulator(r: number, d: number, tt: number): string {
  return `a${r}_${d}_${tt}`;
}

/** Every accumulator of a thread, unit by unit, dot by dot, token by token. */
function accumulators(k: MmvKernel): string[] {
  const out: string[] = [];
  for (let r = 0; r < k.unitsPerGroup; r++)
    for (let d = 0; d < k.maxDotsPerUnit; d++) for (const tt of k.eachToken) out.push(accumulator(r, d, tt));
  return out;
}

/** `f(r)` for each unit r of a lane group. */
function eachUnit(k: MmvKernel, f: (r: number) => string): string[] {
  return Array.from({ length: k.unitsPerGroup }, (_, r) => f(r));
}

/** `if (seg == 0u) {…} else if (seg == 1u) {…}`: one branch per segment (uniform per workgroup). */
function perSegment(k: MmvKernel, pad: string, branch: (s: MatmulSegment, si: number) => string): string[] {
  return k.options.segments.map(
    (s, si) => `${pad}${si ? 'else ' : ''}if (seg == ${si}u) {\n${branch(s, si)}\n${pad}}`,
  );
}

/**
 * The declarations: bindings in order (step, x, [gnorm], each segment's weights, extra), the WGSL the
 * weight types share (kernels/quants' preludes) and, for F16/BF16 norm weights, `gnorm4`.
 */
function declarations(k: MmvKernel): string {
  const o = k.options;
  let binding = 0;
  const bind = (declaration: string) => `@group(0) @binding(${binding++}) ${declaration};`;
  const normF32 = o.norm?.type === 'F32';
  return lines(
    (k.subgroupReduce || k.shuffleLanes > 0 || k.threadsSharingX > 0) && 'enable subgroups;',
    STEP_WGSL,
    bind('var<uniform> step: Step'),
    bind('var<storage, read> x: array<vec4<f32>>'),
    o.norm && bind(`var<storage, read> gnorm: ${normF32 ? 'array<vec4<f32>>' : 'array<u32>'}`),
    o.segments.flatMap((s, si) =>
      s.weights.map((w, wi) =>
        bind(
          `var<storage, read> ${weightVar(s, si, wi)}: ${w.planar !== undefined ? 'array<vec4<u32>>' : DECODERS[w.type].bindingType}`,
        ),
      ),
    ),
    extraBindings(o).map(bind),
    // Only ggml's blocks call the preludes (Q4_K/Q5_K's scale reader, IQ4's grid); planes carry their own.
    mmvPreludes(
      o.segments.flatMap((s) => s.weights.filter((w) => w.planar === undefined).map((w) => w.type)),
    ),
    o.norm && !normF32 && halfNormReader(o.norm.type),
  );
}

/** `gnorm4(i)`: F16 / BF16 norm weights four at a time from two words. */
function halfNormReader(type: WeightType): string {
  const toF32 =
    type === 'F16'
      ? (a: string) => `unpack2x16float(${a})`
      : (a: string) => `bitcast<vec2<f32>>(vec2<u32>(${a} << 16u, ${a} & 0xffff0000u))`;
  return `fn gnorm4(i: u32) -> vec4<f32> { return vec4<f32>(${toF32('gnorm[2u * i]')}, ${toF32('gnorm[2u * i + 1u]')}); }`;
}

/**
 * `red`: the workgroup memory lanes reduce through when they cannot shuffle (one slot per value per thread;
 * 'hybrid': per run of shuffleLanes threads).
 */
function reductionMemory(k: MmvKernel): Section {
  if (k.lanesPerGroup === 1 || k.subgroupReduce) return undefined;
  const values = k.unitsPerGroup * k.maxDotsPerUnit * k.tokens + (k.options.norm ? k.tokens : 0);
  return `var<workgroup> red: array<f32, ${(k.threads / (k.shuffleLanes || 1)) * values}>;`;
}

/** `xr{tt}`: the vec4 offset of each token's row of x (clamped to the last token: a partial token group computes duplicates, never stored). */
function activationRows(k: MmvKernel): string[] {
  return k.eachToken.map((tt) => `  let xr${tt} = min(xrow0 + ${tt}u, xrow0 + nT - 1u - t0) * ${k.K / 4}u;`);
}

/** Which segment this workgroup computes (`seg`) and its lane group's first unit (`ub`). */
function segmentSelection(k: MmvKernel): string[] {
  const perWg = k.unitsPerWorkgroup;
  return segmentRanges(k.options.segments, perWg).map(
    ({ start, end }, si) =>
      `  ${si ? 'else ' : ''}if (wg.x < ${end}u) { seg = ${si}u; ub = (wg.x - ${start}u) * ${perWg}u + grp * ${k.unitsPerGroup}u; }`,
  );
}

/**
 * Token `tt`'s activations of chunk c, `x{tt}_{j}` (or `xr{tt}_{j}` before the norm's weights): 8 loads,
 * or with shareX each thread `sl` of the subgroup loading vec4 sl, sl + S, … (`xm{tt}_{m}`) and vec4 j
 * broadcast from thread j % S. With a norm, the sum of squares from the same loads.
 */
function loadActivations(k: MmvKernel, tt: number): string {
  const S = k.threadsSharingX;
  const raw = k.options.norm ? 'r' : '';
  const loads = S
    ? [
        ...Array.from(
          { length: 8 / S },
          (_, m) => `    let xm${tt}_${m} = x[xr${tt} + c * 8u + sl + ${m * S}u];`,
        ),
        ...VEC4S_PER_CHUNK.map(
          (j) => `    let x${raw}${tt}_${j} = subgroupBroadcast(xm${tt}_${Math.floor(j / S)}, ${j % S}u);`,
        ),
      ]
    : VEC4S_PER_CHUNK.map((j) => `    let x${raw}${tt}_${j} = x[xr${tt} + c * 8u + ${j}u];`);
  return lines(
    loads,
    k.options.norm &&
      `    ss${tt} += ${VEC4S_PER_CHUNK.map((j) => `dot(xr${tt}_${j}, xr${tt}_${j})`).join(' + ')};`,
  );
}

/** The norm's weights of chunk c (`g{j}`), each applied to every token's raw activations. */
function normWeights(k: MmvKernel): string[] {
  const normF32 = k.options.norm?.type === 'F32';
  return VEC4S_PER_CHUNK.flatMap((j) => [
    `    let g${j} = ${normF32 ? `gnorm[c * 8u + ${j}u]` : `gnorm4(c * 8u + ${j}u)`};`,
    ...k.eachToken.map((tt) => `    let x${tt}_${j} = xr${tt}_${j} * g${j};`),
  ]);
}

/** `x{tt}_{from}` + … + `x{tt}_{from + count − 1}`. */
function sumOfVec4s(tt: number, from: number, count: number): string {
  return VEC4S_PER_CHUNK.slice(from, from + count)
    .map((j) => `x${tt}_${j}`)
    .join(' + ');
}

/**
 * Token `tt`'s chunk rounded to int8 with one scale `dx{tt}` (amax / 127, as ggml's quantize_row_q8_0):
 * packed words `q{tt}_{j}` and the sums Σq of each half, `qlo{tt}` and `qhi{tt}`.
 */
function int8Activations(tt: number): string {
  const amax = VEC4S_PER_CHUNK.map((j) => `abs(x${tt}_${j})`);
  const sumQ = (js: number[]) => js.map((j) => `dot4I8Packed(q${tt}_${j}, 0x01010101u)`).join(' + ');
  return `    let am${tt} = max(max(max(${amax[0]}, ${amax[1]}), max(${amax[2]}, ${amax[3]})), max(max(${amax[4]}, ${amax[5]}), max(${amax[6]}, ${amax[7]})));
    let dx${tt} = max(max(am${tt}.x, am${tt}.y), max(am${tt}.z, am${tt}.w)) / 127.0;
    let ix${tt} = select(0.0, 1.0 / dx${tt}, dx${tt} > 0.0);
${VEC4S_PER_CHUNK.map((j) => `    let q${tt}_${j} = pack4xI8(vec4<i32>(round(x${tt}_${j} * ix${tt})));`).join('\n')}
    let qlo${tt} = ${sumQ([0, 1, 2, 3])};
    let qhi${tt} = ${sumQ([4, 5, 6, 7])};`;
}

/**
 * The loop body's activations of chunk c for every token as immutable values (a mutable `var` per
 * activation costs a memory slot per invocation on SwiftShader's code generator): loaded (or broadcast
 * through the subgroup), × gnorm, then the sums and int8 copies the weight types need.
 */
function chunkActivations(k: MmvKernel): string {
  const each = (f: (tt: number) => string) => k.eachToken.map(f);
  return lines(
    each((tt) => loadActivations(k, tt)),
    k.options.norm && normWeights(k),
    k.wantsXsum && each((tt) => `    let xs${tt} = dot(${sumOfVec4s(tt, 0, 8)}, vec4<f32>(1.0));`),
    k.wantsXhalf &&
      each(
        (tt) => `    let xlo${tt} = dot(${sumOfVec4s(tt, 0, 4)}, vec4<f32>(1.0));
    let xhi${tt} = dot(${sumOfVec4s(tt, 4, 4)}, vec4<f32>(1.0));`,
      ),
    k.wantsInt8X && each(int8Activations),
  );
}

/**
 * One dot of unit `r` on chunk c: the weight type's chunk product ({@link chunkDot}, or mmv-int.ts on the
 * integer-dot path) into `p{r}_{di}_s{tt}`, added to the unit's accumulators.
 */
function chunkDotOfUnit(k: MmvKernel, s: MatmulSegment, si: number, r: number, di: number): string {
  const { w, row } = s.dots[di];
  const weight = s.weights[w];
  const name = weightVar(s, si, w);
  const prefix = `p${r}_${di}_`;
  const product = k.takesIntDot(weight)
    ? intChunkDot(weight.type, name, k.K, k.tokens, prefix, weight.planar)
    : chunkDot(weight.type, name, k.K, k.tokens, prefix, k.layout.packed, weight.planar);
  return `        { let row = ${row};
${indent(product, '          ')}
${k.eachToken.map((tt) => `          ${accumulator(r, di, tt)} += ${prefix}s${tt};`).join('\n')}
        }`;
}

/** The loop body's dot products: each segment's units (clamped to its last), each unit's dots of chunk c. */
function segmentDots(k: MmvKernel): string[] {
  return perSegment(k, '    ', (s, si) =>
    lines(
      eachUnit(k, (r) =>
        lines(
          `      { let u = min(ub + ${r}u, ${s.nUnits - 1}u);`,
          s.dots.map((_, di) => chunkDotOfUnit(k, s, si, r, di)),
          '      }',
        ),
      ),
    ),
  );
}

/** lanes / 2, lanes / 4, … 1: the strides of a butterfly (or tree) reduction over a lane group. */
function halvingStrides(lanes: number): number[] {
  const out: number[] = [];
  for (let m = lanes / 2; m >= 1; m /= 2) out.push(m);
  return out;
}

/**
 * After the loop: every accumulator and sum of squares summed over the lanes of a group, by
 * `subgroupShuffleXor` or a tree through `red` (slot i · threads + lid); only lane 0 goes on.
 */
function laneReduction(k: MmvKernel): Section {
  if (k.lanesPerGroup === 1) return undefined;
  const values = [...accumulators(k), ...(k.options.norm ? k.eachToken.map((tt) => `ss${tt}`) : [])];
  const S = k.shuffleLanes;
  if (S) {
    // Shuffles within each run of S lanes, the first lane of each run stores its run's sums (slot
    // i · P + lid / S, P runs per workgroup), one barrier, and lane 0 of the group adds its runs in order.
    const P = k.threads / S;
    const runs = k.lanesPerGroup / S;
    return lines(
      halvingStrides(S).flatMap((m) => values.map((v) => `  ${v} += subgroupShuffleXor(${v}, ${m}u);`)),
      `  if (lid % ${S}u == 0u) {`,
      values.map((v, i) => `    red[${i * P}u + lid / ${S}u] = ${v};`),
      '  }',
      '  workgroupBarrier();',
      '  if (lane != 0u) { return; }',
      `  let run0 = lid / ${S}u;`,
      values.map(
        (v, i) =>
          `  ${v} = ${Array.from({ length: runs }, (_, r) => `red[${i * P}u + run0 + ${r}u]`).join(' + ')};`,
      ),
    );
  }
  const strides = halvingStrides(k.lanesPerGroup);
  const slot = (i: number) => `red[${i * k.threads}u + lid]`;
  const combine = k.subgroupReduce
    ? strides.flatMap((m) => values.map((v) => `  ${v} += subgroupShuffleXor(${v}, ${m}u);`))
    : [
        ...values.map((v, i) => `  ${slot(i)} = ${v};`),
        '  workgroupBarrier();',
        ...strides.map(
          (m) => `  if (lane < ${m}u) {
${values.map((_, i) => `    ${slot(i)} += red[${i * k.threads}u + lid + ${m}u];`).join('\n')}
  }
  workgroupBarrier();`,
        ),
        ...values.map((v, i) => `  ${v} = ${slot(i)};`),
      ];
  return lines(combine, '  if (lane != 0u) { return; }');
}

/** Token `tt`'s store of unit `r`: the segment's epilogue with the unit's dot products in `d0`, `d1`, …. */
function tokenEpilogue(k: MmvKernel, s: MatmulSegment, r: number, tt: number): string {
  const o = k.options;
  const pos = o.lastTokenOnly ? 'step.nTokens - 1u' : 't';
  const dots = s.dots
    .map((_, di) => `let d${di} = ${accumulator(r, di, tt)}${o.norm ? ` * inv${tt}` : ''};`)
    .join(' ');
  return `      if (t0 + ${tt}u < nT) { let t = t0 + ${tt}u; let pos = step.pos0 + ${pos}; ${dots}
        ${s.epilogue}
      }`;
}

/** The stores: the norm's inverse RMS `inv{tt}`, then each segment's epilogue per unit in range and token. */
function epilogues(k: MmvKernel): string {
  const norm = k.options.norm;
  return lines(
    norm && k.eachToken.map((tt) => `  let inv${tt} = inverseSqrt(ss${tt} / f32(K) + ${f32Lit(norm.eps)});`),
    perSegment(k, '  ', (s) =>
      lines(
        eachUnit(k, (r) =>
          lines(
            `    { let u = ub + ${r}u; if (u < ${s.nUnits}u) {`,
            k.eachToken.map((tt) => tokenEpilogue(k, s, r, tt)),
            '    } }',
          ),
        ),
      ),
    ),
  );
}

/**
 * The kernel's WGSL. Bindings as matmul.ts `matmulWGSL`: 0 step, 1 x, [2 gnorm], each segment's weights in
 * order, then `extra`. Dispatch ({@link mmvWorkgroupsX}, ceil(T / TT)); T ≤ step.nTokens rows of x.
 */
export function mmvWGSL(o: MmvOptions): string {
  const { K, TT, layout } = o;
  if (K % 32 !== 0) throw new Error(`mmvWGSL needs K to be a multiple of 32 (got ${K})`);
  if (TT < 1 || TT > 16) throw new Error(`mmvWGSL computes 1–16 tokens per workgroup (got ${TT})`);
  const problem = mmvLayoutProblem(layout);
  if (problem) throw new Error(`bad mmv layout ${JSON.stringify(layout)}: ${problem}`);
  const takesIntDot = (w: { type: WeightType; planar?: number }) =>
    Boolean(layout.intDot && layout.packed && usesIntDot(w));
  const weights = o.segments.flatMap((s) => s.weights);
  const k: MmvKernel = {
    options: o,
    layout,
    K,
    tokens: TT,
    eachToken: Array.from({ length: TT }, (_, i) => i),
    unitsPerGroup: layout.units,
    lanesPerGroup: layout.lanes,
    threads: layout.threads,
    unitsPerWorkgroup: unitsPerWorkgroup(layout),
    chunks: K / 32,
    maxDotsPerUnit: Math.max(...o.segments.map((s) => s.dots.length)),
    subgroupReduce: layout.lanes > 1 && layout.reduce === 'subgroup',
    shuffleLanes: layout.lanes > 1 && layout.reduce === 'hybrid' ? (layout.shuffleLanes ?? 0) : 0,
    threadsSharingX: layout.shareX ?? 0,
    wantsXsum: weights.some((w) => DECODERS[w.type].needsXsum),
    wantsXhalf: weights.some((w) => DECODERS[w.type].needsXhalf && !takesIntDot(w)),
    wantsInt8X: weights.some(takesIntDot),
    takesIntDot,
  };
  const redBytes = mmvReduceBytes(layout, TT, k.maxDotsPerUnit, Boolean(o.norm));
  if (redBytes > 16384)
    throw new Error(
      `mmv layout ${JSON.stringify(layout)} with ${TT} tokens needs ${redBytes} bytes of workgroup memory to reduce (WebGPU's default limit: 16384)`,
    );
  const lanes = k.lanesPerGroup;
  const lastTokenOnly = o.lastTokenOnly;
  return lines(
    declarations(k),
    reductionMemory(k),
    `
const K: u32 = ${K}u;

@compute @workgroup_size(${k.threads})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32${k.threadsSharingX ? ', @builtin(subgroup_invocation_id) sl: u32' : ''}) {
  let lane = lid % ${lanes}u;
  let grp = lid / ${lanes}u;
  let t0 = ${lastTokenOnly ? '0u' : `wg.y * ${TT}u`};
  let nT = ${lastTokenOnly ? '1u' : 'step.nTokens'};
  let xrow0 = ${lastTokenOnly ? 'step.nTokens - 1u' : 't0'};`,
    activationRows(k),
    `  var seg = 0u;
  var ub = 0u;`,
    segmentSelection(k),
    accumulators(k).map((a) => `  var ${a} = 0.0;`),
    o.norm && k.eachToken.map((tt) => `  var ss${tt} = 0.0;`),
    // With one lane per group, c is the same in every thread (a uniform loop: shareX's broadcasts need it).
    `  for (var c = ${lanes === 1 ? '0u' : 'lane'}; c < ${k.chunks}u; c += ${lanes}u) {`,
    chunkActivations(k),
    segmentDots(k),
    '  }',
    laneReduction(k),
    epilogues(k),
    '}',
  );
}

/**
 * The float path's dot of chunk `c` of row `row` of weight `w` with the activations `x{t}_{j}` (vec4,
 * j = 0..7) of every token t < TT, as statements `let ${p}s${t} = …;`: the weight type's block decoder
 * (kernels/quants/<type>.ts `chunkDot`, or `planarChunkDot` over repack.ts's planes; formulas:
 * ggml-quants.c `dequantize_row_*`). `xs{t}` is Σx of the chunk for token t (when the decoder
 * `needsXsum`). K is the row length; `planar`: the weight's planes' block count.
 * @throws Error for `planar` on a type without planes.
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
  const ctx: ChunkCtx = {
    w,
    K,
    p,
    packed,
    X: (tt, j) => `x${tt}_${j}`,
    XS: (tt) => `xs${tt}`,
    sum: (f) => toks.map((tt) => `let ${p}s${tt} = ${f(tt)};`).join('\n'),
  };
  const d = DECODERS[t];
  if (planar === undefined) return d.chunkDot(ctx);
  if (!d.planarChunkDot) throw new Error(`${t} has no planar layout`);
  return d.planarChunkDot(ctx, planar);
}
