struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> xn: array<vec4<f32>>;
fn ld_w(i: u32) -> f32 { return w[i]; }

@compute @workgroup_size(16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let t = wg.y * 16u + lid;
  if (t >= step.nTokens) { return; }
  let base = t * 128u;
  var s = vec4<f32>(0.0);
  for (var i = 0u; i < 128u; i++) { let v = x[base + i]; s += v * v; }
  let inv = inverseSqrt((s.x + s.y + s.z + s.w) / 512.0 + 1.000000000e-5f);
  for (var i = 0u; i < 128u; i++) {
    let g = vec4<f32>(ld_w(4u * i), ld_w(4u * i + 1u), ld_w(4u * i + 2u), ld_w(4u * i + 3u));
    xn[base + i] = x[base + i] * inv * g;
  }
}