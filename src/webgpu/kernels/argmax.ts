/**
 * Greedy sampling on the GPU: the index of the largest logit (lowest index on ties, as llama.cpp's
 * greedy sampler). Shapes: logits [nVocab] f32 → out [1] u32. One workgroup of 256 threads.
 */

const AWG = 64;

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
  if (lid == 0u) {
    var v = bv[0];
    var k = bi[0];
    for (var i = 1u; i < ${AWG}u; i++) {
      if (bv[i] > v || (bv[i] == v && bi[i] < k)) { v = bv[i]; k = bi[i]; }
    }
    out[0] = k;
  }
}`;
}

/**
 * The greedy choice at each of several positions (speculative decoding's verify step): row r's argmax
 * (lowest index on ties, as {@link argmaxWGSL}). Shapes: logits [nRows, nVocab] f32 → out [nRows] u32.
 * Bindings: 0 logits, 1 out. Dispatch (nRows): one workgroup per row.
 */
export function argmaxRowsWGSL(o: { nVocab: number }): string {
  return `@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
var<workgroup> bv: array<f32, ${AWG}>;
var<workgroup> bi: array<u32, ${AWG}>;
@compute @workgroup_size(${AWG})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let row = wg.x;
  let base = row * ${o.nVocab}u;
  var best = -3.0e38;
  var bidx = 0xffffffffu;
  for (var i = lid; i < ${o.nVocab}u; i += ${AWG}u) {
    let v = logits[base + i];
    if (v > best) { best = v; bidx = i; }
  }
  bv[lid] = best;
  bi[lid] = bidx;
  workgroupBarrier();
  if (lid == 0u) {
    var v = bv[0];
    var k = bi[0];
    for (var i = 1u; i < ${AWG}u; i++) {
      if (bv[i] > v || (bv[i] == v && bi[i] < k)) { v = bv[i]; k = bi[i]; }
    }
    out[row] = k;
  }
}`;
}
