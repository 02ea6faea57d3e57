/**
 * RMSNorm kernels outside the matmuls: {@link rmsNormRowsWGSL}, a prefill batch's input norm written out
 * once for the matmuls that follow (software adapters), and {@link rmsNormAddWGSL}, Gemma's post-norms.
 */
import { f32Lit, STEP_WGSL, type WeightType, wgslArrayType } from './common.ts';
import { wgslLoader } from './loader.ts';

const PWG = 64;

/**
 * Gemma's post-norms with the residual add (src/models/gemma2.cpp, gemma3.cpp: `cur =
 * build_norm(cur, attn_post_norm | ffn_post_norm, LLM_NORM_RMS); x = cur + x`):
 *   x[t, :] += y[t, :] / sqrt(mean(y[t, :]²) + eps) · w
 * Shapes: y [T, n] f32 (the attn_output or ffn_down matmul's plain store), w [n] (norm weight), x [T, n]
 * the residual stream. Dispatch (1, T): one workgroup of 64 threads per token.
 * Bindings: 0 step, 1 y, 2 w, 3 x.
 */
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

/**
 * The input RMSNorm of a prefill batch, written out once for the Q/K/V or gate/up matmuls that follow
 * (llama.cpp's llm_build_norm with LLM_NORM_RMS: `ggml_rms_norm`, then `ggml_mul` by the weight):
 *   xn[t, :] = x[t, :] / sqrt(mean(x[t, :]²) + eps) · w
 * Shapes: x [T, n] f32 (the residual stream), w [n] (the norm weight, any type kernels/loader.ts reads),
 * xn [T, n] f32. One thread per token, `threads` per workgroup, no workgroup memory and no barrier (made for
 * software adapters, where the matmuls' own fused norm cost a quarter of their time and a barrier costs
 * ~20 µs per workgroup). Dispatch (1, ⌈T / threads⌉). Bindings: 0 step, 1 x, 2 w, 3 xn.
 * @throws Error when n is not a positive multiple of 4 or threads is not 1..256.
 */
export function rmsNormRowsWGSL(o: {
  n: number;
  eps: number;
  normType: WeightType;
  threads: number;
}): string {
  if (!Number.isInteger(o.n) || o.n <= 0 || o.n % 4 !== 0)
    throw new Error(`rmsNormRowsWGSL: n must be a positive multiple of 4 (got ${o.n})`);
  if (!Number.isInteger(o.threads) || o.threads < 1 || o.threads > 256)
    throw new Error(`rmsNormRowsWGSL: threads must be 1..256 (got ${o.threads})`);
  const n4 = o.n / 4;
  return `${STEP_WGSL}
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: ${wgslArrayType(o.normType)};
@group(0) @binding(3) var<storage, read_write> xn: array<vec4<f32>>;
${wgslLoader('w', o.normType)}

@compute @workgroup_size(${o.threads})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y * ${o.threads}u + lid;
  if (t >= step.nTokens) { return; }
  let base = t * ${n4}u;
  var s = vec4<f32>(0.0);
  for (var i = 0u; i < ${n4}u; i++) { let v = x[base + i]; s += v * v; }
  let inv = inverseSqrt((s.x + s.y + s.z + s.w) / ${o.n}.0 + ${f32Lit(o.eps)});
  for (var i = 0u; i < ${n4}u; i++) {
    let g = vec4<f32>(ld_w(4u * i), ld_w(4u * i + 1u), ld_w(4u * i + 2u), ld_w(4u * i + 3u));
    xn[base + i] = x[base + i] * inv * g;
  }
}`;
}
