/**
 * Causal prefill attention on subgroup matrices (the GPU's matrix units through Dawn's
 * `chromium-experimental-subgroup-matrix`): a drop-in for attention-prefill.ts's `prefillAttentionWGSL`
 * (same bindings, shapes, KV element types, softcap and sliding window, same dispatch grid shape),
 * FlashAttention-2's loop (Dao 2023) with both products on the matrix units, as llama.cpp's Vulkan
 * `flash_attn_cm1` shader does with cooperative matrices.
 *
 * One workgroup = one subgroup, serving R = M rows (M of the f16 → f32 configuration): rows are (token,
 * head) pairs of one KV head's GQA group (the heads of the group first, then tokens), so the group's
 * query heads share every K and V tile load. Per KV tile of BK positions:
 *   1. K's BK rows are staged in workgroup memory as f16 (`kvs`, through the cache type's `ld_kc4`: f32,
 *      f16, Q8_0 or Q4_0 alike);
 *   2. S = Q·Kᵀ [R × BK]: BK / N result matrices, each the sum over HD / K steps of
 *      `subgroupMatrixMultiplyAccumulate(left Q [M × K] row-major, right Kᵀ [K × N] = K rows column-major)`,
 *      f32 accumulation, stored to workgroup memory (`sc`);
 *   3. V's rows replace K's in `kvs`; the online softmax in f32 (soft-cap, causal mask and window as the
 *      float kernel, finite sentinels) runs on all lanes, NT / R per row (2 with NVIDIA's M = 16 and 32
 *      lanes), each on every (NT / R)-th column: its partial max through workgroup memory (`red`, one
 *      barrier) gives the row's max m, each lane writes its P = exp(s − m) as f16 (`ph`), keeps its
 *      columns' part of the row sum l (summed over the row's lanes at the end, as llama.cpp's
 *      `flash_attn_cm1` keeps per-thread `Lf`) and rescales its dims of the row of the output accumulator
 *      `ob` (f32 [R × HD] in workgroup memory) by exp(m_old − m);
 *   4. O += P·V: for each of HD / N column blocks, the block of `ob` is loaded as a result matrix,
 *      accumulates BK / K products of left P [M × K] (row-major) and right V [K × N] (row-major) and is
 *      stored back.
 * Five barriers per tile. The KV loop ends at the workgroup's last token (tiles past the diagonal are
 * never read) and starts at the first row's window. The output is ob / l per row.
 *
 * Precision: Q × scale, K, V and P are rounded to f16 (10-bit mantissa; |q·scale|, |k|, |v| above
 * 65,504 would be infinite), the products accumulate in f32, the softmax runs in f32; the row sum l adds
 * the f16-rounded P, so the weights the output divides by are the ones it multiplied.
 *
 * WGSL forms as kernels/mmm-sgmat.ts (the enum-template `subgroupMatrixLoad<T, row_major|col_major>(p,
 * offset, stride)` and `subgroupMatrixStore<row_major>(p, offset, value, stride)`, offsets and strides in
 * elements; result matrices load and store as the left and right ones). Needs `shader-f16`, an f16 → f32
 * configuration whose N and K divide the head size, and {@link sgmatAttentionPlan}'s workgroup memory.
 */
import { capped, kDecl, SENTINEL } from './attention.ts';
import { divisorAtMost, type PrefillAttentionOptions, windowStart } from './attention-prefill.ts';
import { f32Lit, STEP_WGSL } from './common.ts';
import type { SgmatShape } from './mmm-sgmat.ts';

/** An f16 → f32 subgroup-matrix configuration and the subgroup size the kernel is generated for. */
export type SgmatAttentionTile = SgmatShape & { subgroupSize: 32 | 64 };

/** The options of {@link prefillAttentionSgmatWGSL}: the float kernel's, without its layout. */
export type SgmatAttentionOptions = Omit<PrefillAttentionOptions, 'layout'> & {
  tile: SgmatAttentionTile;
  /** KV positions per tile (a multiple of N and K); default the largest of 64, 32, 16 that fits `maxWorkgroupBytes`. */
  kvTile?: number;
  /** Workgroup memory the kernel may use (the device's maxComputeWorkgroupStorageSize; default 16,384). */
  maxWorkgroupBytes?: number;
};

/** The work split of a {@link prefillAttentionSgmatWGSL} kernel (the fields of attention-prefill.ts's `PrefillAttentionPlan`). */
export interface SgmatAttentionPlan {
  headsPerGroup: number;
  groupsPerKvHead: number;
  /** Query tokens per workgroup: the grid's y is ⌈T / tokensPerTile⌉. */
  tokensPerTile: number;
  tokensPerThread: 1;
  kvTile: number;
  lanes: 1;
  threads: number;
  workgroupBytes: number;
}

/** f16 halves of padding after each staged row (keeps rows 16-byte aligned and off one bank). */
const PAD = 8;

/** Workgroup bytes of the kernel for R rows, head size HD, KV tile BK, NT lanes: qh, kvs, ph (f16), sc, ob, red (f32). */
function sgmatAttentionBytes(R: number, HD: number, BK: number, NT: number): number {
  const HS = HD + PAD;
  return 2 * (R * HS + BK * HS + R * (BK + PAD)) + 4 * (R * BK + R * HD + NT);
}

/**
 * Why {@link prefillAttentionSgmatWGSL} does not take this shape and tile, or undefined: the head size
 * must be a multiple of N and K (80 with 16×16×16: yes; with a K of 32: no) and ≤ 256, GQA exact, the
 * subgroup 32 or 64 invocations, M a divisor of the subgroup size.
 */
export function sgmatAttentionProblem(
  o: { nHead: number; nHeadKv: number; headDim: number },
  t: SgmatAttentionTile,
): string | undefined {
  if (o.nHead % o.nHeadKv !== 0) return `${o.nHead} query heads are not a multiple of ${o.nHeadKv} KV heads`;
  if (o.headDim > 256) return `head size ${o.headDim} is above 256`;
  if (o.headDim % t.N !== 0 || o.headDim % t.K !== 0)
    return `head size ${o.headDim} is not a multiple of the configuration's N = ${t.N} and K = ${t.K}`;
  if (t.subgroupSize !== 32 && t.subgroupSize !== 64)
    return `subgroups of ${t.subgroupSize} invocations (the kernel is built for 32 or 64)`;
  if (t.subgroupSize % t.M !== 0)
    return `M = ${t.M} does not divide the subgroup's ${t.subgroupSize} invocations`;
  return undefined;
}

/**
 * The tiles of a {@link prefillAttentionSgmatWGSL} kernel: R = M rows per workgroup (heads of the GQA
 * group = its largest divisor ≤ M, then ⌊M / heads⌋ tokens), one subgroup of threads, the KV tile
 * `o.kvTile` or the largest of 64, 32, 16 (a multiple of N and K) whose workgroup memory fits
 * `o.maxWorkgroupBytes`.
 * @throws Error for a shape or tile {@link sgmatAttentionProblem} names, a kvTile that is not a multiple
 *   of N and K, or when no KV tile fits the workgroup memory.
 */
export function sgmatAttentionPlan(o: SgmatAttentionOptions): SgmatAttentionPlan {
  const t = o.tile;
  const problem = sgmatAttentionProblem(o, t);
  if (problem) throw new Error(`subgroup-matrix prefill attention: ${problem}`);
  const R = t.M;
  const G = o.nHead / o.nHeadKv;
  const GW = divisorAtMost(G, R);
  const max = o.maxWorkgroupBytes ?? 16384;
  const fitsTile = (bk: number) => bk % t.N === 0 && bk % t.K === 0;
  let BK = o.kvTile;
  if (BK !== undefined) {
    if (!Number.isInteger(BK) || BK < 1 || !fitsTile(BK))
      throw new Error(`subgroup-matrix prefill attention: kvTile ${BK} is not a multiple of N and K`);
  } else
    BK = [64, 32, 16].find(
      (bk) => fitsTile(bk) && sgmatAttentionBytes(R, o.headDim, bk, t.subgroupSize) <= max,
    );
  const bytes =
    BK === undefined ? Number.POSITIVE_INFINITY : sgmatAttentionBytes(R, o.headDim, BK, t.subgroupSize);
  if (BK === undefined || bytes > max)
    throw new Error(
      `subgroup-matrix prefill attention: head size ${o.headDim} needs more than ${max} bytes of workgroup memory`,
    );
  return {
    headsPerGroup: GW,
    groupsPerKvHead: G / GW,
    tokensPerTile: Math.floor(R / GW),
    tokensPerThread: 1,
    kvTile: BK,
    lanes: 1,
    threads: t.subgroupSize,
    workgroupBytes: bytes,
  };
}

/** The grid of a {@link prefillAttentionSgmatWGSL} dispatch for T tokens: [nHeadKv · groupsPerKvHead, ⌈T / tokensPerTile⌉]. */
export function sgmatAttentionWorkgroups(o: SgmatAttentionOptions, T: number): [number, number] {
  const p = sgmatAttentionPlan(o);
  return [o.nHeadKv * p.groupsPerKvHead, Math.ceil(T / p.tokensPerTile)];
}

/**
 * The kernel's WGSL (see the file's comment). Bindings as attention-prefill.ts's `prefillAttentionWGSL`:
 * step, q [T, nHead·HD] f32, kc, vc [nCtx, nHeadKv·HD] (`kvType`, `vKvType`), out [T, nHead·HD] f32.
 * Dispatch {@link sgmatAttentionWorkgroups}(o, T).
 * @throws Error as {@link sgmatAttentionPlan}.
 */
export function prefillAttentionSgmatWGSL(o: SgmatAttentionOptions): string {
  const p = sgmatAttentionPlan(o);
  const { M, N, K, subgroupSize: NT } = o.tile;
  const HD = o.headDim;
  const HD4 = HD / 4;
  const HS = HD + PAD;
  const G = o.nHead / o.nHeadKv;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const R = M;
  const GW = p.headsPerGroup;
  const nHG = p.groupsPerKvHead;
  const BQ = p.tokensPerTile;
  const BK = p.kvTile;
  const PS = BK + PAD;
  const LPR = NT / R; // lanes per row of the softmax
  // The tile's BK cache rows (K's, then V's into the same array) as f16, through the cache type's loader
  // (positions past pLast read row pLast: finite, and masked).
  const stage = (
    load: string,
    v: string,
    o4: string,
  ) => `    for (var i = lid; i < ${BK * HD4}u; i += ${NT}u) {
      let c = i / ${HD4}u;
      let d4 = i % ${HD4}u;
      let ${v} = ${load}(min(tile + c, pLast) * ${kvDim}u + kb + 4u * d4);
      let ${o4} = c * ${HS}u + 4u * d4;
      kvs[${o4}] = f16(${v}.x);
      kvs[${o4} + 1u] = f16(${v}.y);
      kvs[${o4} + 2u] = f16(${v}.z);
      kvs[${o4} + 3u] = f16(${v}.w);
    }`;
  const L: string[] = [];
  L.push(`enable f16;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
${kDecl('@group(0) @binding(2)', 'kc', o.kvType)}
${kDecl('@group(0) @binding(3)', 'vc', o.vKvType ?? o.kvType)}
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
const SENT: f32 = ${SENTINEL};
var<workgroup> qh: array<f16, ${R * HS}>; // [row][${HS}]: q · scale
var<workgroup> kvs: array<f16, ${BK * HS}>; // [position][${HS}]: the tile's K rows, then its V rows
var<workgroup> sc: array<f32, ${R * BK}>; // [row][position]: the tile's scores
var<workgroup> ph: array<f16, ${R * PS}>; // [row][${PS}]: the tile's probabilities
var<workgroup> ob: array<f32, ${R * HD}>; // [row][dim]: the output, unnormalised
var<workgroup> red: array<f32, ${NT}>; // [lane]: its part of the row's max, then of l at the end

@compute @workgroup_size(${NT})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let kvh = wg.x / ${nHG}u;
  let h0 = kvh * ${G}u + (wg.x % ${nHG}u) * ${GW}u;
  let t0 = wg.y * ${BQ}u;
  let pFirst = step.pos0 + t0;
  let pLast = step.pos0 + min(t0 + ${BQ}u, step.nTokens) - 1u;
  let kb = kvh * ${HD}u;
  // Rows r = (token r / ${GW}, head h0 + r % ${GW}); rows past the batch (or the ${BQ * GW} rows of the
  // tile) hold zeros and are never stored.
  for (var i = lid; i < ${R * HD4}u; i += ${NT}u) {
    let r = i / ${HD4}u;
    let d4 = i % ${HD4}u;
    let tok = r / ${GW}u;
    var v = vec4<f32>(0.0);
    if (tok < ${BQ}u && t0 + tok < step.nTokens) {
      v = q[((t0 + tok) * ${qDim}u + (h0 + r % ${GW}u) * ${HD}u) / 4u + d4] * ${f32Lit(o.scale)};
    }
    let qo = r * ${HS}u + 4u * d4;
    qh[qo] = f16(v.x);
    qh[qo + 1u] = f16(v.y);
    qh[qo + 2u] = f16(v.z);
    qh[qo + 3u] = f16(v.w);
    let oo = r * ${HD}u + 4u * d4;
    ob[oo] = 0.0;
    ob[oo + 1u] = 0.0;
    ob[oo + 2u] = 0.0;
    ob[oo + 3u] = 0.0;
  }
  // Lane lid serves row lr (its running max m, and l over the lane's columns lc + ${LPR}j) at the row's
  // position (rows past the batch: the last token's).
  let lr = lid / ${LPR}u;
  let lc = lid % ${LPR}u;
  let myPos = step.pos0 + min(t0 + min(lr / ${GW}u, ${BQ - 1}u), step.nTokens - 1u);
  var m = SENT;
  var l = 0.0;
  workgroupBarrier();
  for (var tile = ${windowStart(o.window, BK)}; tile <= pLast; tile += ${BK}u) {
    // 1. K's rows (positions past pLast read row pLast: finite, and masked).
${stage('ld_kc4', 'kv4', 'ko')}
    workgroupBarrier();
    // 2. S = Q·Kᵀ, a result matrix per N positions (loops of constant bounds: the compiler unrolls them;
    // the zero value is explicit: a bare var in a loop kept the last tile's sums on SwiftShader).
    for (var n = 0u; n < ${BK / N}u; n++) {
      var acc = subgroup_matrix_result<f32, ${N}, ${M}>();
      for (var kk = 0u; kk < ${HD / K}u; kk++) {
        let qo = kk * ${K}u;
        let ko = n * ${N * HS}u + kk * ${K}u;
        acc = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<subgroup_matrix_left<f16, ${K}, ${M}>, row_major>(&qh, qo, ${HS}u), subgroupMatrixLoad<subgroup_matrix_right<f16, ${N}, ${K}>, col_major>(&kvs, ko, ${HS}u), acc);
      }
      let so = n * ${N}u;
      subgroupMatrixStore<row_major>(&sc, so, acc, ${BK}u);
    }`);
  const masked = `tile + c > myPos${o.window ? ` || tile + c + ${o.window}u <= myPos` : ''}`;
  L.push(`    workgroupBarrier();
    // 3. V's rows replace K's; the online softmax on ${LPR} lanes per row (row lr = lid / ${LPR}, its columns
    // and output dims lc + ${LPR}j): each lane's max of its soft-capped, masked scores to red.
${stage('ld_vc4', 'vv4', 'vo')}
    var pm = SENT;
    for (var j = 0u; j < ${BK / LPR}u; j++) {
      let c = lc + ${LPR}u * j;
      var s = ${capped(`sc[lr * ${BK}u + c]`, o.softcap)};
      if (${masked}) { s = SENT; }
      sc[lr * ${BK}u + c] = s;
      pm = max(pm, s);
    }
    red[lid] = pm;
    workgroupBarrier();
    // The row's max over its lanes (each lane gets the same), P = exp(s − m) as f16, the lane's part of l
    // and of the output row rescaled by exp(m_old − m).
    var mx = m;
    for (var j = 0u; j < ${LPR}u; j++) { mx = max(mx, red[lr * ${LPR}u + j]); }
    let f = exp(m - mx);
    m = mx;
    var sum = 0.0;
    for (var j = 0u; j < ${BK / LPR}u; j++) {
      let c = lc + ${LPR}u * j;
      let pr = f16(exp(sc[lr * ${BK}u + c] - m));
      ph[lr * ${PS}u + c] = pr;
      sum += f32(pr);
    }
    l = l * f + sum;
    for (var j = 0u; j < ${HD / LPR}u; j++) { ob[lr * ${HD}u + lc + ${LPR}u * j] *= f; }
    workgroupBarrier();
    // 4. O += P·V, a result matrix per N dims, loaded from and stored back to the accumulator.
    for (var n = 0u; n < ${HD / N}u; n++) {
      let oo = n * ${N}u;
      var acc = subgroupMatrixLoad<subgroup_matrix_result<f32, ${N}, ${M}>, row_major>(&ob, oo, ${HD}u);
      for (var kk = 0u; kk < ${BK / K}u; kk++) {
        let po = kk * ${K}u;
        let vo = kk * ${K * HS}u + n * ${N}u;
        acc = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<subgroup_matrix_left<f16, ${K}, ${M}>, row_major>(&ph, po, ${PS}u), subgroupMatrixLoad<subgroup_matrix_right<f16, ${N}, ${K}>, row_major>(&kvs, vo, ${HS}u), acc);
      }
      subgroupMatrixStore<row_major>(&ob, oo, acc, ${HD}u);
    }`);
  L.push(`    workgroupBarrier();
  }
  // l of row r: the sum of its lanes' parts.
  red[lid] = l;
  workgroupBarrier();
  for (var i = lid; i < ${R * HD}u; i += ${NT}u) {
    let r = i / ${HD}u;
    let tok = r / ${GW}u;
    if (tok < ${BQ}u && t0 + tok < step.nTokens) {
      var lsum = 0.0;
      for (var j = 0u; j < ${LPR}u; j++) { lsum += red[r * ${LPR}u + j]; }
      out[(t0 + tok) * ${qDim}u + (h0 + r % ${GW}u) * ${HD}u + i % ${HD}u] = ob[i] / lsum;
    }
  }
}`);
  return L.join('\n');
}
