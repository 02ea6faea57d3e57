/**
 * Causal grouped-query attention over the KV cache (scaled dot product, softmax, weighted sum of V).
 *
 * Shapes: q [T, nHead·headDim]; kCache, vCache [nCtx, nHeadKv·headDim] (one layer, element type
 * {@link KvType}); out [T, nHead·headDim]. Query head h reads KV head h / (nHead / nHeadKv) (GQA, as
 * llama.cpp). Token t of the batch sits at position pos0 + t and attends to positions 0..pos0 + t.
 *
 * Three kernels:
 * - {@link flashDecodeWGSL} for decode (T = 1..4 query tokens): flash-decoding (Dao et al., "Flash-Decoding
 *   for long-context inference", 2023; llama.cpp's `flash_attn_ext` vec kernels): the positions are split
 *   into chunks handled by different workgroups, one workgroup per (KV head, chunk) serving every query
 *   head of its group and every token, so K and V are read once; each chunk's (max, sum, unnormalised
 *   output) goes to a partial buffer that {@link flashCombineWGSL} merges. With one chunk the kernel
 *   writes the output itself and the combine is not dispatched.
 * - {@link prefillAttentionWGSL} for prefill batches: tiles of query tokens × the query heads of one KV
 *   head per workgroup over KV tiles (FlashAttention-2), in a GPU layout and a software-adapter layout.
 * - {@link attentionWGSL}, one workgroup per (query head, token), for the shapes the other two do not take
 *   (head size not a multiple of 4, or above 256), in prefill and decode alike.
 *
 * All run an online softmax (Milakov & Gimelshein, 2018) with finite sentinels, never ±Inf (WGSL leaves
 * Inf arithmetic indeterminate). Keys and queries share one per-head order of dimensions, written by the
 * QKV kernel (kernels/llama-ops.ts: each rotated pair sits in adjacent slots), which q·k does not see.
 *
 * KV element types: `f32`, or `f16` stored two per u32 with `pack2x16float` (no shader-f16 needed; as
 * llama.cpp's default F16 K/V cache). K is read four elements at a time (`vec4<f32>` or `vec2<u32>`),
 * V two at a time.
 */
import type { KvType } from '../../core/types.ts';
import { f32Lit, STEP_WGSL, WG } from './common.ts';

export type { KvType };

/** Bytes per KV-cache element. */
export function kvBytesPerElement(kv: KvType): number {
  return kv === 'f16' ? 2 : 4;
}

/** The largest score the kernels treat as "masked" (finite sentinel for −∞). */
const SENTINEL = '-1.0e30';

/** WGSL declaration of a K binding (read as 4 elements) and its loader `ld_<name>4(i)`, i a multiple of 4. */
function kDecl(binding: string, name: string, kv: KvType, access = 'read'): string {
  return kv === 'f16'
    ? `${binding} var<storage, ${access}> ${name}: array<vec2<u32>>;
fn ld_${name}4(i: u32) -> vec4<f32> { let w = ${name}[i / 4u]; return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }`
    : `${binding} var<storage, ${access}> ${name}: array<vec4<f32>>;
fn ld_${name}4(i: u32) -> vec4<f32> { return ${name}[i / 4u]; }`;
}

/** WGSL declaration of a cache binding read as pairs, with `ld_<name>2(i)`, i even. */
function pairDecl(binding: string, name: string, kv: KvType): string {
  return kv === 'f16'
    ? `${binding} var<storage, read> ${name}: array<u32>;
fn ld_${name}2(i: u32) -> vec2<f32> { return unpack2x16float(${name}[i / 2u]); }`
    : `${binding} var<storage, read> ${name}: array<vec2<f32>>;
fn ld_${name}2(i: u32) -> vec2<f32> { return ${name}[i / 2u]; }`;
}

export interface AttentionOptions {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Softmax scale, normally 1/sqrt(headDim). */
  scale: number;
  /** KV-cache element type (default f32). */
  kvType?: KvType;
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
 * Attention, one workgroup per (query head, token): the fallback for head sizes {@link
 * prefillAttentionWGSL} and {@link flashDecodeWGSL} do not take. Bindings: step, q, kc, vc, out.
 * Dispatch (nHead, T). Needs an even headDim.
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
${pairDecl('@group(0) @binding(3)', 'vc', kv)}
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
 * How a {@link flashDecodeWGSL} kernel spreads its work:
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
}

export interface FlashOptions {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Softmax scale, normally 1/sqrt(headDim). */
  scale: number;
  kvType: KvType;
  /** Query tokens per dispatch the kernel supports (1..4; step.nTokens may be fewer). */
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
function capped(e: string, softcap?: number): string {
  if (!softcap) return e;
  const c = f32Lit(softcap);
  return `(${c} * tanh(clamp((${e}) / ${c}, -15.0, 15.0)))`;
}

/** WGSL: `&& j + window > p` (position j inside the window of the query at p), or '' without a window. */
function inWindow(j: string, p: string, window?: number): string {
  return window ? ` && ${j} + ${window}u > ${p}` : '';
}

/** Query heads per workgroup and workgroups per KV head of a {@link flashDecodeWGSL} kernel. */
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

/** Whether {@link flashDecodeWGSL} takes this shape (headDim a multiple of 4, ≤ 256; GQA exact). */
export function flashSupports(o: { nHead: number; nHeadKv: number; headDim: number }): boolean {
  return o.headDim % 4 === 0 && o.headDim <= 256 && o.nHead % o.nHeadKv === 0;
}

/** Threads of a strided-layout workgroup: a power of two ≤ `max` whose partials fit in 12 KiB. */
function stridedThreads(rows: number, HD: number, max = 8): number {
  let w = max;
  while (w > 1 && w * rows * (HD + 2) * 4 > 12288) w /= 2;
  return w;
}

/**
 * The strided layout's per-thread loop, unrolled over rows and head dimensions into named registers
 * (software adapters keep dynamically indexed private arrays in memory, which made the loop several
 * times slower): online softmax over positions start + lid, start + lid + W, … for every row, then the
 * partials into workgroup memory.
 */
function stridedBody(
  RW: number,
  HD4: number,
  NDP: number,
  kvDim: number,
  GW: number,
  TM: number,
  softcap?: number,
  window?: number,
): string {
  const rows = Array.from({ length: RW }, (_, r) => r);
  const L: string[] = [];
  for (const r of rows) {
    L.push(`  var m${r} = SENT; var l${r} = 0.0;`);
    for (let d = 0; d < HD4; d++) L.push(`  let q${r}_${d} = qs[${r * HD4 + d}];`);
    for (let d = 0; d < NDP; d++) L.push(`  var a${r}_${d} = vec2<f32>(0.0);`);
  }
  L.push(`  for (var j = start + lid; j < end; j += W) {`, `    let base = j * ${kvDim}u + kb;`);
  for (let d = 0; d < HD4; d++) L.push(`    let k${d} = ld_kc4(base + ${4 * d}u);`);
  for (const r of rows) {
    const dots = Array.from({ length: HD4 }, (_, d) => `dot(q${r}_${d}, k${d})`).join(' + ');
    const t = Math.floor(r / GW);
    // With one query token every position of the chunk is visible; with several, token t sees ≤ pos0 + t.
    // A sliding window also masks positions before pos0 + t − window + 1.
    const ok =
      TM === 1 && !window
        ? 'true'
        : `${t}u < step.nTokens && j <= step.pos0 + ${t}u${inWindow('j', `step.pos0 + ${t}u`, window)}`;
    L.push(`    let ok${r} = ${ok};`);
    L.push(`    let s${r} = select(SENT, ${capped(dots, softcap)}, ok${r});`);
    L.push(
      `    let mn${r} = max(m${r}, s${r}); let c${r} = exp(m${r} - mn${r}); let p${r} = select(0.0, exp(s${r} - mn${r}), ok${r});`,
    );
    L.push(`    l${r} = l${r} * c${r} + p${r}; m${r} = mn${r};`);
  }
  for (let d = 0; d < NDP; d++) {
    L.push(`    let v${d} = ld_vc2(base + ${2 * d}u);`);
    for (const r of rows) {
      L.push(
        TM === 1
          ? `    a${r}_${d} = a${r}_${d} * c${r} + p${r} * v${d};`
          : `    a${r}_${d} = a${r}_${d} * c${r} + select(vec2<f32>(0.0), p${r} * v${d}, p${r} > 0.0);`,
      );
    }
  }
  L.push('  }');
  for (const r of rows) {
    L.push(`  sm[lid * RW + ${r}u] = m${r}; sl[lid * RW + ${r}u] = l${r};`);
    for (let d = 0; d < NDP; d++) L.push(`  sacc[(lid * RW + ${r}u) * ${NDP}u + ${d}u] = a${r}_${d};`);
  }
  return L.join('\n');
}

/**
 * Flash-decoding attention for step.nTokens ≤ maxTokens query tokens at positions step.pos0… over chunks
 * of step.p2 positions (see {@link attentionSplit}). Bindings: step, q [T, qDim], kc, vc [nCtx, kvDim],
 * out [T, qDim], part_o [maxSplits, maxTokens, qDim] f32, part_ml [maxSplits, maxTokens, nHead] vec2
 * (max, sum). Dispatch (nHeadKv · groupsPerKvHead, nSplit). With nSplit = 1 writes `out` directly, else
 * the partials for {@link flashCombineWGSL}.
 * @throws Error when {@link flashSupports} is false or the lanes do not divide headDim/4.
 */
export function flashDecodeWGSL(o: FlashOptions): string {
  if (!flashSupports(o)) throw new Error(`flash attention: unsupported shape ${JSON.stringify(o)}`);
  const HD = o.headDim;
  const HD4 = HD / 4;
  const NDP = HD / 2;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const G = o.nHead / o.nHeadKv;
  const TM = o.maxTokens;
  const { headsPerGroup: GW, groupsPerKvHead: nHG } = flashHeadGroups(o);
  const RW = GW * TM;
  const common = `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
${kDecl('@group(0) @binding(2)', 'kc', o.kvType)}
${pairDecl('@group(0) @binding(3)', 'vc', o.kvType)}
@group(0) @binding(4) var<storage, read_write> out: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> part_o: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> part_ml: array<vec2<f32>>;
const HD: u32 = ${HD}u;
const RW: u32 = ${RW}u;
const SENT: f32 = ${SENTINEL};
/** Query head and token of workgroup row r. */
fn rowHead(kvh: u32, hg: u32, r: u32) -> u32 { return kvh * ${G}u + hg * ${GW}u + r % ${GW}u; }
fn rowTok(r: u32) -> u32 { return r / ${GW}u; }
var<workgroup> qs: array<vec4<f32>, ${RW * HD4}>;
/** The workgroup's query rows, scaled, into qs (rows of tokens past step.nTokens are zeros). */
fn load_q(kvh: u32, hg: u32, lid: u32, nThreads: u32) {
  for (var i = lid; i < ${RW * HD4}u; i += nThreads) {
    let r = i / ${HD4}u;
    let t = rowTok(r);
    var v = vec4<f32>(0.0);
    if (t < step.nTokens) { v = q[(t * ${qDim}u + rowHead(kvh, hg, r) * HD) / 4u + i % ${HD4}u] * ${f32Lit(o.scale)}; }
    qs[i] = v;
  }
}
/** Writes dims (2dp, 2dp+1) of row r: the final output with one chunk, else this chunk's partial. */
fn emit(kvh: u32, hg: u32, split: u32, nSplit: u32, r: u32, dp: u32, a: vec2<f32>, m: f32, l: f32) {
  let t = rowTok(r);
  if (t >= step.nTokens) { return; }
  let h = rowHead(kvh, hg, r);
  if (nSplit == 1u) {
    out[(t * ${qDim}u + h * HD) / 2u + dp] = a / l;
  } else {
    part_o[((split * ${TM}u + t) * ${qDim}u + h * HD) / 2u + dp] = a;
    if (dp == 0u) { part_ml[(split * ${TM}u + t) * ${o.nHead}u + h] = vec2<f32>(m, l); }
  }
}
`;
  const head = `  let kvh = wg.x / ${nHG}u;
  let hg = wg.x % ${nHG}u;
  let split = wg.y;
  let len = step.pos0 + step.nTokens;
  let chunk = step.p2;
  let nSplit = (len + chunk - 1u) / chunk;
  let start = split * chunk;
  let end = min(start + chunk, len);
  let kb = kvh * HD;`;
  if (o.layout.kind === 'strided') {
    const W = stridedThreads(RW, HD, o.layout.threads);
    return `${common}
const W: u32 = ${W}u;
var<workgroup> sm: array<f32, ${W * RW}>;
var<workgroup> sl: array<f32, ${W * RW}>;
var<workgroup> sacc: array<vec2<f32>, ${W * RW * NDP}>;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
${head}
  load_q(kvh, hg, lid, W);
  workgroupBarrier();
${stridedBody(RW, HD4, NDP, kvDim, GW, TM, o.softcap, o.window)}
  workgroupBarrier();
  for (var i = lid; i < ${RW * NDP}u; i += W) {
    let r = i / ${NDP}u;
    let dp = i % ${NDP}u;
    var mAll = SENT;
    for (var k = 0u; k < W; k++) { mAll = max(mAll, sm[k * RW + r]); }
    var lAll = 0.0;
    var a = vec2<f32>(0.0);
    for (var k = 0u; k < W; k++) {
      let f = exp(sm[k * RW + r] - mAll);
      lAll += sl[k * RW + r] * f;
      a += sacc[(k * RW + r) * ${NDP}u + dp] * f;
    }
    emit(kvh, hg, split, nSplit, r, dp, a, mAll, lAll);
  }
}`;
  }
  // Tiled layout.
  const W = 64;
  const LG = o.layout.lanes ?? 1;
  if (![1, 2, 4, 8].includes(LG) || HD4 % LG !== 0)
    throw new Error(`flash attention: ${LG} lanes for head dim ${HD}`);
  const P = W / LG;
  // P·V: thread = (dim pair dp, row group rg); rows rg, rg + RG, …; dim pairs dp, dp + W, … when NDP > W.
  const RG = NDP >= W ? 1 : Math.min(RW, Math.floor(W / NDP));
  const RPT = Math.ceil(RW / RG);
  const DPT = Math.ceil(NDP / W);
  const shuffle =
    LG > 1
      ? Array.from({ length: Math.log2(LG) }, (_, i) => 1 << i)
          .map((mask) => `    for (var r = 0u; r < RW; r++) { s[r] += subgroupShuffleXor(s[r], ${mask}u); }`)
          .join('\n')
      : '';
  return `${LG > 1 ? 'enable subgroups;\n' : ''}${common}
const W: u32 = ${W}u;
const P: u32 = ${P}u;
var<workgroup> sc: array<f32, ${RW * P}>;
var<workgroup> mrow: array<f32, ${RW}>;
var<workgroup> crow: array<f32, ${RW}>;

@compute @workgroup_size(${W})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
${head}
  load_q(kvh, hg, lid, W);
  if (lid < RW) { mrow[lid] = SENT; }
  let pl = lid / ${LG}u;
  let lane = lid % ${LG}u;
  let rg = lid / ${Math.min(NDP, W)}u;
  let dp0 = lid % ${Math.min(NDP, W)}u;
  var acc: array<vec2<f32>, ${RPT * DPT}>;
  var lsum: array<f32, ${RPT}>;
  workgroupBarrier();
  for (var tile = start; tile < end; tile += P) {
    // Scores of position tile + pl for every row (lanes split the head dimension).
    let j = tile + pl;
    let base = min(j, end - 1u) * ${kvDim}u + kb;
    var s: array<f32, ${RW}>;
    for (var r = 0u; r < RW; r++) { s[r] = 0.0; }
    for (var i = 0u; i < ${HD4 / LG}u; i++) {
      let d = i * ${LG}u + lane;
      let k4 = ld_kc4(base + 4u * d);
      for (var r = 0u; r < RW; r++) { s[r] += dot(qs[r * ${HD4}u + d], k4); }
    }
${shuffle}
    if (lane == 0u) {
      for (var r = 0u; r < RW; r++) {
        let ok = j < end && rowTok(r) < step.nTokens && j <= step.pos0 + rowTok(r)${inWindow('j', 'step.pos0 + rowTok(r)', o.window)};
        sc[r * P + pl] = select(SENT, ${capped('s[r]', o.softcap)}, ok);
      }
    }
    workgroupBarrier();
    if (lid < RW) {
      var mx = mrow[lid];
      for (var p = 0u; p < P; p++) { mx = max(mx, sc[lid * P + p]); }
      crow[lid] = exp(mrow[lid] - mx);
      mrow[lid] = mx;
    }
    workgroupBarrier();
    for (var i = lid; i < ${RW * P}u; i += W) {
      let sv = sc[i];
      sc[i] = select(0.0, exp(sv - mrow[i / P]), sv > -1.0e29);
    }
    workgroupBarrier();
    if (rg < ${RG}u) {
      for (var rr = 0u; rr < ${RPT}u; rr++) {
        let r = rg + rr * ${RG}u;
        if (r < RW) {
          let c = crow[r];
          lsum[rr] *= c;
          for (var dd = 0u; dd < ${DPT}u; dd++) { acc[rr * ${DPT}u + dd] *= c; }
        }
      }
      for (var p = 0u; p < P; p++) {
        let jp = min(tile + p, end - 1u) * ${kvDim}u + kb;
        for (var dd = 0u; dd < ${DPT}u; dd++) {
          let dp = dp0 + dd * W;
          if (dp < ${NDP}u) {
            let v2 = ld_vc2(jp + 2u * dp);
            for (var rr = 0u; rr < ${RPT}u; rr++) {
              let r = rg + rr * ${RG}u;
              if (r < RW) {
                let pr = sc[r * P + p];
                acc[rr * ${DPT}u + dd] += select(vec2<f32>(0.0), pr * v2, pr > 0.0);
                if (dd == 0u) { lsum[rr] += pr; }
              }
            }
          }
        }
      }
    }
    workgroupBarrier();
  }
  if (rg < ${RG}u) {
    for (var rr = 0u; rr < ${RPT}u; rr++) {
      let r = rg + rr * ${RG}u;
      for (var dd = 0u; dd < ${DPT}u; dd++) {
        let dp = dp0 + dd * W;
        if (r < RW && dp < ${NDP}u) { emit(kvh, hg, split, nSplit, r, dp, acc[rr * ${DPT}u + dd], mrow[r], lsum[rr]); }
      }
    }
  }
}`;
}

/**
 * Merges the chunks' partials of {@link flashDecodeWGSL}: out[t, h·HD + d] = Σ_s o_s[d]·e^(m_s − M) /
 * Σ_s l_s·e^(m_s − M), M = max_s m_s (empty chunks, m = sentinel and l = 0, weigh nothing). Bindings: step,
 * part_o, part_ml, out. Dispatch (nHead, T); run only when nSplit > 1.
 */
export function flashCombineWGSL(o: { nHead: number; headDim: number; maxTokens: number }): string {
  const HD = o.headDim;
  const qDim = o.nHead * HD;
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> part_o: array<f32>;
@group(0) @binding(2) var<storage, read> part_ml: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
const HD: u32 = ${HD}u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wg.x;
  let t = wg.y;
  let len = step.pos0 + step.nTokens;
  let nSplit = (len + step.p2 - 1u) / step.p2;
  var mAll = ${SENTINEL};
  for (var s = 0u; s < nSplit; s++) { mAll = max(mAll, part_ml[(s * ${o.maxTokens}u + t) * ${o.nHead}u + h].x); }
  var lAll = 0.0;
  for (var s = 0u; s < nSplit; s++) {
    let ml = part_ml[(s * ${o.maxTokens}u + t) * ${o.nHead}u + h];
    lAll += ml.y * exp(ml.x - mAll);
  }
  for (var d = lid; d < ${HD}u; d += 64u) {
    var a = 0.0;
    for (var s = 0u; s < nSplit; s++) {
      let ml = part_ml[(s * ${o.maxTokens}u + t) * ${o.nHead}u + h];
      a += part_o[(s * ${o.maxTokens}u + t) * ${qDim}u + h * HD + d] * exp(ml.x - mAll);
    }
    out[t * ${qDim}u + h * HD + d] = a / lAll;
  }
}`;
}

/** Most chunks a decode step is split into (sizes the partial buffers). */
export const MAX_SPLITS = 64;

/**
 * The chunk size (positions per workgroup) for `len` = pos0 + T positions: enough chunks that
 * nHeadKv · groupsPerKvHead · nSplit reaches `targetWorkgroups`, each at least `minChunk` positions
 * (a multiple of 64), never more than {@link MAX_SPLITS} chunks. `fixedChunk` (tests) overrides.
 * @returns chunk ≥ 1 and nSplit = ⌈len / chunk⌉ ≤ MAX_SPLITS.
 */
export function attentionSplit(
  len: number,
  policy: { workgroupsPerChunk: number; targetWorkgroups: number; minChunk: number; fixedChunk?: number },
): { chunk: number; nSplit: number } {
  let chunk: number;
  if (policy.fixedChunk) chunk = Math.max(policy.fixedChunk, Math.ceil(len / MAX_SPLITS));
  else {
    const want = Math.max(1, Math.ceil(policy.targetWorkgroups / policy.workgroupsPerChunk));
    chunk = Math.max(policy.minChunk, Math.ceil(len / want / 64) * 64, Math.ceil(len / MAX_SPLITS));
  }
  return { chunk, nSplit: Math.max(1, Math.ceil(len / chunk)) };
}

/**
 * How a {@link prefillAttentionWGSL} kernel spreads its work (both: one workgroup per tile of query
 * tokens × the query heads of one KV head group, no partials, no combine):
 * - `tiled` (GPUs): FlashAttention-2's loop (Dao, "FlashAttention-2: Faster Attention with Better
 *   Parallelism and Work Partitioning", 2023, Algorithm 1): the workgroup loads each KV tile of `kvTile`
 *   positions into workgroup memory once for all its rows; `lanes` threads share a row (each keeps an
 *   interleaved slice of ≤ 64 dims of q and of the output in registers; their partial q·k meet in
 *   workgroup memory). Two barriers per KV tile (three with lanes > 1).
 * - `rows` (software adapters, where a barrier costs ~20 µs per workgroup and dynamically indexed private
 *   arrays live in memory): each thread keeps `rows` (token, head) rows (the heads of its group first,
 *   then consecutive tokens) in generator-unrolled named registers and reads K and V straight from the
 *   cache, each element serving all of them (SwiftShader loads per lane, so that sharing is what cuts the
 *   loads; the threads of a workgroup read the same positions at about the same time, so the CPU's caches
 *   serve the rest); no workgroup memory, no barriers. On SwiftShader (2 cores), the 60M-parameter shape
 *   (8 heads of 64) at T = 512: 0.13-0.16 s against the per-(head, token) kernel's 0.96-1.1 s.
 */
export interface PrefillLayout {
  kind: 'tiled' | 'rows';
  /** `rows`: threads per workgroup (default 16). */
  threads?: number;
  /**
   * `rows`: most rows (tokens × heads) per thread (default min(8, 256 / headDim), at least 1): each K and
   * V element read serves that many rows. More rows compile slower (4 rows of head dim 64: ~1.5 s on
   * SwiftShader, 8: ~4 s, for ~10% less time).
   */
  rows?: number;
  /** `rows`: positions per unrolled step (1..8, default 1; more made no difference on SwiftShader). */
  block?: number;
  /**
   * `rows`: K and V shared through subgroups of exactly S invocations (2, 4 or 8; the caller checks
   * subgroupMinSize = subgroupMaxSize = S, as mmv's `shareX`). Every thread of a workgroup reads the same
   * positions, so each of a subgroup's S threads loads every S-th vec4 of a position's K and V row and takes
   * the rest from the others with `subgroupBroadcast` (a register shuffle; on SwiftShader a storage load is
   * a gather with bounds checks per invocation). The KV loop then runs to the workgroup's last position
   * (uniform control flow, as the broadcasts need), the causal mask covering each row's tail. `threads`
   * must be a multiple of S (a partial subgroup would broadcast from threads that do not exist).
   */
  shareKv?: number;
}

export interface PrefillAttentionOptions {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Softmax scale, normally 1/sqrt(headDim). */
  scale: number;
  kvType: KvType;
  layout: PrefillLayout;
  /** Attention logit soft-capping, as {@link AttentionOptions.softcap}. */
  softcap?: number;
  /**
   * Sliding window, as {@link AttentionOptions.window}: positions before a row's window are masked, and
   * the KV loop starts at the first row's window (positions before every row's window are not read).
   */
  window?: number;
}

/** The work split of a {@link prefillAttentionWGSL} kernel ({@link prefillAttentionPlan}). */
export interface PrefillAttentionPlan {
  /** Query heads per workgroup (a divisor of nHead / nHeadKv) and workgroups per KV head. */
  headsPerGroup: number;
  groupsPerKvHead: number;
  /** Query tokens per workgroup (BQ): the grid's y is ⌈T / tokensPerTile⌉. */
  tokensPerTile: number;
  /** Query tokens per thread (`rows`: each thread keeps tokensPerThread × headsPerGroup rows; 1 for `tiled`). */
  tokensPerThread: number;
  /** KV positions per tile (BK): per workgroup-memory load (`tiled`) or per unrolled step (`rows`). */
  kvTile: number;
  /** Threads per row (`tiled`; 1 for `rows`) and per workgroup. */
  lanes: number;
  threads: number;
  /** Bytes of workgroup memory (0 for `rows`). */
  workgroupBytes: number;
}

/** Workgroup memory a prefill kernel may use: the spec's minimum maxComputeWorkgroupStorageSize, 16 KiB. */
const PREFILL_WG_BYTES = 16384;

/** Whether {@link prefillAttentionWGSL} takes this shape (as {@link flashSupports}: headDim % 4 = 0, ≤ 256). */
export function prefillAttentionSupports(o: { nHead: number; nHeadKv: number; headDim: number }): boolean {
  return flashSupports(o);
}

/** The largest divisor of g that is ≤ cap. */
function divisorAtMost(g: number, cap: number): number {
  let d = Math.max(1, Math.min(g, cap));
  while (g % d !== 0) d--;
  return d;
}

/**
 * The tiles of a {@link prefillAttentionWGSL} kernel for a shape. `tiled`: 64 threads; lanes per row =
 * the fewest dividing headDim/4 that leave each ≤ 64 dims; rows = ⌊64 / lanes⌋ = heads × tokens (heads
 * the largest divisor of the GQA group that fits); kvTile the most positions (≤ 32, a multiple of 4) whose
 * K and V tiles (f32) and partial scores fit in 15 KiB of workgroup memory (the default limit is 16 KiB;
 * headDim 256 gets 4 positions). `rows`: `threads` threads of `rows` rows each (heads × tokens likewise),
 * so threads × rows / heads tokens per workgroup.
 * @throws Error when {@link prefillAttentionSupports} is false or the layout's options are out of range.
 */
export function prefillAttentionPlan(o: PrefillAttentionOptions): PrefillAttentionPlan {
  if (!prefillAttentionSupports(o))
    throw new Error(`prefill attention: unsupported shape ${JSON.stringify(o)}`);
  const HD4 = o.headDim / 4;
  const G = o.nHead / o.nHeadKv;
  if (o.layout.kind === 'rows') {
    const W = o.layout.threads ?? 16;
    const B = o.layout.block ?? 1;
    const maxRows = o.layout.rows ?? Math.max(1, Math.min(8, Math.floor(256 / o.headDim)));
    const ok = (x: number, hi: number) => Number.isInteger(x) && x >= 1 && x <= hi;
    const S = o.layout.shareKv;
    const badShare = S !== undefined && (![2, 4, 8].includes(S) || W % S !== 0);
    if (!ok(W, 256) || !ok(B, 8) || !ok(maxRows, 16) || badShare)
      throw new Error(`prefill attention: bad rows layout ${JSON.stringify(o.layout)}`);
    const GW = divisorAtMost(G, maxRows);
    const RT = Math.floor(maxRows / GW);
    return {
      headsPerGroup: GW,
      groupsPerKvHead: G / GW,
      tokensPerTile: W * RT,
      tokensPerThread: RT,
      kvTile: B,
      lanes: 1,
      threads: W,
      workgroupBytes: 0,
    };
  }
  let L = Math.ceil(HD4 / 16);
  while (HD4 % L !== 0) L++;
  const R = Math.floor(64 / L);
  const GW = divisorAtMost(G, R);
  const BQ = Math.floor(R / GW);
  const rows = BQ * GW;
  const perPos = 2 * o.headDim * 4 + (L > 1 ? rows * L * 4 : 0);
  const BK = Math.min(32, Math.floor((PREFILL_WG_BYTES - 1024) / perPos / 4) * 4);
  if (BK < 4) throw new Error(`prefill attention: head dim ${o.headDim} leaves no KV tile`);
  return {
    headsPerGroup: GW,
    groupsPerKvHead: G / GW,
    tokensPerTile: BQ,
    kvTile: BK,
    tokensPerThread: 1,
    lanes: L,
    threads: rows * L,
    workgroupBytes: BK * perPos,
  };
}

/** The grid of a {@link prefillAttentionWGSL} dispatch for T tokens: [nHeadKv · groupsPerKvHead, ⌈T / BQ⌉]. */
export function prefillAttentionWorkgroups(o: PrefillAttentionOptions, T: number): [number, number] {
  const p = prefillAttentionPlan(o);
  return [o.nHeadKv * p.groupsPerKvHead, Math.ceil(T / p.tokensPerTile)];
}

/**
 * WGSL: the first KV position a prefill loop visits: 0, or with a sliding window the window start of the
 * first row's position `first` (a WGSL name), first + 1 − window, rounded down to a multiple of `align`.
 */
function windowStart(window?: number, align = 1, first = 'pFirst'): string {
  if (!window) return '0u';
  return `select(0u, ((${first} + 1u - ${window}u) / ${align}u) * ${align}u, ${first} + 1u > ${window}u)`;
}

/** WGSL max of s0..s(n−1) (a balanced tree). */
function maxOf(n: number, lo = 0, name = (i: number) => `s${i}`): string {
  if (n === 1) return name(lo);
  const h = Math.floor(n / 2);
  return `max(${maxOf(h, lo, name)}, ${maxOf(n - h, lo + h, name)})`;
}

/** `n` lines from `f(i)`, i = 0..n−1, joined by `sep`. */
function each(n: number, f: (i: number) => string, sep = '\n'): string {
  return Array.from({ length: n }, (_, i) => f(i)).join(sep);
}

/**
 * Causal prefill attention, tiled over query tokens and KV positions (FlashAttention-2's online softmax
 * with finite sentinels; see {@link PrefillLayout}): a drop-in for {@link attentionWGSL}. Bindings: step,
 * q [T, nHead·headDim] f32 (RoPE-pair slot order, as the QKV kernel writes), kc, vc [nCtx, nHeadKv·headDim]
 * (`kvType`; rows 0..pos0+T−1 filled), out [T, nHead·headDim] f32 (out[t, h·HD + d] = Σ_j softmax_j(scale ·
 * q_t,h · k_j) v_j[d] over j ≤ pos0 + t, the order {@link attentionWGSL} writes). Dispatch
 * {@link prefillAttentionWorkgroups}(o, T). KV tiles past the workgroup's last query row are never read (the
 * loop ends there); only tiles on the diagonal mask positions per row.
 * @throws Error when {@link prefillAttentionSupports} is false or the layout's options are out of range.
 */
export function prefillAttentionWGSL(o: PrefillAttentionOptions): string {
  const plan = prefillAttentionPlan(o);
  const HD = o.headDim;
  const HD4 = HD / 4;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const G = o.nHead / o.nHeadKv;
  const {
    headsPerGroup: GW,
    groupsPerKvHead: nHG,
    tokensPerTile: BQ,
    kvTile: BK,
    lanes: L,
    threads: NT,
  } = plan;
  const scale = f32Lit(o.scale);
  const common = `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
${kDecl('@group(0) @binding(2)', 'kc', o.kvType)}
${kDecl('@group(0) @binding(3)', 'vc', o.kvType)}
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
const SENT: f32 = ${SENTINEL};`;
  if (o.layout.kind === 'rows') {
    // A thread keeps RT tokens × GW heads (rows rr = r·GW + g) in named registers: q, the output, the
    // running max and sum, and walks positions 0..pLast (its last token's), B per step. The causal mask
    // is one select per score: positions past a row's own are at most RT + B − 1 steps at the end, and
    // a second, unmasked copy of the body for the steps before them doubled the compile time (seconds
    // on SwiftShader) for no measurable gain.
    const B = BK;
    const RT = plan.tokensPerThread;
    const RW = RT * GW;
    const rowsIdx = Array.from({ length: RW }, (_, rr) => rr);
    const S = o.layout.shareKv ?? 0;
    /** Statements loading vec4 d = 0..HD4−1 of cache `c` at element `r` into `${name}_${d}`. */
    const loadRow = (c: 'kc' | 'vc', r: string, name: string): string[] => {
      if (!S)
        return Array.from({ length: HD4 }, (_, d) => `      let ${name}_${d} = ld_${c}4(${r} + ${4 * d}u);`);
      // Thread sl loads vec4 sl + m·S (clamped to the row's last: a spare copy, never used); vec4 d comes
      // from thread d % S's load m = ⌊d / S⌋.
      const M = Math.ceil(HD4 / S);
      const L3 = Array.from(
        { length: M },
        (_, m) => `      let ${name}m${m} = ld_${c}4(${r} + 4u * min(sl + ${m * S}u, ${HD4 - 1}u));`,
      );
      for (let d = 0; d < HD4; d++)
        L3.push(`      let ${name}_${d} = subgroupBroadcast(${name}m${Math.floor(d / S)}, ${d % S}u);`);
      return L3;
    };
    const body = () => {
      const L2: string[] = [];
      for (let i = 0; i < B; i++) {
        // Positions past pLast (the last step's tail) read row pLast: finite, and masked.
        L2.push(`      let r${i} = min(j + ${i}u, pLast) * ${kvDim}u + kb;`);
        L2.push(...loadRow('kc', `r${i}`, `k${i}`));
        for (const rr of rowsIdx) {
          const dots = each(HD4, (d) => `dot(q${rr}_${d}, k${i}_${d})`, ' + ');
          const p = `pFirst + ${Math.floor(rr / GW)}u`;
          L2.push(
            `      let s${rr}_${i} = select(SENT, ${capped(dots, o.softcap)}, j + ${i}u <= ${p}${inWindow(`j + ${i}u`, p, o.window)});`,
          );
        }
      }
      // The rescale is folded into every step (a branch on "max grew" was no faster on SwiftShader).
      for (const rr of rowsIdx) {
        L2.push(
          `      let mx${rr} = max(m${rr}, ${maxOf(B, 0, (i) => `s${rr}_${i}`)});`,
          `      let c${rr} = exp(m${rr} - mx${rr});`,
          `      m${rr} = mx${rr};`,
        );
        for (let i = 0; i < B; i++) L2.push(`      let p${rr}_${i} = exp(s${rr}_${i} - m${rr});`);
        L2.push(`      l${rr} = l${rr} * c${rr} + ${each(B, (i) => `p${rr}_${i}`, ' + ')};`);
      }
      if (S) for (let i = 0; i < B; i++) L2.push(...loadRow('vc', `r${i}`, `v${i}`));
      for (let d = 0; d < HD4; d++) {
        if (!S) for (let i = 0; i < B; i++) L2.push(`      let v${i}_${d} = ld_vc4(r${i} + ${4 * d}u);`);
        for (const rr of rowsIdx)
          L2.push(
            `      a${rr}_${d} = a${rr}_${d} * c${rr} + ${each(B, (i) => `p${rr}_${i} * v${i}_${d}`, ' + ')};`,
          );
      }
      return L2.join('\n');
    };
    const init: string[] = [];
    const emit: string[] = [];
    for (const rr of rowsIdx) {
      const tok = Math.floor(rr / GW);
      const g = rr % GW;
      init.push(
        `  let qb${rr} = (min(t0 + ${tok}u, step.nTokens - 1u) * ${qDim}u + (h0 + ${g}u) * ${HD}u) / 4u;`,
      );
      for (let d = 0; d < HD4; d++) init.push(`  let q${rr}_${d} = q[qb${rr} + ${d}u] * ${scale};`);
      init.push(`  var m${rr} = SENT;`, `  var l${rr} = 0.0;`);
      for (let d = 0; d < HD4; d++) init.push(`  var a${rr}_${d} = vec4<f32>(0.0);`);
      emit.push(`  if (t0 + ${tok}u < step.nTokens) {`);
      for (let d = 0; d < HD4; d++) emit.push(`    out[qb${rr} + ${d}u] = a${rr}_${d} / l${rr};`);
      emit.push('  }');
    }
    // With shareKv the loop's bounds are the workgroup's (uniform): its first and last token's positions;
    // a thread past the batch's last token computes clamped duplicates it never stores.
    const bounds = S
      ? `  let pFirst = step.pos0 + t0;
  let pLast = step.pos0 + min(wg.y * ${BQ}u + ${BQ}u, step.nTokens) - 1u;
  let pStart = step.pos0 + wg.y * ${BQ}u;`
      : `  if (t0 >= step.nTokens) { return; }
  // Positions of the thread's first and last token.
  let pFirst = step.pos0 + t0;
  let pLast = step.pos0 + min(t0 + ${RT}u, step.nTokens) - 1u;`;
    const start = windowStart(o.window, 1, S ? 'pStart' : 'pFirst');
    return `${S ? 'enable subgroups;\n' : ''}${common}

@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32${S ? ', @builtin(subgroup_invocation_id) sl: u32' : ''}) {
  let kvh = wg.x / ${nHG}u;
  let h0 = kvh * ${G}u + (wg.x % ${nHG}u) * ${GW}u;
  let t0 = wg.y * ${BQ}u + lid * ${RT}u;
${bounds}
  let kb = kvh * ${HD}u;
${init.join('\n')}
  // Masked positions before a row's first valid one add exp(0) to l and v to a while m is still SENT; the
  // first real score rescales them by exp(SENT − m) = 0.
  for (var j = ${start}; j <= pLast; j += ${B}u) {
${body()}
  }
${emit.join('\n')}
}`;
  }
  // Tiled layout: thread = (row, lane); row = (token, head) of the workgroup; the lane keeps dims
  // 4(k·L + lane) … of q and of the output (k < DL4), interleaved so lanes read adjacent words. Loops
  // have constant bounds (the GPU's compiler unrolls them; private arrays stay in registers).
  const DL4 = HD4 / L;
  const R = BQ * GW;
  const partials =
    L > 1
      ? `    for (var c = 0u; c < ${BK}u; c++) { sp[(row * ${BK}u + c) * ${L}u + lane] = s[c]; }
    workgroupBarrier();
    for (var c = 0u; c < ${BK}u; c++) {
      var sum = 0.0;
      for (var ln = 0u; ln < ${L}u; ln++) { sum += sp[(row * ${BK}u + c) * ${L}u + ln]; }
      s[c] = sum;
    }`
      : '';
  return `${common}
var<workgroup> ks: array<vec4<f32>, ${BK * HD4}>;
var<workgroup> vs: array<vec4<f32>, ${BK * HD4}>;
${L > 1 ? `var<workgroup> sp: array<f32, ${R * BK * L}>;` : ''}

@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let kvh = wg.x / ${nHG}u;
  let row = lid / ${L}u;
  let lane = lid % ${L}u;
  let h = kvh * ${G}u + (wg.x % ${nHG}u) * ${GW}u + row % ${GW}u;
  let t0 = wg.y * ${BQ}u;
  let t = t0 + row / ${GW}u;
  let live = t < step.nTokens;
  let pos = step.pos0 + t;
  // The last position any row of the workgroup sees, and the first row's (tiles past it are diagonal).
  let pLast = step.pos0 + min(t0 + ${BQ}u, step.nTokens) - 1u;
  let pFirst = step.pos0 + t0;
  let kb = kvh * ${HD}u;
  let qb = (min(t, step.nTokens - 1u) * ${qDim}u + h * ${HD}u) / 4u;
  var qr: array<vec4<f32>, ${DL4}>;
  var acc: array<vec4<f32>, ${DL4}>;
  var s: array<f32, ${BK}>;
  for (var k = 0u; k < ${DL4}u; k++) {
    qr[k] = q[qb + k * ${L}u + lane] * ${scale};
    acc[k] = vec4<f32>(0.0);
  }
  var m = SENT;
  var l = 0.0;
  for (var tile = ${windowStart(o.window, BK)}; tile <= pLast; tile += ${BK}u) {
    for (var i = lid; i < ${BK * HD4}u; i += ${NT}u) {
      let src = min(tile + i / ${HD4}u, pLast) * ${kvDim}u + kb + 4u * (i % ${HD4}u);
      ks[i] = ld_kc4(src);
      vs[i] = ld_vc4(src);
    }
    workgroupBarrier();
    // Scores of the tile's positions (every element written before it is read).
    for (var c = 0u; c < ${BK}u; c++) {
      var d = 0.0;
      for (var k = 0u; k < ${DL4}u; k++) { d += dot(qr[k], ks[c * ${HD4}u + k * ${L}u + lane]); }
      s[c] = d;
    }
${partials}
${
  o.softcap
    ? `    for (var c = 0u; c < ${BK}u; c++) { s[c] = ${capped('s[c]', o.softcap)}; }
`
    : ''
}    // Only tiles reaching past the first row's position hold masked positions (and, with a sliding
    // window, tiles before a row's window; as in the rows layout, those the first real score erases).
    let diagonal = tile + ${BK - 1}u > pFirst;
    var mx = m;
    for (var c = 0u; c < ${BK}u; c++) {
      if ((diagonal && tile + c > pos)${o.window ? ` || tile + c + ${o.window}u <= pos` : ''}) { s[c] = SENT; }
      mx = max(mx, s[c]);
    }
    if (mx > m) {
      let f = exp(m - mx);
      l *= f;
      for (var k = 0u; k < ${DL4}u; k++) { acc[k] *= f; }
      m = mx;
    }
    for (var c = 0u; c < ${BK}u; c++) {
      let p = exp(s[c] - m);
      l += p;
      for (var k = 0u; k < ${DL4}u; k++) { acc[k] += p * vs[c * ${HD4}u + k * ${L}u + lane]; }
    }
    workgroupBarrier();
  }
  if (live) {
    for (var k = 0u; k < ${DL4}u; k++) { out[qb + k * ${L}u + lane] = acc[k] / l; }
  }
}`;
}
