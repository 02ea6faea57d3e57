/**
 * Greedy sampling on the GPU: the index of the largest logit (lowest index on ties, as llama.cpp's
 * greedy sampler). Shapes: logits [nVocab] f32 → out [1] u32. One workgroup of 256 threads.
 */

const AWG = 256;

/** Bindings: 0 logits, 1 out. Dispatch (1). */
export function argmaxWGSL(o: { nVocab: number }): string {
  return `@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
var<workgroup> bv: array<f32, ${AWG}>;
var<workgroup> bi: array<u32, ${AWG}>;
@compute @workgroup_size(${AWG})
fn main(@builtin(local_invocation_index) lid: u32) {
  var best = -3.0e38;
  var bidx = 0xffffffffu;
  for (var i = lid; i < ${o.nVocab}u; i += ${AWG}u) {
    let v = logits[i];
    if (v > best) { best = v; bidx = i; }
  }
  bv[lid] = best;
  bi[lid] = bidx;
  workgroupBarrier();
  for (var off = ${AWG / 2}u; off > 0u; off >>= 1u) {
    if (lid < off) {
      let ov = bv[lid + off];
      let oi = bi[lid + off];
      if (ov > bv[lid] || (ov == bv[lid] && oi < bi[lid])) { bv[lid] = ov; bi[lid] = oi; }
    }
    workgroupBarrier();
  }
  if (lid == 0u) { out[0] = bi[0]; }
}`;
}
