/**
 * Per-head RMSNorm of Q and K followed by RoPE (qwen3's `attn_q_norm`/`attn_k_norm`, as llama.cpp's
 * qwen3 graph: Q = rope(rms_norm(Q_head) · q_norm), same for K). Runs after the QKV kernel, which then
 * stores Q and K unrotated. Shapes: q [T, nHead·headDim] in place; kCache [nCtx, nHeadKv·headDim] rows
 * pos0..pos0+T−1 in place; qNorm, kNorm [headDim]; rope [nCtx, ropeDim/2] (cos, sin).
 * Dispatch (nHead + nHeadKv, T): workgroup h < nHead normalises query head h, the others KV heads.
 */
import { f32Lit, STEP_WGSL, type WeightType, wgslArrayType, wgslLoader } from './common.ts';

const HWG = 64;

/** Bindings: 0 step, 1 q, 2 kCache, 3 qNorm, 4 kNorm, 5 rope. */
export function qkNormRopeWGSL(o: {
  nHead: number;
  nHeadKv: number;
  headDim: number;
  ropeDim: number;
  neox: boolean;
  eps: number;
  normType: WeightType;
}): string {
  const HD = o.headDim;
  const half = HD / 2;
  const RD = o.ropeDim;
  const ia = o.neox ? `select(2u * i, i, 2u * i < ${RD}u)` : '2u * i';
  const ib = o.neox ? `select(2u * i + 1u, i + ${RD / 2}u, 2u * i < ${RD}u)` : '2u * i + 1u';
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> kc: array<f32>;
@group(0) @binding(3) var<storage, read> qn: ${wgslArrayType(o.normType)};
@group(0) @binding(4) var<storage, read> kn: ${wgslArrayType(o.normType)};
@group(0) @binding(5) var<storage, read> rope: array<vec2<f32>>;
${wgslLoader('qn', o.normType)}
${wgslLoader('kn', o.normType)}
var<workgroup> red: array<f32, ${HWG}>;

@compute @workgroup_size(${HWG})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y;
  let pos = step.pos0 + t;
  let isQ = wg.x < ${o.nHead}u;
  var base: u32;
  if (isQ) { base = t * ${o.nHead * HD}u + wg.x * ${HD}u; } else { base = pos * ${o.nHeadKv * HD}u + (wg.x - ${o.nHead}u) * ${HD}u; }
  var s = 0.0;
  for (var d = lid; d < ${HD}u; d += ${HWG}u) {
    var v: f32;
    if (isQ) { v = q[base + d]; } else { v = kc[base + d]; }
    s += v * v;
  }
  red[lid] = s;
  workgroupBarrier();
  var tot = 0.0;
  for (var j = 0u; j < ${HWG}u; j++) { tot += red[j]; }
  let inv = inverseSqrt(tot / ${HD}.0 + ${f32Lit(o.eps)});
  for (var i = lid; i < ${half}u; i += ${HWG}u) {
    let a = ${ia};
    let b = ${ib};
    var x0: f32; var x1: f32;
    if (isQ) {
      x0 = q[base + a] * inv * ld_qn(a); x1 = q[base + b] * inv * ld_qn(b);
    } else {
      x0 = kc[base + a] * inv * ld_kn(a); x1 = kc[base + b] * inv * ld_kn(b);
    }
    var o0 = x0; var o1 = x1;
    if (2u * i < ${RD}u) { let cs = rope[pos * ${RD / 2}u + i]; o0 = x0 * cs.x - x1 * cs.y; o1 = x0 * cs.y + x1 * cs.x; }
    if (isQ) { q[base + a] = o0; q[base + b] = o1; } else { kc[base + a] = o0; kc[base + b] = o1; }
  }
}`;
}
