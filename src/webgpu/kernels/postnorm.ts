/**
 * Gemma's post-norms with the residual add (src/models/gemma2.cpp, gemma3.cpp: `cur =
 * build_norm(cur, attn_post_norm | ffn_post_norm, LLM_NORM_RMS); x = cur + x`):
 *   x[t, :] += y[t, :] / sqrt(mean(y[t, :]²) + eps) · w
 * Shapes: y [T, n] f32 (the attn_output or ffn_down matmul's plain store), w [n] (norm weight), x [T, n]
 * the residual stream. Dispatch (1, T): one workgroup of 64 threads per token.
 */
import { f32Lit, STEP_WGSL, type WeightType, wgslArrayType } from './common.ts';
import { wgslLoader } from './loader.ts';

const PWG = 64;

/** Bindings: 0 step, 1 y, 2 w, 3 x. */
export function rmsNormAddWGSL(o: { n: number; eps: number; normType: WeightType }): string {
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> w: ${wgslArrayType(o.normType)};
@group(0) @binding(3) var<storage, read_write> x: array<f32>;
${wgslLoader('w', o.normType)}
var<workgroup> red: array<f32, ${PWG}>;

@compute @workgroup_size(${PWG})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y;
  if (t >= step.nTokens) { return; }
  let base = t * ${o.n}u;
  var s = 0.0;
  for (var i = lid; i < ${o.n}u; i += ${PWG}u) { let v = y[base + i]; s += v * v; }
  red[lid] = s;
  workgroupBarrier();
  var tot = 0.0;
  for (var j = 0u; j < ${PWG}u; j++) { tot += red[j]; }
  let inv = inverseSqrt(tot / ${o.n}.0 + ${f32Lit(o.eps)});
  for (var i = lid; i < ${o.n}u; i += ${PWG}u) { x[base + i] += y[base + i] * inv * ld_w(i); }
}`;
}
