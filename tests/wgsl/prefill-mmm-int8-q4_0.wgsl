struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> gnorm: array<f32>;
fn ld_gnorm(i: u32) -> f32 { return gnorm[i]; }
@group(0) @binding(3) var<storage, read> w_ffn_gate: array<u32>;
fn d_w_ffn_gate(bi: u32) -> f32 { return unpack2x16float(w_ffn_gate[27648u + (bi >> 1u)])[bi & 1u]; }
fn ld_w_ffn_gate(i: u32) -> f32 {
  let bi = i / 32u; let j = i % 32u; 
  let q = ((w_ffn_gate[(bi * 16u + j % 16u) >> 2u] >> (((bi * 16u + j % 16u) & 3u) * 8u)) & 0xffu);
  return d_w_ffn_gate(bi) * (f32(select(q & 0xfu, q >> 4u, j >= 16u)) - 8.0);
}
fn dq32_w_ffn_gate(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 32u;
  let d = d_w_ffn_gate(bi); 
  for (var j = 0u; j < 4u; j++) {
    let q = w_ffn_gate[bi * 4u + j];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      let k = 4u * j + b;
      (*out)[k] = d * (f32((v & 0xfu)) - 8.0);
      (*out)[k + 16u] = d * (f32((v >> 4u)) - 8.0);
    }
  }
}
@group(0) @binding(4) var<storage, read> w_ffn_up: array<u32>;
fn d_w_ffn_up(bi: u32) -> f32 { return unpack2x16float(w_ffn_up[27648u + (bi >> 1u)])[bi & 1u]; }
fn ld_w_ffn_up(i: u32) -> f32 {
  let bi = i / 32u; let j = i % 32u; 
  let q = ((w_ffn_up[(bi * 16u + j % 16u) >> 2u] >> (((bi * 16u + j % 16u) & 3u) * 8u)) & 0xffu);
  return d_w_ffn_up(bi) * (f32(select(q & 0xfu, q >> 4u, j >= 16u)) - 8.0);
}
fn dq32_w_ffn_up(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 32u;
  let d = d_w_ffn_up(bi); 
  for (var j = 0u; j < 4u; j++) {
    let q = w_ffn_up[bi * 4u + j];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      let k = 4u * j + b;
      (*out)[k] = d * (f32((v & 0xfu)) - 8.0);
      (*out)[k + 16u] = d * (f32((v >> 4u)) - 8.0);
    }
  }
}
@group(0) @binding(5) var<storage, read_write> hb: array<f32>;
fn dqi32_w_ffn_gate(i: u32, out: ptr<function, array<u32, 8>>) -> vec4<f32> {
  let bi = i / 32u; let o = bi * 18u; let d = d_w_ffn_gate(bi);
  for (var j = 0u; j < 4u; j++) { let q = w_ffn_gate[bi * 4u + j]; (*out)[j] = (q) & 0x0f0f0f0fu; (*out)[j + 4u] = ((q) >> 4u) & 0x0f0f0f0fu; }
  return vec4<f32>(d, d, -8.0 * d, -8.0 * d);
}
fn dqi32_w_ffn_up(i: u32, out: ptr<function, array<u32, 8>>) -> vec4<f32> {
  let bi = i / 32u; let o = bi * 18u; let d = d_w_ffn_up(bi);
  for (var j = 0u; j < 4u; j++) { let q = w_ffn_up[bi * 4u + j]; (*out)[j] = (q) & 0x0f0f0f0fu; (*out)[j + 4u] = ((q) >> 4u) & 0x0f0f0f0fu; }
  return vec4<f32>(d, d, -8.0 * d, -8.0 * d);
}

const K: u32 = 288u;
var<workgroup> xq: array<vec4<u32>, 64>; // [token][2]: int8 activations of this K-step
var<workgroup> xf: array<vec4<f32>, 32>; // [token]: (dx, dx·Σq[0..16), dx·Σq[16..32), 0)
var<workgroup> wq: array<vec4<u32>, 128>; // [tile row][2]: the row's 32 quants as int8
var<workgroup> wf: array<vec4<f32>, 64>; // [tile row]: (s0, s1, m0, m1)
var<workgroup> red: array<f32, 32>;

fn ldx(i: u32, k: u32) -> f32 { return select(0.0, x[i + min(k, K - 1u)], k < K); }
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 8u;
  let ty = lid / 8u;
  let t0 = wg.y * 32u;
  let nT = step.nTokens;
  // Activation loads: thread lid < 32 takes token lid of the tile, all 32 values of the K-step.
  let xrow = min(t0 + lid % 32u, nT - 1u) * K;
  var ss = 0.0;
  var seg = 0u;
  var ub = 0u;
  if (wg.x < 24u) { seg = 0u; ub = (wg.x - 0u) * 32u; }
  var a0_0 = 0.0;
  var a0_1 = 0.0;
  var a0_2 = 0.0;
  var a0_3 = 0.0;
  var a1_0 = 0.0;
  var a1_1 = 0.0;
  var a1_2 = 0.0;
  var a1_3 = 0.0;
  var a2_0 = 0.0;
  var a2_1 = 0.0;
  var a2_2 = 0.0;
  var a2_3 = 0.0;
  var a3_0 = 0.0;
  var a3_1 = 0.0;
  var a3_2 = 0.0;
  var a3_3 = 0.0;
  var a4_0 = 0.0;
  var a4_1 = 0.0;
  var a4_2 = 0.0;
  var a4_3 = 0.0;
  var a5_0 = 0.0;
  var a5_1 = 0.0;
  var a5_2 = 0.0;
  var a5_3 = 0.0;
  var a6_0 = 0.0;
  var a6_1 = 0.0;
  var a6_2 = 0.0;
  var a6_3 = 0.0;
  var a7_0 = 0.0;
  var a7_1 = 0.0;
  var a7_2 = 0.0;
  var a7_3 = 0.0;
  for (var k0 = 0u; k0 < K; k0 += 32u) {
    if (lid < 32u) {
      let v0 = vec4<f32>(ldx(xrow, k0 + 0u), ldx(xrow, k0 + 0u + 1u), ldx(xrow, k0 + 0u + 2u), ldx(xrow, k0 + 0u + 3u));
      ss += dot(v0, v0);
      let e0 = v0 * vec4<f32>(ld_gnorm(min(k0 + 0u, K - 1u)), ld_gnorm(min(k0 + 0u + 1u, K - 1u)), ld_gnorm(min(k0 + 0u + 2u, K - 1u)), ld_gnorm(min(k0 + 0u + 3u, K - 1u)));
      let v1 = vec4<f32>(ldx(xrow, k0 + 4u), ldx(xrow, k0 + 4u + 1u), ldx(xrow, k0 + 4u + 2u), ldx(xrow, k0 + 4u + 3u));
      ss += dot(v1, v1);
      let e1 = v1 * vec4<f32>(ld_gnorm(min(k0 + 4u, K - 1u)), ld_gnorm(min(k0 + 4u + 1u, K - 1u)), ld_gnorm(min(k0 + 4u + 2u, K - 1u)), ld_gnorm(min(k0 + 4u + 3u, K - 1u)));
      let v2 = vec4<f32>(ldx(xrow, k0 + 8u), ldx(xrow, k0 + 8u + 1u), ldx(xrow, k0 + 8u + 2u), ldx(xrow, k0 + 8u + 3u));
      ss += dot(v2, v2);
      let e2 = v2 * vec4<f32>(ld_gnorm(min(k0 + 8u, K - 1u)), ld_gnorm(min(k0 + 8u + 1u, K - 1u)), ld_gnorm(min(k0 + 8u + 2u, K - 1u)), ld_gnorm(min(k0 + 8u + 3u, K - 1u)));
      let v3 = vec4<f32>(ldx(xrow, k0 + 12u), ldx(xrow, k0 + 12u + 1u), ldx(xrow, k0 + 12u + 2u), ldx(xrow, k0 + 12u + 3u));
      ss += dot(v3, v3);
      let e3 = v3 * vec4<f32>(ld_gnorm(min(k0 + 12u, K - 1u)), ld_gnorm(min(k0 + 12u + 1u, K - 1u)), ld_gnorm(min(k0 + 12u + 2u, K - 1u)), ld_gnorm(min(k0 + 12u + 3u, K - 1u)));
      let v4 = vec4<f32>(ldx(xrow, k0 + 16u), ldx(xrow, k0 + 16u + 1u), ldx(xrow, k0 + 16u + 2u), ldx(xrow, k0 + 16u + 3u));
      ss += dot(v4, v4);
      let e4 = v4 * vec4<f32>(ld_gnorm(min(k0 + 16u, K - 1u)), ld_gnorm(min(k0 + 16u + 1u, K - 1u)), ld_gnorm(min(k0 + 16u + 2u, K - 1u)), ld_gnorm(min(k0 + 16u + 3u, K - 1u)));
      let v5 = vec4<f32>(ldx(xrow, k0 + 20u), ldx(xrow, k0 + 20u + 1u), ldx(xrow, k0 + 20u + 2u), ldx(xrow, k0 + 20u + 3u));
      ss += dot(v5, v5);
      let e5 = v5 * vec4<f32>(ld_gnorm(min(k0 + 20u, K - 1u)), ld_gnorm(min(k0 + 20u + 1u, K - 1u)), ld_gnorm(min(k0 + 20u + 2u, K - 1u)), ld_gnorm(min(k0 + 20u + 3u, K - 1u)));
      let v6 = vec4<f32>(ldx(xrow, k0 + 24u), ldx(xrow, k0 + 24u + 1u), ldx(xrow, k0 + 24u + 2u), ldx(xrow, k0 + 24u + 3u));
      ss += dot(v6, v6);
      let e6 = v6 * vec4<f32>(ld_gnorm(min(k0 + 24u, K - 1u)), ld_gnorm(min(k0 + 24u + 1u, K - 1u)), ld_gnorm(min(k0 + 24u + 2u, K - 1u)), ld_gnorm(min(k0 + 24u + 3u, K - 1u)));
      let v7 = vec4<f32>(ldx(xrow, k0 + 28u), ldx(xrow, k0 + 28u + 1u), ldx(xrow, k0 + 28u + 2u), ldx(xrow, k0 + 28u + 3u));
      ss += dot(v7, v7);
      let e7 = v7 * vec4<f32>(ld_gnorm(min(k0 + 28u, K - 1u)), ld_gnorm(min(k0 + 28u + 1u, K - 1u)), ld_gnorm(min(k0 + 28u + 2u, K - 1u)), ld_gnorm(min(k0 + 28u + 3u, K - 1u)));
      let am = max(max(max(abs(e0), abs(e1)), max(abs(e2), abs(e3))), max(max(abs(e4), abs(e5)), max(abs(e6), abs(e7))));
      let dx = max(max(am.x, am.y), max(am.z, am.w)) / 127.0;
      let ix = select(0.0, 1.0 / dx, dx > 0.0);
      let q0 = pack4xI8(vec4<i32>(round(e0 * ix)));
      let q1 = pack4xI8(vec4<i32>(round(e1 * ix)));
      let q2 = pack4xI8(vec4<i32>(round(e2 * ix)));
      let q3 = pack4xI8(vec4<i32>(round(e3 * ix)));
      let q4 = pack4xI8(vec4<i32>(round(e4 * ix)));
      let q5 = pack4xI8(vec4<i32>(round(e5 * ix)));
      let q6 = pack4xI8(vec4<i32>(round(e6 * ix)));
      let q7 = pack4xI8(vec4<i32>(round(e7 * ix)));
      xq[2u * lid] = vec4<u32>(q0, q1, q2, q3);
      xq[2u * lid + 1u] = vec4<u32>(q4, q5, q6, q7);
      let qlo = dot4I8Packed(q0, 0x01010101u) + dot4I8Packed(q1, 0x01010101u) + dot4I8Packed(q2, 0x01010101u) + dot4I8Packed(q3, 0x01010101u);
      let qhi = dot4I8Packed(q4, 0x01010101u) + dot4I8Packed(q5, 0x01010101u) + dot4I8Packed(q6, 0x01010101u) + dot4I8Packed(q7, 0x01010101u);
      xf[lid] = vec4<f32>(dx, dx * f32(qlo), dx * f32(qhi), 0.0);
    }
    if (seg == 0u) {
      let c = lid % 8u; let d = lid / 32u; let j = (lid % 32u) / 8u; let u = min(ub + c + 8u * j, 767u); let rho = 8u * (2u * j + d) + c;
      var q: array<u32, 8>;
      var sc: vec4<f32>;
      if (d == 0u) { sc = dqi32_w_ffn_gate((u) * K + k0, &q); } else { sc = dqi32_w_ffn_up((u) * K + k0, &q); }
      wq[2u * rho] = vec4<u32>(q[0], q[1], q[2], q[3]);
      wq[2u * rho + 1u] = vec4<u32>(q[4], q[5], q[6], q[7]);
      wf[rho] = sc;
    }
    workgroupBarrier();
    let xa0 = xq[2u * (ty + 0u)]; let xb0 = xq[2u * (ty + 0u) + 1u]; let xf0 = xf[ty + 0u];
    let xa1 = xq[2u * (ty + 8u)]; let xb1 = xq[2u * (ty + 8u) + 1u]; let xf1 = xf[ty + 8u];
    let xa2 = xq[2u * (ty + 16u)]; let xb2 = xq[2u * (ty + 16u) + 1u]; let xf2 = xf[ty + 16u];
    let xa3 = xq[2u * (ty + 24u)]; let xb3 = xq[2u * (ty + 24u) + 1u]; let xf3 = xf[ty + 24u];
    { let wa = wq[2u * (tx + 0u)]; let wb = wq[2u * (tx + 0u) + 1u]; let f = wf[tx + 0u];
        a0_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a0_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a0_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a0_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    { let wa = wq[2u * (tx + 8u)]; let wb = wq[2u * (tx + 8u) + 1u]; let f = wf[tx + 8u];
        a1_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a1_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a1_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a1_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    { let wa = wq[2u * (tx + 16u)]; let wb = wq[2u * (tx + 16u) + 1u]; let f = wf[tx + 16u];
        a2_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a2_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a2_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a2_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    { let wa = wq[2u * (tx + 24u)]; let wb = wq[2u * (tx + 24u) + 1u]; let f = wf[tx + 24u];
        a3_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a3_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a3_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a3_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    { let wa = wq[2u * (tx + 32u)]; let wb = wq[2u * (tx + 32u) + 1u]; let f = wf[tx + 32u];
        a4_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a4_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a4_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a4_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    { let wa = wq[2u * (tx + 40u)]; let wb = wq[2u * (tx + 40u) + 1u]; let f = wf[tx + 40u];
        a5_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a5_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a5_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a5_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    { let wa = wq[2u * (tx + 48u)]; let wb = wq[2u * (tx + 48u) + 1u]; let f = wf[tx + 48u];
        a6_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a6_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a6_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a6_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    { let wa = wq[2u * (tx + 56u)]; let wb = wq[2u * (tx + 56u) + 1u]; let f = wf[tx + 56u];
        a7_0 += xf0.x * (f.x * f32(dot4I8Packed(wa.x, xa0.x) + dot4I8Packed(wa.y, xa0.y) + dot4I8Packed(wa.z, xa0.z) + dot4I8Packed(wa.w, xa0.w)) + f.y * f32(dot4I8Packed(wb.x, xb0.x) + dot4I8Packed(wb.y, xb0.y) + dot4I8Packed(wb.z, xb0.z) + dot4I8Packed(wb.w, xb0.w))) + f.z * xf0.y + f.w * xf0.z;
        a7_1 += xf1.x * (f.x * f32(dot4I8Packed(wa.x, xa1.x) + dot4I8Packed(wa.y, xa1.y) + dot4I8Packed(wa.z, xa1.z) + dot4I8Packed(wa.w, xa1.w)) + f.y * f32(dot4I8Packed(wb.x, xb1.x) + dot4I8Packed(wb.y, xb1.y) + dot4I8Packed(wb.z, xb1.z) + dot4I8Packed(wb.w, xb1.w))) + f.z * xf1.y + f.w * xf1.z;
        a7_2 += xf2.x * (f.x * f32(dot4I8Packed(wa.x, xa2.x) + dot4I8Packed(wa.y, xa2.y) + dot4I8Packed(wa.z, xa2.z) + dot4I8Packed(wa.w, xa2.w)) + f.y * f32(dot4I8Packed(wb.x, xb2.x) + dot4I8Packed(wb.y, xb2.y) + dot4I8Packed(wb.z, xb2.z) + dot4I8Packed(wb.w, xb2.w))) + f.z * xf2.y + f.w * xf2.z;
        a7_3 += xf3.x * (f.x * f32(dot4I8Packed(wa.x, xa3.x) + dot4I8Packed(wa.y, xa3.y) + dot4I8Packed(wa.z, xa3.z) + dot4I8Packed(wa.w, xa3.w)) + f.y * f32(dot4I8Packed(wb.x, xb3.x) + dot4I8Packed(wb.y, xb3.y) + dot4I8Packed(wb.z, xb3.z) + dot4I8Packed(wb.w, xb3.w))) + f.z * xf3.y + f.w * xf3.z; }
    workgroupBarrier();
  }
  if (lid < 32u) { red[lid] = ss; }
  workgroupBarrier();
  let inv0 = inverseSqrt(red[ty + 0u] / f32(K) + 1.000000000e-5f);
  let inv1 = inverseSqrt(red[ty + 8u] / f32(K) + 1.000000000e-5f);
  let inv2 = inverseSqrt(red[ty + 16u] / f32(K) + 1.000000000e-5f);
  let inv3 = inverseSqrt(red[ty + 24u] / f32(K) + 1.000000000e-5f);
  if (seg == 0u) {
    { let u = ub + tx + 0u; if (u < 768u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_0 * inv0; let d1 = a1_0 * inv0;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_1 * inv1; let d1 = a1_1 * inv1;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_2 * inv2; let d1 = a1_2 * inv2;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_3 * inv3; let d1 = a1_3 * inv3;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
    { let u = ub + tx + 8u; if (u < 768u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_0 * inv0; let d1 = a3_0 * inv0;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_1 * inv1; let d1 = a3_1 * inv1;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_2 * inv2; let d1 = a3_2 * inv2;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_3 * inv3; let d1 = a3_3 * inv3;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
    { let u = ub + tx + 16u; if (u < 768u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_0 * inv0; let d1 = a5_0 * inv0;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_1 * inv1; let d1 = a5_1 * inv1;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_2 * inv2; let d1 = a5_2 * inv2;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_3 * inv3; let d1 = a5_3 * inv3;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
    { let u = ub + tx + 24u; if (u < 768u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_0 * inv0; let d1 = a7_0 * inv0;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_1 * inv1; let d1 = a7_1 * inv1;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_2 * inv2; let d1 = a7_2 * inv2;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_3 * inv3; let d1 = a7_3 * inv3;
        let r = 0u + u; hb[t * 768u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
  }
}