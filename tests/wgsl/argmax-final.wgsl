@group(0) @binding(0) var<storage, read> partials: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
var<workgroup> bv: array<f32, 64>;
var<workgroup> bi: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let row = wg.y;
  var best = -3.0e38;
  var bidx = 0xffffffffu;
  // Parts lid, lid + 64, …: their indices increase, so a strict > keeps the lowest of a tie.
  for (var p = lid; p < 32u; p += 64u) {
    let at = (row * 32u + p) * 2u;
    let v = bitcast<f32>(partials[at]);
    if (v > best) { best = v; bidx = partials[at + 1u]; }
  }
  bv[lid] = best;
  bi[lid] = bidx;
  workgroupBarrier();
  for (var s = 32u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let v = bv[lid + s];
      let k = bi[lid + s];
      if (v > bv[lid] || (v == bv[lid] && k < bi[lid])) { bv[lid] = v; bi[lid] = k; }
    }
    workgroupBarrier();
  }
  if (lid == 0u) { out[row] = bi[0]; }
}