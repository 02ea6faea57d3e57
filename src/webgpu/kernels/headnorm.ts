/**
 * Per-head RMSNorm of Q and K followed by RoPE (qwen3's `attn_q_norm`/`attn_k_norm`, as llama.cpp's
 * qwen3 graph: Q = rope(rms_norm(Q_head) · q_norm), same for K). Runs after the QKV kernel, which then
 * stores Q unrotated and K unrotated in `k_new`. Shapes: q [T, nHead·headDim] in place; k_new
 * [T, nHeadKv·headDim] f32 → kCache [nCtx, nHeadKv·headDim] rows pos0..pos0+T−1 (f32, or f16 pairs in
 * u32, rounded once); qNorm, kNorm [headDim]; rope [nCtx, ropeDim/2]
 * (cos, sin). Heads are in the slot order of kernels/llama-ops.ts `headSlotDims` (pair i in slots 2i,
 * 2i + 1).
 * Dispatch (nHead + nHeadKv, T): workgroup h < nHead normalises query head h, the others KV heads.
 */
import type { KvType } from '../../core/types.ts';
import { f32Lit, STEP_WGSL, type WeightType, wgslArrayType } from './common.ts';
import { isQuantKv } from './kv-quant.ts';
import { wgslLoader } from './loader.ts';

const HWG = 64;

/** Bindings: 0 step, 1 q, 2 kCache, 3 qNorm, 4 kNorm, 5 rope, 6 k_new. */
export function qkNormRopeWGSL(o: {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  ropeDim: number;
  neox: boolean;
  eps: number;
  normType: WeightType;
  /**
   * KV-cache element type (default f32). Q8_0/Q4_0: Q and K heads are in their natural order (not
   * headSlotDims'), and K is normalised and rotated in place in `k_new`, which kernels/kv-quant.ts then
   * quantizes into the cache (no `kc` binding).
   */
  kvType?: KvType;
}): string {
  if (isQuantKv(o.kvType ?? 'f32')) return qkNormRopeNaturalWGSL(o);
  const f16 = o.kvType === 'f16';
  const HD = o.headDim;
  const half = HD / 2;
  const RD = o.ropeDim;
  const ia = o.neox ? `select(2u * i, i, 2u * i < ${RD}u)` : '2u * i';
  const ib = o.neox ? `select(2u * i + 1u, i + ${RD / 2}u, 2u * i < ${RD}u)` : '2u * i + 1u';
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> kc: array<${f16 ? 'u32' : 'f32'}>;
@group(0) @binding(6) var<storage, read> k_new: array<f32>;
@group(0) @binding(3) var<storage, read> qn: ${wgslArrayType(o.normType)};
@group(0) @binding(4) var<storage, read> kn: ${wgslArrayType(o.normType)};
@group(0) @binding(5) var<storage, read> rope: array<vec2<f32>>;
${wgslLoader('qn', o.normType)}
${wgslLoader('kn', o.normType)}
var<workgroup> red: array<f32, ${HWG}>;
// Pair i (slots 2i, 2i + 1) of the head starting at element base.
fn ld(isQ: bool, base: u32, i: u32) -> vec2<f32> {
  if (isQ) { return vec2<f32>(q[base + 2u * i], q[base + 2u * i + 1u]); }
  return vec2<f32>(k_new[base + 2u * i], k_new[base + 2u * i + 1u]);
}
fn st(isQ: bool, base: u32, cb: u32, i: u32, v: vec2<f32>) {
  if (isQ) { q[base + 2u * i] = v.x; q[base + 2u * i + 1u] = v.y; return; }
  ${f16 ? 'kc[cb / 2u + i] = pack2x16float(v);' : 'kc[cb + 2u * i] = v.x; kc[cb + 2u * i + 1u] = v.y;'}
}

@compute @workgroup_size(${HWG})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y;
  let pos = step.pos0 + t;
  let isQ = wg.x < ${o.nHead}u;
  // base: the head in q [T, qDim] or k_new [T, kvDim]; cb: the K head's row pos in the cache.
  var base: u32;
  let cb = pos * ${o.nHeadKv * HD}u + (wg.x - ${o.nHead}u) * ${HD}u;
  if (isQ) { base = t * ${o.nHead * HD}u + wg.x * ${HD}u; } else { base = t * ${o.nHeadKv * HD}u + (wg.x - ${o.nHead}u) * ${HD}u; }
  var s = 0.0;
  for (var i = lid; i < ${half}u; i += ${HWG}u) { let v = ld(isQ, base, i); s += dot(v, v); }
  red[lid] = s;
  workgroupBarrier();
  var tot = 0.0;
  for (var j = 0u; j < ${HWG}u; j++) { tot += red[j]; }
  let inv = inverseSqrt(tot / ${HD}.0 + ${f32Lit(o.eps)});
  for (var i = lid; i < ${half}u; i += ${HWG}u) {
    let a = ${ia};
    let b = ${ib};
    let v = ld(isQ, base, i) * inv;
    var x0: f32; var x1: f32;
    if (isQ) { x0 = v.x * ld_qn(a); x1 = v.y * ld_qn(b); } else { x0 = v.x * ld_kn(a); x1 = v.y * ld_kn(b); }
    var o0 = x0; var o1 = x1;
    if (2u * i < ${RD}u) { let cs = rope[pos * ${RD / 2}u + i]; o0 = x0 * cs.x - x1 * cs.y; o1 = x0 * cs.y + x1 * cs.x; }
    st(isQ, base, cb, i, vec2<f32>(o0, o1));
  }
}`;
}

/** {@link qkNormRopeWGSL} for a quantized K cache: natural head order, K rotated in place in k_new. */
function qkNormRopeNaturalWGSL(o: Parameters<typeof qkNormRopeWGSL>[0]): string {
  const HD = o.headDim;
  const half = HD / 2;
  const RD = o.ropeDim;
  const ia = o.neox ? `select(2u * i, i, 2u * i < ${RD}u)` : '2u * i';
  const ib = o.neox ? `select(2u * i + 1u, i + ${RD / 2}u, 2u * i < ${RD}u)` : '2u * i + 1u';
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_new: array<f32>;
@group(0) @binding(3) var<storage, read> qn: ${wgslArrayType(o.normType)};
@group(0) @binding(4) var<storage, read> kn: ${wgslArrayType(o.normType)};
@group(0) @binding(5) var<storage, read> rope: array<vec2<f32>>;
${wgslLoader('qn', o.normType)}
${wgslLoader('kn', o.normType)}
var<workgroup> red: array<f32, ${HWG}>;
// Head dims (a, b) of the head starting at element base.
fn ld(isQ: bool, base: u32, a: u32, b: u32) -> vec2<f32> {
  if (isQ) { return vec2<f32>(q[base + a], q[base + b]); }
  return vec2<f32>(k_new[base + a], k_new[base + b]);
}
fn st(isQ: bool, base: u32, a: u32, b: u32, v: vec2<f32>) {
  if (isQ) { q[base + a] = v.x; q[base + b] = v.y; return; }
  k_new[base + a] = v.x; k_new[base + b] = v.y;
}

@compute @workgroup_size(${HWG})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y;
  let pos = step.pos0 + t;
  let isQ = wg.x < ${o.nHead}u;
  var base: u32;
  if (isQ) { base = t * ${o.nHead * HD}u + wg.x * ${HD}u; } else { base = t * ${o.nHeadKv * HD}u + (wg.x - ${o.nHead}u) * ${HD}u; }
  var s = 0.0;
  for (var i = lid; i < ${half}u; i += ${HWG}u) { let v = ld(isQ, base, ${ia}, ${ib}); s += dot(v, v); }
  red[lid] = s;
  workgroupBarrier();
  var tot = 0.0;
  for (var j = 0u; j < ${HWG}u; j++) { tot += red[j]; }
  let inv = inverseSqrt(tot / ${HD}.0 + ${f32Lit(o.eps)});
  for (var i = lid; i < ${half}u; i += ${HWG}u) {
    let a = ${ia};
    let b = ${ib};
    let v = ld(isQ, base, a, b) * inv;
    var x0: f32; var x1: f32;
    if (isQ) { x0 = v.x * ld_qn(a); x1 = v.y * ld_qn(b); } else { x0 = v.x * ld_kn(a); x1 = v.y * ld_kn(b); }
    var o0 = x0; var o1 = x1;
    if (2u * i < ${RD}u) { let cs = rope[pos * ${RD / 2}u + i]; o0 = x0 * cs.x - x1 * cs.y; o1 = x0 * cs.y + x1 * cs.x; }
    st(isQ, base, a, b, vec2<f32>(o0, o1));
  }
}`;
}
