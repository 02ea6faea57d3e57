/**
 * Causal grouped-query attention over the KV cache (scaled dot product, softmax, weighted sum of V).
 *
 * Shapes: q [T, nHead·headDim]; kCache, vCache [nCtx, nHeadKv·headDim] (one layer); out [T, nHead·headDim].
 * Query head h reads KV head h / (nHead / nHeadKv) (GQA, as llama.cpp). Token t of the batch sits at
 * position pos0 + t and attends to positions 0..pos0 + t.
 *
 * One workgroup per (head, token). Each of the 64 threads runs an online softmax (Milakov & Gimelshein,
 * 2018) over a strided subset of positions, keeping (max, sum, acc[headDim]); the partials are then merged
 * in workgroup memory. Scores use finite sentinels, never ±Inf (WGSL leaves Inf arithmetic indeterminate).
 */
import { f32Lit, STEP_WGSL, WG } from './common.ts';

export interface AttentionOptions {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** Softmax scale, normally 1/sqrt(headDim). */
  scale: number;
  /** Threads per workgroup (default {@link attentionWorkgroupSize}); small values suit software adapters. */
  threads?: number;
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

/** Bindings: 0 step, 1 q, 2 kCache, 3 vCache, 4 out. Dispatch (nHead, T). */
export function attentionWGSL(o: AttentionOptions): string {
  const HD = o.headDim;
  const qDim = o.nHead * HD;
  const kvDim = o.nHeadKv * HD;
  const group = o.nHead / o.nHeadKv;
  const W = o.threads ?? attentionWorkgroupSize(HD);
  // One barrier: every thread publishes (m, l, acc); threads d < HD merge column d over all threads.
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> kc: array<f32>;
@group(0) @binding(3) var<storage, read> vc: array<f32>;
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
  var qv: array<f32, ${HD}>;
  for (var d = 0u; d < HD; d++) { qv[d] = q[t * ${qDim}u + h * HD + d] * ${f32Lit(o.scale)}; }
  var m = -1.0e30;
  var l = 0.0;
  var acc: array<f32, ${HD}>;
  for (var j = lid; j <= pos; j += W) {
    let kb = j * ${kvDim}u + kvh * HD;
    var s = 0.0;
    for (var d = 0u; d < HD; d++) { s += qv[d] * kc[kb + d]; }
    let mn = max(m, s);
    let c = exp(m - mn);
    let p = exp(s - mn);
    l = l * c + p;
    for (var d = 0u; d < HD; d++) { acc[d] = acc[d] * c + p * vc[kb + d]; }
    m = mn;
  }
  sm[lid] = m;
  sl[lid] = l;
  for (var d = 0u; d < HD; d++) { sacc[lid * HD + d] = acc[d]; }
  workgroupBarrier();
  if (lid < HD) {
    var mAll = -1.0e30;
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
