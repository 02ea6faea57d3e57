struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> kc: array<u32>;
fn kc_h(b: u32) -> u32 { return (kc[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu; }
fn kc_w(b: u32) -> u32 {
  let w = b >> 2u;
  if ((b & 2u) == 0u) { return kc[w]; }
  return (kc[w] >> 16u) | (kc[w + 1u] << 16u);
}
fn ld_kc4(i: u32) -> vec4<f32> {
  let b = (i >> 5u) * 34u;
  let w = kc_w(b + 2u + (i & 31u));
  let q = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w)) >> vec4<u32>(24u);
  return vec4<f32>(q) * unpack2x16float(kc_h(b)).x;
}
fn ld_kc2(i: u32) -> vec2<f32> {
  let b = (i >> 5u) * 34u;
  let h = kc_h(b + 2u + (i & 31u));
  let q = vec2<i32>(bitcast<i32>(h << 24u), bitcast<i32>(h << 16u)) >> vec2<u32>(24u);
  return vec2<f32>(q) * unpack2x16float(kc_h(b)).x;
}
@group(0) @binding(3) var<storage, read> vc: array<u32>;
fn vc_h(b: u32) -> u32 { return (vc[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu; }
fn vc_w(b: u32) -> u32 {
  let w = b >> 2u;
  if ((b & 2u) == 0u) { return vc[w]; }
  return (vc[w] >> 16u) | (vc[w + 1u] << 16u);
}
fn ld_vc4(i: u32) -> vec4<f32> {
  let b = (i >> 5u) * 34u;
  let w = vc_w(b + 2u + (i & 31u));
  let q = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w)) >> vec4<u32>(24u);
  return vec4<f32>(q) * unpack2x16float(vc_h(b)).x;
}
fn ld_vc2(i: u32) -> vec2<f32> {
  let b = (i >> 5u) * 34u;
  let h = vc_h(b + 2u + (i & 31u));
  let q = vec2<i32>(bitcast<i32>(h << 24u), bitcast<i32>(h << 16u)) >> vec2<u32>(24u);
  return vec2<f32>(q) * unpack2x16float(vc_h(b)).x;
}
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
const SENT: f32 = -1.0e30;
var<workgroup> ks: array<vec4<f32>, 448>;
var<workgroup> vs: array<vec4<f32>, 448>;


@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let kvh = wg.x / 1u;
  let row = lid / 1u;
  let lane = lid % 1u;
  let h = kvh * 1u + (wg.x % 1u) * 1u + row % 1u;
  let t0 = wg.y * 64u;
  let t = t0 + row / 1u;
  let live = t < step.nTokens;
  let pos = step.pos0 + t;
  // The last position any row of the workgroup sees, and the first row's (tiles past it are diagonal).
  let pLast = step.pos0 + min(t0 + 64u, step.nTokens) - 1u;
  let pFirst = step.pos0 + t0;
  let kb = kvh * 64u;
  let qb = (min(t, step.nTokens - 1u) * 512u + h * 64u) / 4u;
  var qr: array<vec4<f32>, 16>;
  var acc: array<vec4<f32>, 16>;
  var s: array<f32, 28>;
  for (var k = 0u; k < 16u; k++) {
    qr[k] = q[qb + k * 1u + lane] * 1.250000000e-1f;
    acc[k] = vec4<f32>(0.0);
  }
  var m = SENT;
  var l = 0.0;
  for (var tile = 0u; tile <= pLast; tile += 28u) {
    for (var i = lid; i < 448u; i += 64u) {
      let src = min(tile + i / 16u, pLast) * 512u + kb + 4u * (i % 16u);
      ks[i] = ld_kc4(src);
      vs[i] = ld_vc4(src);
    }
    workgroupBarrier();
    // Scores of the tile's positions (every element written before it is read).
    for (var c = 0u; c < 28u; c++) {
      var d = 0.0;
      for (var k = 0u; k < 16u; k++) { d += dot(qr[k], ks[c * 16u + k * 1u + lane]); }
      s[c] = d;
    }

    // Only tiles reaching past the first row's position hold masked positions (and, with a sliding
    // window, tiles before a row's window; as in the rows layout, those the first real score erases).
    let diagonal = tile + 27u > pFirst;
    var mx = m;
    for (var c = 0u; c < 28u; c++) {
      if ((diagonal && tile + c > pos)) { s[c] = SENT; }
      mx = max(mx, s[c]);
    }
    if (mx > m) {
      let f = exp(m - mx);
      l *= f;
      for (var k = 0u; k < 16u; k++) { acc[k] *= f; }
      m = mx;
    }
    for (var c = 0u; c < 28u; c++) {
      let p = exp(s[c] - m);
      l += p;
      for (var k = 0u; k < 16u; k++) { acc[k] += p * vs[c * 16u + k * 1u + lane]; }
    }
    workgroupBarrier();
  }
  if (live) {
    for (var k = 0u; k < 16u; k++) { out[qb + k * 1u + lane] = acc[k] / l; }
  }
}