struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
fn split12(a: f32) -> vec2<f32> { let c = 4097.0 * a; let hi = c - (c - a); return vec2<f32>(hi, a - hi); }
/** |a − b·q|, exact but for the last rounding (a − fl(b·q) is exact by Sterbenz's lemma near a/b). */
fn resid(a: f32, b: f32, q: f32) -> f32 {
  let p = b * q;
  let B = split12(b);
  let Q = split12(q);
  let err = ((B.x * Q.x - p) + B.x * Q.y + B.y * Q.x) + B.y * Q.y;
  return abs((a - p) - err);
}
/** a / b rounded to nearest (a, b finite, b ≠ 0), as C's float division. */
fn div_rn(a: f32, b: f32) -> f32 {
  let q0 = a / b;
  if (q0 == 0.0) { return q0; }
  var best = q0;
  var r = resid(a, b, q0);
  for (var k = 1u; k <= 3u; k++) {
    for (var s = 0u; s < 2u; s++) {
      let bits = select(bitcast<u32>(q0) - k, bitcast<u32>(q0) + k, s == 0u);
      let c = bitcast<f32>(bits);
      let rc = resid(a, b, c);
      if (rc < r) { r = rc; best = c; }
    }
  }
  return best;
}
/** IEEE binary16 bits of x, rounded to nearest even (as ggml's GGML_FP32_TO_FP16). */
fn f16_bits(x: f32) -> u32 {
  let u = bitcast<u32>(x);
  let sign = (u >> 16u) & 0x8000u;
  let a = u & 0x7fffffffu;
  if (a >= 0x47800000u) { return sign | select(0x7c00u, 0x7e00u, a > 0x7f800000u); }
  if (a < 0x38800000u) { return sign | (bitcast<u32>(bitcast<f32>(a) + 0.5) - 0x3f000000u); }
  return sign | ((a + 0xc8000fffu + ((a >> 13u) & 1u)) >> 13u);
}
/** C's roundf: nearest, halves away from zero. */
fn roundf(x: f32) -> f32 { let t = trunc(x); return t + select(0.0, sign(x), abs(x - t) >= 0.5); }
@group(0) @binding(1) var<storage, read> k_new: array<f32>;
@group(0) @binding(2) var<storage, read_write> kc: array<atomic<u32>>;
fn put_kc(hi: u32, v: u32) {
  let w = hi >> 1u;
  let sh = (hi & 1u) * 16u;
  atomicAnd(&kc[w], ~(0xffffu << sh));
  atomicOr(&kc[w], v << sh);
}
fn put2_kc(w: u32, v: u32) { atomicStore(&kc[w], v); }
fn quantize_kc(t: u32, pos: u32, blk: u32) {
  let x0 = t * 512u + blk * 32u;
  var h: array<u32, 17>;
  var amax = 0.0;
  for (var j = 0u; j < 32u; j++) { amax = max(amax, abs(k_new[x0 + j])); }
  let d = div_rn(amax, 127.0);
  let id = select(0.0, div_rn(1.0, d), d != 0.0);
  h[0] = f16_bits(d);
  for (var j = 0u; j < 16u; j++) {
    let a = u32(i32(roundf(k_new[x0 + 2u * j] * id))) & 0xffu;
    let b = u32(i32(roundf(k_new[x0 + 2u * j + 1u] * id))) & 0xffu;
    h[1u + j] = a | (b << 8u);
  }
  let hb = (pos * 16u + blk) * 17u;
  var k = 0u;
  loop {
    if (k >= 17u) { break; }
    if (((hb + k) & 1u) == 0u && k + 1u < 17u) {
      put2_kc((hb + k) >> 1u, h[k] | (h[k + 1u] << 16u));
      k += 2u;
    } else {
      put_kc(hb + k, h[k]);
      k += 1u;
    }
  }
}
@group(0) @binding(3) var<storage, read> v_new: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<atomic<u32>>;
fn put_vc(hi: u32, v: u32) {
  let w = hi >> 1u;
  let sh = (hi & 1u) * 16u;
  atomicAnd(&vc[w], ~(0xffffu << sh));
  atomicOr(&vc[w], v << sh);
}
fn put2_vc(w: u32, v: u32) { atomicStore(&vc[w], v); }
fn quantize_vc(t: u32, pos: u32, blk: u32) {
  let x0 = t * 512u + blk * 32u;
  var h: array<u32, 9>;
  var amax = 0.0;
  var mx = 0.0;
  for (var j = 0u; j < 32u; j++) { let v = v_new[x0 + j]; if (amax < abs(v)) { amax = abs(v); mx = v; } }
  let d = mx * -0.125;
  let id = select(0.0, div_rn(1.0, d), d != 0.0);
  h[0] = f16_bits(d);
  var qs: array<u32, 16>;
  for (var j = 0u; j < 16u; j++) {
    let a = u32(min(15, i32(v_new[x0 + j] * id + 8.5)));
    let b = u32(min(15, i32(v_new[x0 + 16u + j] * id + 8.5)));
    qs[j] = a | (b << 4u);
  }
  for (var j = 0u; j < 8u; j++) { h[1u + j] = qs[2u * j] | (qs[2u * j + 1u] << 8u); }
  let hb = (pos * 16u + blk) * 9u;
  var k = 0u;
  loop {
    if (k >= 9u) { break; }
    if (((hb + k) & 1u) == 0u && k + 1u < 9u) {
      put2_vc((hb + k) >> 1u, h[k] | (h[k + 1u] << 16u));
      k += 2u;
    } else {
      put_vc(hb + k, h[k]);
      k += 1u;
    }
  }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wg: vec3u) {
  let g = gid.x;
  let t = wg.y;
  if (g >= 32u || t >= step.nTokens) { return; }
  if (g / 16u == 0u) { quantize_kc(t, step.pos0 + t, g % 16u); }
  if (g / 16u == 1u) { quantize_vc(t, step.pos0 + t, g % 16u); }
}