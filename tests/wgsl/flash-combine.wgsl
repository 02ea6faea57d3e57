struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> part_o: array<f32>;
@group(0) @binding(2) var<storage, read> part_ml: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
const HD: u32 = 64u;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let h = wg.x;
  let t = wg.y;
  let len = step.pos0 + step.nTokens;
  let nSplit = (len + step.p2 - 1u) / step.p2;
  var mAll = -1.0e30;
  for (var s = 0u; s < nSplit; s++) { mAll = max(mAll, part_ml[(s * 1u + t) * 8u + h].x); }
  var lAll = 0.0;
  for (var s = 0u; s < nSplit; s++) {
    let ml = part_ml[(s * 1u + t) * 8u + h];
    lAll += ml.y * exp(ml.x - mAll);
  }
  for (var d = lid; d < 64u; d += 64u) {
    var a = 0.0;
    for (var s = 0u; s < nSplit; s++) {
      let ml = part_ml[(s * 1u + t) * 8u + h];
      a += part_o[(s * 1u + t) * 512u + h * HD + d] * exp(ml.x - mAll);
    }
    out[t * 512u + h * HD + d] = a / lAll;
  }
}