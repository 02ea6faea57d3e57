@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> partials: array<u32>;
var<workgroup> bv: array<f32, 64>;
var<workgroup> bi: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let part = wg.x;
  let row = wg.y;
  let base = row * 32000u;
  let end = min((part + 1u) * 1024u, 32000u);
  var best = -3.0e38;
  var bidx = 0xffffffffu;
  // Each thread's indices increase, so a strict > keeps its lowest index of a tie.
  for (var i = part * 1024u + lid; i < end; i += 64u) {
    let v = logits[base + i];
    if (v > best) { best = v; bidx = i; }
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
  if (lid == 0u) {
    let at = (row * 32u + part) * 2u;
    partials[at] = bitcast<u32>(bv[0]);
    partials[at + 1u] = bi[0];
  }
}