struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> part_o: array<vec2<f32>>;
@group(0) @binding(2) var<storage, read> part_ml: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec2<f32>>;
var<workgroup> red: array<f32, 64>;
var<workgroup> wts: array<f32, 256>;
var<workgroup> acc: array<vec2<f32>, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wg.x / 2u;
  let slice = wg.x % 2u;
  let t = wg.y;
  let len = step.pos0 + step.nTokens;
  let nSplit = min((len + step.p2 - 1u) / step.p2, 256u);
  let nRed = min(nSplit, 64u);
  var m = -1.0e30;
  for (var s = lid; s < nSplit; s += 64u) { m = max(m, part_ml[(s * 1u + t) * 8u + h].x); }
  red[lid] = m;
  workgroupBarrier();
  var mAll = -1.0e30;
  for (var k = 0u; k < nRed; k++) { mAll = max(mAll, red[k]); }
  workgroupBarrier();
  var l = 0.0;
  for (var s = lid; s < nSplit; s += 64u) {
    let ml = part_ml[(s * 1u + t) * 8u + h];
    let w = exp(ml.x - mAll);
    wts[s] = w;
    l += ml.y * w;
  }
  red[lid] = l;
  workgroupBarrier();
  var lAll = 0.0;
  for (var k = 0u; k < nRed; k++) { lAll += red[k]; }
  // Dimension pair dp of this slice, chunks g, g + 4, …
  let g = lid / 16u;
  let dp = slice * 16u + lid % 16u;
  var a = vec2<f32>(0.0);
  if (g < 4u && dp < 32u) {
    for (var s = g; s < nSplit; s += 4u) { a += part_o[((s * 1u + t) * 512u + h * 64u) / 2u + dp] * wts[s]; }
  }
  acc[lid] = a;
  workgroupBarrier();
  if (g == 0u && dp < 32u) {
    var sum = a;
    for (var k = 1u; k < 4u; k++) { sum += acc[k * 16u + lid]; }
    out[(t * 512u + h * 64u) / 2u + dp] = sum / lAll;
  }
}