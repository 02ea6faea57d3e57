@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
var<workgroup> bv: array<f32, 64>;
var<workgroup> bi: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32) {
  var best = -3.0e38;
  var bidx = 0xffffffffu;
  for (var i = lid; i < 32000u; i += 64u) {
    let v = logits[i];
    if (v > best) { best = v; bidx = i; }
  }
  bv[lid] = best;
  bi[lid] = bidx;
  workgroupBarrier();
  if (lid == 0u) {
    var v = bv[0];
    var k = bi[0];
    for (var i = 1u; i < 64u; i++) {
      if (bv[i] > v || (bv[i] == v && bi[i] < k)) { v = bv[i]; k = bi[i]; }
    }
    out[0] = k;
  }
}