/**
 * Causal grouped-query attention over the KV cache (scaled dot product, softmax, weighted sum of V).
 *
 * Shapes: q [T, nHead·headDim]; kCache, vCache [nCtx, nHeadKv·headDim] (one layer, element type
 * {@link KvType}); out [T, nHead·headDim]. Query head h reads KV head h / (nHead / nHeadKv) (GQA, as
 * llama.cpp). Token t of the batch sits at position pos0 + t and attends to positions 0..pos0 + t.
 *
 * Three kernels:
 * - attention-decode.ts `flashDecodeWGSL` for decode and small batches (T = 1..8 query tokens):
 *   flash-decoding (Dao et al., "Flash-Decoding for long-context inference", 2023; llama.cpp's
 *   `flash_attn_ext` vec kernels, which also take a few query rows): the
 *   positions are split into chunks handled by different workgroups, one workgroup per (KV head, chunk)
 *   serving every query head of its group and every token, so K and V are read once; each chunk's (max,
 *   sum, unnormalised output) goes to a partial buffer that {@link flashCombineWGSL} merges. With one
 *   chunk the kernel writes the output itself and the combine is not dispatched.
 * - attention-prefill.ts's `prefillAttentionWGSL` for prefill batches: tiles of query tokens × the query
 *   heads of one KV head per workgroup over KV tiles (FlashAttention-2), in a GPU layout and a
 *   software-adapter layout.
 * - {@link attentionWGSL}, one workgroup per (query head, token), for the shapes the other two do not take
 *   (head size not a multiple of 4, or above 256), in prefill and decode alike.
 *
 * All run an online softmax (Milakov & Gimelshein, 2018) with finite sentinels, never ±Inf (WGSL leaves
 * Inf arithmetic indeterminate). Keys and queries share one per-head order of dimensions, written by the
 * QKV kernel (kernels/llama-ops.ts: each rotated pair sits in adjacent slots), which q·k does not see.
 *
 * KV element types: `f32`, or `f16` stored two per u32 with `pack2x16float` (no shader-f16 needed; as
 * llama.cpp's default F16 K/V cache), or ggml's Q8_0/Q4_0 blocks (kv-quant.ts; a head size a multiple of
 * 32, so every block lies in one head). K is read four elements at a time (`vec4<f32>` or `vec2<u32>`),
 * V two at a time (the prefill kernel: four); the flash-decoding kernel reads f16 and f32 caches eight at a
 * time (one 16-byte word of f16) where the head size allows ({@link wideKv}). K and V may differ in type
 * (`vKvType`), as llama.cpp's `-ctk`/`-ctv`.
 */
import type { KvType } from '../../core/types.ts';
import { f32Lit, STEP_WGSL, WG } from './common.ts';
import { isQuantKv, quantKvDecl } from './kv-quant.ts';

export type { KvType };

/** Bytes per KV-cache element: 4 (f32), 2 (f16), 34/32 (Q8_0), 18/32 (Q4_0) (ggml_row_size / 32 values). */
export function kvBytesPerElement(kv: KvType): number {
  return kv === 'f16' ? 2 : kv === 'q8_0' ? 34 / 32 : kv === 'q4_0' ? 18 / 32 : 4;
}

/** The largest score the kernels treat as "masked" (finite sentinel for −∞). */
export const SENTINEL = '-1.0e30';

/** WGSL declaration of a K binding (read as 4 elements) and its loader `ld_<name>4(i)`, i a multiple of 4. */
export function kDecl(binding: string, name: string, kv: KvType, access = 'read'): string {
  if (isQuantKv(kv)) return quantKvDecl(binding, name, kv, access);
  return kv === 'f16'
    ? `${binding} var<storage, ${access}> ${name}: array<vec2<u32>>;
fn ld_${name}4(i: u32) -> vec4<f32> { let w = ${name}[i / 4u]; return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }`
    : `${binding} var<storage, ${access}> ${name}: array<vec4<f32>>;
fn ld_${name}4(i: u32) -> vec4<f32> { return ${name}[i / 4u]; }`;
}

/** WGSL declaration of a cache binding read as pairs, with `ld_<name>2(i)`, i even. */
export function pairDecl(binding: string, name: string, kv: KvType): string {
  if (isQuantKv(kv)) return quantKvDecl(binding, name, kv);
  return kv === 'f16'
    ? `${binding} var<storage, read> ${name}: array<u32>;
fn ld_${name}2(i: u32) -> vec2<f32> { return unpack2x16float(${name}[i / 2u]); }`
    : `${binding} var<storage, read> ${name}: array<vec2<f32>>;
fn ld_${name}2(i: u32) -> vec2<f32> { return ${name}[i / 2u]; }`;
}

/**
 * Whether attention-decode.ts `flashDecodeWGSL` reads this cache eight elements at a time through
 * {@link wideDecl}: f16 (one 16-byte word) and f32 (two) caches with a head size a multiple of 8, so every
 * word lies in one head. Quantized caches keep their block loaders.
 */
export function wideKv(kv: KvType, headDim: number): boolean {
  return (kv === 'f16' || kv === 'f32') && headDim % 8 === 0;
}

/**
 * WGSL declaration of an f16 or f32 cache binding read eight elements at a time, with
 * `ld_<name>8(i) -> array<vec4<f32>, 2>` (elements i … i + 7, i a multiple of 8): f16 as one `vec4<u32>`
 * (16 bytes, half the load instructions of {@link kDecl}'s `vec2<u32>`), f32 as two `vec4<f32>`.
 * @throws Error for a quantized cache type (see {@link wideKv}).
 */
export function wideDecl(binding: string, name: string, kv: KvType): string {
  if (kv === 'f16')
    return `${binding} var<storage, read> ${name}: array<vec4<u32>>;
fn ld_${name}8(i: u32) -> array<vec4<f32>, 2> {
  let w = ${name}[i / 8u];
  return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)), vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)));
}`;
  if (kv === 'f32')
    return `${binding} var<storage, read> ${name}: array<vec4<f32>>;
fn ld_${name}8(i: u32) -> array<vec4<f32>, 2> { let j = i / 4u; return array<vec4<f32>, 2>(${name}[j], ${name}[j + 1u]); }`;
  throw new Error(`wideDecl: ${kv} caches are read by their block loaders`);
}

export interface AttentionOptions {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Softmax scale, normally 1/sqrt(headDim). */
  scale: number;
  /** KV-cache element type (default f32): K's, and V's unless {@link vKvType} says otherwise. */
  kvType?: KvType;
  /** V-cache element type where it differs from K's (llama.cpp's `-ctv`); default {@link kvType}. */
  vKvType?: KvType;
  /** Threads per workgroup (default {@link attentionWorkgroupSize}); small values suit software adapters. */
  threads?: number;
  /**
   * Attention logit soft-capping (Gemma 2's attn_logit_softcapping, llama-graph.cpp build_attn_mha):
   * score = cap · tanh(score / cap) after the scale, before the softmax. 0 or absent: off.
   */
  softcap?: number;
  /**
   * Sliding window (llama_hparams::is_masked_swa, LLAMA_SWA_TYPE_STANDARD): the query at position p sees
   * positions p − window < j ≤ p only. Absent: every position ≤ p.
   */
  window?: number;
}

/**
 * Threads per attention workgroup: the largest power of two ≤ 64 whose partials (max, sum, acc[headDim])
 * fit in 12 KiB of workgroup memory.
 */
export function attentionWorkgroupSize(headDim: number): number {
  let w = WG;
  while (w > 1 && w * (headDim + 2) * 4 > 12 * 1024) w /= 2;
  return w;
}

/**
 * Attention, one workgroup per (query head, token): the fallback for head sizes
 * attention-prefill.ts's `prefillAttentionWGSL` and attention-decode.ts `flashDecodeWGSL` do not take.
 * Bindings: step, q, kc, vc, out. Dispatch (nHead, T). Needs an even headDim.
 * @throws Error for an odd headDim or nHead not a multiple of nHeadKv.
 */
export function attentionWGSL(o: AttentionOptions): string {
  const HD = o.headDim;
  if (HD % 2 !== 0 || o.nHead % o.nHeadKv !== 0) throw new Error(`attention: bad shape ${JSON.stringify(o)}`);
  const kv = o.kvType ?? 'f32';
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const group = o.nHead / o.nHeadKv;
  const W = o.threads ?? attentionWorkgroupSize(HD);
  const H2 = HD / 2;
  // One barrier: every thread publishes (m, l, acc); threads d < HD merge column d over all threads.
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec2<f32>>;
${pairDecl('@group(0) @binding(2)', 'kc', kv)}
${pairDecl('@group(0) @binding(3)', 'vc', o.vKvType ?? kv)}
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
const HD: u32 = ${HD}u;
const W: u32 = ${W}u;
var<workgroup> sm: array<f32, ${W}>;
var<workgroup> sl: array<f32, ${W}>;
var<workgroup> sacc: array<f32, ${W * HD}>;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wg.x;
  let t = wg.y;
  let kvh = h / ${group}u;
  let pos = step.pos0 + t;
  var qv: array<vec2<f32>, ${H2}>;
  for (var d = 0u; d < ${H2}u; d++) { qv[d] = q[(t * ${qDim}u + h * HD) / 2u + d] * ${f32Lit(o.scale)}; }
  var m = ${SENTINEL};
  var l = 0.0;
  var acc: array<vec2<f32>, ${H2}>;
  ${o.window ? `let lo = select(0u, pos + 1u - ${o.window}u, pos + 1u > ${o.window}u);` : 'let lo = 0u;'}
  for (var j = lo + lid; j <= pos; j += W) {
    let kb = j * ${kvDim}u + kvh * HD;
    var s = 0.0;
    for (var d = 0u; d < ${H2}u; d++) { s += dot(qv[d], ld_kc2(kb + 2u * d)); }
    ${o.softcap ? `s = ${f32Lit(o.softcap)} * tanh(clamp(s / ${f32Lit(o.softcap)}, -15.0, 15.0));` : ''}
    let mn = max(m, s);
    let c = exp(m - mn);
    let p = exp(s - mn);
    l = l * c + p;
    for (var d = 0u; d < ${H2}u; d++) { acc[d] = acc[d] * c + p * ld_vc2(kb + 2u * d); }
    m = mn;
  }
  sm[lid] = m;
  sl[lid] = l;
  for (var d = 0u; d < ${H2}u; d++) { sacc[lid * HD + 2u * d] = acc[d].x; sacc[lid * HD + 2u * d + 1u] = acc[d].y; }
  workgroupBarrier();
  if (lid < HD) {
    var mAll = ${SENTINEL};
    for (var i = 0u; i < W; i++) { mAll = max(mAll, sm[i]); }
    for (var d = lid; d < HD; d += W) {
      var lAll = 0.0;
      var o = 0.0;
      for (var i = 0u; i < W; i++) {
        let f = exp(sm[i] - mAll);
        lAll += sl[i] * f;
        o += sacc[i * HD + d] * f;
      }
      out[t * ${qDim}u + h * HD + d] = o / lAll;
    }
  }
}`;
}

/**
 * How an attention-decode.ts `flashDecodeWGSL` kernel spreads its work:
 * - `tiled` (GPUs): 64-position tiles; lane groups of `lanes` threads share one position's q·k (reduced
 *   with `subgroupShuffleXor` when lanes > 1, so needs the `subgroups` feature and lanes ≤ the adapter's
 *   subgroupMinSize), scores and probabilities in workgroup memory, then threads along the head
 *   dimension accumulate P·V (coalesced V loads). Three barriers per tile.
 * - `strided` (software adapters, where a barrier costs ~20 µs per workgroup): each thread runs its own
 *   online softmax over every W-th position of the chunk for all the workgroup's query rows, one barrier
 *   at the end to merge.
 */
export interface FlashLayout {
  kind: 'tiled' | 'strided';
  /** `tiled`: threads per position (1, 2, 4 or 8; must divide headDim/4). */
  lanes?: number;
  /**
   * `strided`: threads per workgroup (a power of two; default 8, capped by workgroup memory). On SwiftShader
   * a workgroup costs per thread: 8 ran depth 4,000 of a stories260K-shape head 4× faster than 64.
   */
  threads?: number;
  /**
   * Benchmarks: read f16/f32 caches 4 (K) and 2 (V) elements at a time even where {@link wideKv} allows
   * 16-byte words, as the kernel did before them (scripts/device/attention-depth.ts compares the two).
   */
  narrow?: boolean;
  /**
   * Benchmarks: read V 2 elements at a time (the tiled layout: its P·V by dimension pairs, every thread
   * over every position of a tile) while K keeps 16-byte words; scripts/device/attention-depth.ts compares it.
   */
  narrowV?: boolean;
}

export interface FlashOptions {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Softmax scale, normally 1/sqrt(headDim). */
  scale: number;
  kvType: KvType;
  /** V-cache element type where it differs from K's; default kvType. */
  vKvType?: KvType;
  /** Query tokens per dispatch the kernel supports (1..8; step.nTokens may be fewer). */
  maxTokens: number;
  /** Context length (rows of the caches). */
  nCtx: number;
  layout: FlashLayout;
  /** Attention logit soft-capping, as {@link AttentionOptions.softcap}. */
  softcap?: number;
  /** Sliding window, as {@link AttentionOptions.window} (positions outside it are masked). */
  window?: number;
}

/** WGSL: the soft-capped score expression `e` (cap · tanh(e / cap)), or `e` without a cap. */
export function capped(e: string, softcap?: number): string {
  if (!softcap) return e;
  const c = f32Lit(softcap);
  return `(${c} * tanh(clamp((${e}) / ${c}, -15.0, 15.0)))`;
}

/** WGSL: `&& j + window > p` (position j inside the window of the query at p), or '' without a window. */
export function inWindow(j: string, p: string, window?: number): string {
  return window ? ` && ${j} + ${window}u > ${p}` : '';
}

/** Query heads per workgroup and workgroups per KV head of an attention-decode.ts `flashDecodeWGSL` kernel. */
export function flashHeadGroups(o: FlashOptions): { headsPerGroup: number; groupsPerKvHead: number } {
  const G = o.nHead / o.nHeadKv;
  // Rows (heads × tokens) per workgroup, bounded by workgroup memory (q rows, and the strided layout's
  // per-thread partials) and registers.
  const fits = (gw: number) => {
    const rows = gw * o.maxTokens;
    // Tiled: q rows + a 64-position score tile + row stats within 15 KiB (the spec's minimum is 16 KiB).
    if (o.layout.kind === 'tiled') return rows * (o.headDim + 64 + 2) * 4 <= 15360 && rows <= 32;
    return rows * (o.headDim + 2) * 4 * 8 <= 12288 && rows * o.headDim <= 512;
  };
  let gw = G;
  while (gw > 1 && !(fits(gw) && G % gw === 0)) gw--;
  return { headsPerGroup: gw, groupsPerKvHead: G / gw };
}

/** Whether attention-decode.ts `flashDecodeWGSL` takes this shape (headDim a multiple of 4, ≤ 256; GQA exact). */
export function flashSupports(o: { nHead: number; nHeadKv: number; headDim: number }): boolean {
  return o.headDim % 4 === 0 && o.headDim <= 256 && o.nHead % o.nHeadKv === 0;
}

/** The most chunks {@link flashCombineWGSL} merges (its weights live in workgroup memory). */
export const COMBINE_MAX_SPLITS = 256;

/** Dimension pairs per workgroup of {@link flashCombineWGSL} (each workgroup one slice of one head). */
function combinePairs(headDim: number): number {
  return Math.min(16, headDim / 2);
}

/** Workgroups along x of {@link flashCombineWGSL}: nHead × the head's slices of 16 dimension pairs. */
export function flashCombineWorkgroups(o: { nHead: number; headDim: number }): number {
  return o.nHead * Math.ceil(o.headDim / 2 / combinePairs(o.headDim));
}

/**
 * Merges the chunks' partials of attention-decode.ts `flashDecodeWGSL`: out[t, h·HD + d] =
 * Σ_s o_s[d]·e^(m_s − M) / Σ_s l_s·e^(m_s − M), M = max_s m_s (empty chunks, m = sentinel and l = 0, weigh
 * nothing). One workgroup of 64 threads per (head, slice of 16 dimension pairs, token): M and the sum of
 * the l_s split over the threads (each chunk's weight e^(m_s − M) kept in workgroup memory), then each
 * dimension pair summed by 64 / 16 threads over every 4th chunk and their sums added, so a step of many
 * chunks spreads over the GPU instead of one thread walking every chunk three times.
 * Bindings: step, part_o, part_ml, out. Dispatch ({@link flashCombineWorkgroups}, T); run only when
 * nSplit > 1, and nSplit ≤ {@link COMBINE_MAX_SPLITS}.
 */
export function flashCombineWGSL(o: { nHead: number; headDim: number; maxTokens: number }): string {
  const HD = o.headDim;
  const NDP = HD / 2;
  const qDim = o.nHead * HD;
  const DP = combinePairs(HD);
  const SG = Math.floor(64 / DP);
  const slices = Math.ceil(NDP / DP);
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> part_o: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> part_ml: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec2<f32>>;
var<workgroup> red: array<f32, 64>;
var<workgroup> wts: array<f32, ${COMBINE_MAX_SPLITS}>;
var<workgroup> acc: array<vec2<f32>, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wg.x / ${slices}u;
  let slice = wg.x % ${slices}u;
  let t = wg.y;
  let len = step.pos0 + step.nTokens;
  let nSplit = min((len + step.p2 - 1u) / step.p2, ${COMBINE_MAX_SPLITS}u);
  let nRed = min(nSplit, 64u);
  var m = ${SENTINEL};
  for (var s = lid; s < nSplit; s += 64u) { m = max(m, part_ml[(s * ${o.maxTokens}u + t) * ${o.nHead}u + h].x); }
  red[lid] = m;
  workgroupBarrier();
  var mAll = ${SENTINEL};
  for (var k = 0u; k < nRed; k++) { mAll = max(mAll, red[k]); }
  workgroupBarrier();
  var l = 0.0;
  for (var s = lid; s < nSplit; s += 64u) {
    let ml = part_ml[(s * ${o.maxTokens}u + t) * ${o.nHead}u + h];
    let w = exp(ml.x - mAll);
    wts[s] = w;
    l += ml.y * w;
  }
  red[lid] = l;
  workgroupBarrier();
  var lAll = 0.0;
  for (var k = 0u; k < nRed; k++) { lAll += red[k]; }
  // Dimension pair dp of this slice, chunks g, g + ${SG}, …
  let g = lid / ${DP}u;
  let dp = slice * ${DP}u + lid % ${DP}u;
  var a = vec2<f32>(0.0);
  if (g < ${SG}u && dp < ${NDP}u) {
    for (var s = g; s < nSplit; s += ${SG}u) { a += part_o[((s * ${o.maxTokens}u + t) * ${qDim}u + h * ${HD}u) / 2u + dp] * wts[s]; }
  }
  acc[lid] = a;
  workgroupBarrier();
  if (g == 0u && dp < ${NDP}u) {
    var sum = a;
    for (var k = 1u; k < ${SG}u; k++) { sum += acc[k * ${DP}u + lid]; }
    out[(t * ${qDim}u + h * ${HD}u) / 2u + dp] = sum / lAll;
  }
}`;
}

/** Most chunks a decode step is split into (sizes the partial buffers). */
export const MAX_SPLITS = 64;

/**
 * The chunk size (positions per workgroup) for `len` = pos0 + T positions: enough chunks that
 * nHeadKv · groupsPerKvHead · nSplit reaches `targetWorkgroups`, each at least `minChunk` positions
 * (a multiple of `granule`, 64), never more than `maxSplits` ({@link MAX_SPLITS}, which sizes the
 * engine's partial buffers) chunks. `fixedChunk` (tests) overrides. `granule` and `maxSplits` are for
 * benchmarks of finer chunking (scripts/device/attention-depth.ts), which size their own buffers.
 * @returns chunk ≥ 1 and nSplit = ⌈len / chunk⌉ ≤ maxSplits.
 * @throws Error for maxSplits above {@link COMBINE_MAX_SPLITS}.
 */
export function attentionSplit(
  len: number,
  policy: {
    workgroupsPerChunk: number;
    targetWorkgroups: number;
    minChunk: number;
    fixedChunk?: number;
    granule?: number;
    maxSplits?: number;
  },
): { chunk: number; nSplit: number } {
  const maxSplits = policy.maxSplits ?? MAX_SPLITS;
  if (maxSplits > COMBINE_MAX_SPLITS)
    throw new Error(
      `attentionSplit: ${maxSplits} chunks, more than the combine merges (${COMBINE_MAX_SPLITS})`,
    );
  const g = policy.granule ?? 64;
  let chunk: number;
  if (policy.fixedChunk) chunk = Math.max(policy.fixedChunk, Math.ceil(len / maxSplits));
  else {
    const want = Math.max(1, Math.ceil(policy.targetWorkgroups / policy.workgroupsPerChunk));
    chunk = Math.max(policy.minChunk, Math.ceil(len / want / g) * g, Math.ceil(len / maxSplits));
  }
  return { chunk, nSplit: Math.max(1, Math.ceil(len / chunk)) };
}
