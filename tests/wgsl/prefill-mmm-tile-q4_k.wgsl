struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> gnorm: array<f32>;
fn ld_gnorm(i: u32) -> f32 { return gnorm[i]; }
@group(0) @binding(3) var<storage, read> w_ffn_gate: array<u32>;
fn q4kp_w_ffn_gate(bi: u32, j: u32) -> vec2<f32> {
  let smw = w_ffn_gate[98304u + bi * 4u + j / 2u] >> ((j & 1u) * 16u);
  let dm = unpack2x16float(w_ffn_gate[110592u + bi]);
  return vec2<f32>(dm.x * f32(smw & 0xffu), dm.y * f32((smw >> 8u) & 0xffu));
}
fn ld_w_ffn_gate(i: u32) -> f32 {
  let bi = i / 256u; let r = i % 256u; let j = r / 32u; let l = r % 32u;
  let s = q4kp_w_ffn_gate(bi, j);
  let q = ((w_ffn_gate[(bi * 128u + j * 16u + l % 16u) >> 2u] >> (((bi * 128u + j * 16u + l % 16u) & 3u) * 8u)) & 0xffu);
  return s.x * f32(select(q & 0xfu, q >> 4u, l >= 16u)) - s.y;
}
fn dq32_w_ffn_gate(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 256u;
  let j = (i % 256u) / 32u;
  let s = q4kp_w_ffn_gate(bi, j);
  for (var w = 0u; w < 4u; w++) {
    let q = w_ffn_gate[bi * 32u + j * 4u + w];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      (*out)[4u * w + b] = s.x * f32(v & 0xfu) - s.y;
      (*out)[4u * w + b + 16u] = s.x * f32(v >> 4u) - s.y;
    }
  }
}
@group(0) @binding(4) var<storage, read> w_ffn_up: array<u32>;
fn q4kp_w_ffn_up(bi: u32, j: u32) -> vec2<f32> {
  let smw = w_ffn_up[98304u + bi * 4u + j / 2u] >> ((j & 1u) * 16u);
  let dm = unpack2x16float(w_ffn_up[110592u + bi]);
  return vec2<f32>(dm.x * f32(smw & 0xffu), dm.y * f32((smw >> 8u) & 0xffu));
}
fn ld_w_ffn_up(i: u32) -> f32 {
  let bi = i / 256u; let r = i % 256u; let j = r / 32u; let l = r % 32u;
  let s = q4kp_w_ffn_up(bi, j);
  let q = ((w_ffn_up[(bi * 128u + j * 16u + l % 16u) >> 2u] >> (((bi * 128u + j * 16u + l % 16u) & 3u) * 8u)) & 0xffu);
  return s.x * f32(select(q & 0xfu, q >> 4u, l >= 16u)) - s.y;
}
fn dq32_w_ffn_up(i: u32, out: ptr<function, array<f32, 32>>) {
  let bi = i / 256u;
  let j = (i % 256u) / 32u;
  let s = q4kp_w_ffn_up(bi, j);
  for (var w = 0u; w < 4u; w++) {
    let q = w_ffn_up[bi * 32u + j * 4u + w];
    for (var b = 0u; b < 4u; b++) {
      let v = (q >> (b * 8u)) & 0xffu;
      (*out)[4u * w + b] = s.x * f32(v & 0xfu) - s.y;
      (*out)[4u * w + b + 16u] = s.x * f32(v >> 4u) - s.y;
    }
  }
}
@group(0) @binding(5) var<storage, read_write> hb: array<f32>;

const K: u32 = 512u;
var<workgroup> xs: array<vec4<f32>, 288>; // [token][9]: x · gnorm of this K-step
var<workgroup> ws: array<vec4<f32>, 576>; // [tile row][9]: dequantized weights
var<workgroup> red: array<f32, 64>;

fn ldx(i: u32, k: u32) -> f32 { return select(0.0, x[i + min(k, K - 1u)], k < K); }
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let tx = lid % 8u;
  let ty = lid / 8u;
  let t0 = wg.y * 32u;
  let nT = step.nTokens;
  // Activation loads: token lt of the tile, half lh of the K-step (16 values).
  let lt = lid / 2u;
  let lh = lid % 2u;
  let xrow = min(t0 + lt, nT - 1u) * K;
  var ss = 0.0;
  // Weight loads: tile row 8r + c holds slot r of column c (unit c + 8·(r / D), dot r % D).
  var seg = 0u;
  var ub = 0u;
  if (wg.x < 48u) { seg = 0u; ub = (wg.x - 0u) * 32u; }
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
    for (var j = 0u; j < 4u; j++) {
      let k = k0 + lh * 16u + j * 4u;
      let v = vec4<f32>(ldx(xrow, k), ldx(xrow, k + 1u), ldx(xrow, k + 2u), ldx(xrow, k + 3u));
      ss += dot(v, v);
      let g = vec4<f32>(ld_gnorm(min(k, K - 1u)), ld_gnorm(min(k + 1u, K - 1u)), ld_gnorm(min(k + 2u, K - 1u)), ld_gnorm(min(k + 3u, K - 1u)));
      xs[lt * 9u + lh * 4u + j] = v * g;
    }
    if (seg == 0u) {
      let c = lid % 8u; let d = lid / 32u; let j = (lid % 32u) / 8u; let u = min(ub + c + 8u * j, 1535u); let rho = 8u * (2u * j + d) + c;
      var q: array<f32, 32>;
      if (d == 0u) { dq32_w_ffn_gate((u) * K + k0, &q); } else { dq32_w_ffn_up((u) * K + k0, &q); }
      for (var e = 0u; e < 8u; e++) { ws[rho * 9u + e] = vec4<f32>(q[4u * e], q[4u * e + 1u], q[4u * e + 2u], q[4u * e + 3u]); }
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 8u; kk++) {
      let x0 = xs[(ty + 0u) * 9u + kk];
      let x1 = xs[(ty + 8u) * 9u + kk];
      let x2 = xs[(ty + 16u) * 9u + kk];
      let x3 = xs[(ty + 24u) * 9u + kk];
      { let w = ws[(tx + 0u) * 9u + kk]; a0_0 += dot(w, x0); a0_1 += dot(w, x1); a0_2 += dot(w, x2); a0_3 += dot(w, x3); }
      { let w = ws[(tx + 8u) * 9u + kk]; a1_0 += dot(w, x0); a1_1 += dot(w, x1); a1_2 += dot(w, x2); a1_3 += dot(w, x3); }
      { let w = ws[(tx + 16u) * 9u + kk]; a2_0 += dot(w, x0); a2_1 += dot(w, x1); a2_2 += dot(w, x2); a2_3 += dot(w, x3); }
      { let w = ws[(tx + 24u) * 9u + kk]; a3_0 += dot(w, x0); a3_1 += dot(w, x1); a3_2 += dot(w, x2); a3_3 += dot(w, x3); }
      { let w = ws[(tx + 32u) * 9u + kk]; a4_0 += dot(w, x0); a4_1 += dot(w, x1); a4_2 += dot(w, x2); a4_3 += dot(w, x3); }
      { let w = ws[(tx + 40u) * 9u + kk]; a5_0 += dot(w, x0); a5_1 += dot(w, x1); a5_2 += dot(w, x2); a5_3 += dot(w, x3); }
      { let w = ws[(tx + 48u) * 9u + kk]; a6_0 += dot(w, x0); a6_1 += dot(w, x1); a6_2 += dot(w, x2); a6_3 += dot(w, x3); }
      { let w = ws[(tx + 56u) * 9u + kk]; a7_0 += dot(w, x0); a7_1 += dot(w, x1); a7_2 += dot(w, x2); a7_3 += dot(w, x3); }
    }
    workgroupBarrier();
  }
  red[lid] = ss;
  workgroupBarrier();
  let inv0 = inverseSqrt((red[2u * (ty + 0u)] + red[2u * (ty + 0u) + 1u]) / f32(K) + 1.000000000e-5f);
  let inv1 = inverseSqrt((red[2u * (ty + 8u)] + red[2u * (ty + 8u) + 1u]) / f32(K) + 1.000000000e-5f);
  let inv2 = inverseSqrt((red[2u * (ty + 16u)] + red[2u * (ty + 16u) + 1u]) / f32(K) + 1.000000000e-5f);
  let inv3 = inverseSqrt((red[2u * (ty + 24u)] + red[2u * (ty + 24u) + 1u]) / f32(K) + 1.000000000e-5f);
  if (seg == 0u) {
    { let u = ub + tx + 0u; if (u < 1536u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_0 * inv0; let d1 = a1_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_1 * inv1; let d1 = a1_1 * inv1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_2 * inv2; let d1 = a1_2 * inv2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a0_3 * inv3; let d1 = a1_3 * inv3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
    { let u = ub + tx + 8u; if (u < 1536u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_0 * inv0; let d1 = a3_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_1 * inv1; let d1 = a3_1 * inv1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_2 * inv2; let d1 = a3_2 * inv2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a2_3 * inv3; let d1 = a3_3 * inv3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
    { let u = ub + tx + 16u; if (u < 1536u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_0 * inv0; let d1 = a5_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_1 * inv1; let d1 = a5_1 * inv1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_2 * inv2; let d1 = a5_2 * inv2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a4_3 * inv3; let d1 = a5_3 * inv3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
    { let u = ub + tx + 24u; if (u < 1536u) {
      { let t = t0 + ty + 0u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_0 * inv0; let d1 = a7_0 * inv0;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 8u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_1 * inv1; let d1 = a7_1 * inv1;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 16u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_2 * inv2; let d1 = a7_2 * inv2;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
      { let t = t0 + ty + 24u; if (t < nT) { let pos = step.pos0 + t; let d0 = a6_3 * inv3; let d1 = a7_3 * inv3;
        let r = 0u + u; hb[t * 1536u + r] = d0 / (1.0 + exp(-d0)) * d1;
      } }
    } }
  }
}