struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> kc: array<vec4<u32>>;
fn ld_kc8(i: u32) -> array<vec4<f32>, 2> {
  let w = kc[i / 8u];
  return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)), vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)));
}
@group(0) @binding(3) var<storage, read> vc: array<vec4<u32>>;
fn ld_vc8(i: u32) -> array<vec4<f32>, 2> {
  let w = vc[i / 8u];
  return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)), vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)));
}
@group(0) @binding(4) var<storage, read_write> out: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read_write> part_o: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> part_ml: array<vec2<f32>>;
const HD: u32 = 64u;
const RW: u32 = 1u;
const SENT: f32 = -1.0e30;
/** Query head and token of workgroup row r. */
fn rowHead(kvh: u32, hg: u32, r: u32) -> u32 { return kvh * 1u + hg * 1u + r % 1u; }
fn rowTok(r: u32) -> u32 { return r / 1u; }
var<workgroup> qs: array<vec4<f32>, 16>;
/** The workgroup's query rows, scaled, into qs (rows of tokens past step.nTokens are zeros). */
fn load_q(kvh: u32, hg: u32, lid: u32, nThreads: u32) {
  for (var i = lid; i < 16u; i += nThreads) {
    let r = i / 16u;
    let t = rowTok(r);
    var v = vec4<f32>(0.0);
    if (t < step.nTokens) { v = q[(t * 512u + rowHead(kvh, hg, r) * HD) / 4u + i % 16u] * 1.250000000e-1f; }
    qs[i] = v;
  }
}
/** Writes dims (2dp, 2dp+1) of row r: the final output with one chunk, else this chunk's partial. */
fn emit(kvh: u32, hg: u32, split: u32, nSplit: u32, r: u32, dp: u32, a: vec2<f32>, m: f32, l: f32) {
  let t = rowTok(r);
  if (t >= step.nTokens) { return; }
  let h = rowHead(kvh, hg, r);
  if (nSplit == 1u) {
    out[(t * 512u + h * HD) / 2u + dp] = a / l;
  } else {
    part_o[((split * 1u + t) * 512u + h * HD) / 2u + dp] = a;
    if (dp == 0u) { part_ml[(split * 1u + t) * 8u + h] = vec2<f32>(m, l); }
  }
}

const W: u32 = 8u;
var<workgroup> sm: array<f32, 8>;
var<workgroup> sl: array<f32, 8>;
var<workgroup> sacc: array<vec2<f32>, 256>;

@compute @workgroup_size(8)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let kvh = wg.x / 1u;
  let hg = wg.x % 1u;
  let split = wg.y;
  let len = step.pos0 + step.nTokens;
  let chunk = step.p2;
  let nSplit = (len + chunk - 1u) / chunk;
  let start = split * chunk;
  let end = min(start + chunk, len);
  let kb = kvh * HD;
  load_q(kvh, hg, lid, W);
  workgroupBarrier();
  var m0 = SENT; var l0 = 0.0;
  let q0_0 = qs[0];
  let q0_1 = qs[1];
  let q0_2 = qs[2];
  let q0_3 = qs[3];
  let q0_4 = qs[4];
  let q0_5 = qs[5];
  let q0_6 = qs[6];
  let q0_7 = qs[7];
  let q0_8 = qs[8];
  let q0_9 = qs[9];
  let q0_10 = qs[10];
  let q0_11 = qs[11];
  let q0_12 = qs[12];
  let q0_13 = qs[13];
  let q0_14 = qs[14];
  let q0_15 = qs[15];
  var a0_0 = vec2<f32>(0.0);
  var a0_1 = vec2<f32>(0.0);
  var a0_2 = vec2<f32>(0.0);
  var a0_3 = vec2<f32>(0.0);
  var a0_4 = vec2<f32>(0.0);
  var a0_5 = vec2<f32>(0.0);
  var a0_6 = vec2<f32>(0.0);
  var a0_7 = vec2<f32>(0.0);
  var a0_8 = vec2<f32>(0.0);
  var a0_9 = vec2<f32>(0.0);
  var a0_10 = vec2<f32>(0.0);
  var a0_11 = vec2<f32>(0.0);
  var a0_12 = vec2<f32>(0.0);
  var a0_13 = vec2<f32>(0.0);
  var a0_14 = vec2<f32>(0.0);
  var a0_15 = vec2<f32>(0.0);
  var a0_16 = vec2<f32>(0.0);
  var a0_17 = vec2<f32>(0.0);
  var a0_18 = vec2<f32>(0.0);
  var a0_19 = vec2<f32>(0.0);
  var a0_20 = vec2<f32>(0.0);
  var a0_21 = vec2<f32>(0.0);
  var a0_22 = vec2<f32>(0.0);
  var a0_23 = vec2<f32>(0.0);
  var a0_24 = vec2<f32>(0.0);
  var a0_25 = vec2<f32>(0.0);
  var a0_26 = vec2<f32>(0.0);
  var a0_27 = vec2<f32>(0.0);
  var a0_28 = vec2<f32>(0.0);
  var a0_29 = vec2<f32>(0.0);
  var a0_30 = vec2<f32>(0.0);
  var a0_31 = vec2<f32>(0.0);
  for (var j = start + lid; j < end; j += W) {
    let base = j * 512u + kb;
    let kw0 = ld_kc8(base + 0u); let k0 = kw0[0]; let k1 = kw0[1];
    let kw1 = ld_kc8(base + 8u); let k2 = kw1[0]; let k3 = kw1[1];
    let kw2 = ld_kc8(base + 16u); let k4 = kw2[0]; let k5 = kw2[1];
    let kw3 = ld_kc8(base + 24u); let k6 = kw3[0]; let k7 = kw3[1];
    let kw4 = ld_kc8(base + 32u); let k8 = kw4[0]; let k9 = kw4[1];
    let kw5 = ld_kc8(base + 40u); let k10 = kw5[0]; let k11 = kw5[1];
    let kw6 = ld_kc8(base + 48u); let k12 = kw6[0]; let k13 = kw6[1];
    let kw7 = ld_kc8(base + 56u); let k14 = kw7[0]; let k15 = kw7[1];
    let ok0 = true;
    let s0 = select(SENT, dot(q0_0, k0) + dot(q0_1, k1) + dot(q0_2, k2) + dot(q0_3, k3) + dot(q0_4, k4) + dot(q0_5, k5) + dot(q0_6, k6) + dot(q0_7, k7) + dot(q0_8, k8) + dot(q0_9, k9) + dot(q0_10, k10) + dot(q0_11, k11) + dot(q0_12, k12) + dot(q0_13, k13) + dot(q0_14, k14) + dot(q0_15, k15), ok0);
    let mn0 = max(m0, s0); let c0 = exp(m0 - mn0); let p0 = select(0.0, exp(s0 - mn0), ok0);
    l0 = l0 * c0 + p0; m0 = mn0;
    let vw0 = ld_vc8(base + 0u);
    let v0 = vw0[0].xy;
    a0_0 = a0_0 * c0 + p0 * v0;
    let v1 = vw0[0].zw;
    a0_1 = a0_1 * c0 + p0 * v1;
    let v2 = vw0[1].xy;
    a0_2 = a0_2 * c0 + p0 * v2;
    let v3 = vw0[1].zw;
    a0_3 = a0_3 * c0 + p0 * v3;
    let vw1 = ld_vc8(base + 8u);
    let v4 = vw1[0].xy;
    a0_4 = a0_4 * c0 + p0 * v4;
    let v5 = vw1[0].zw;
    a0_5 = a0_5 * c0 + p0 * v5;
    let v6 = vw1[1].xy;
    a0_6 = a0_6 * c0 + p0 * v6;
    let v7 = vw1[1].zw;
    a0_7 = a0_7 * c0 + p0 * v7;
    let vw2 = ld_vc8(base + 16u);
    let v8 = vw2[0].xy;
    a0_8 = a0_8 * c0 + p0 * v8;
    let v9 = vw2[0].zw;
    a0_9 = a0_9 * c0 + p0 * v9;
    let v10 = vw2[1].xy;
    a0_10 = a0_10 * c0 + p0 * v10;
    let v11 = vw2[1].zw;
    a0_11 = a0_11 * c0 + p0 * v11;
    let vw3 = ld_vc8(base + 24u);
    let v12 = vw3[0].xy;
    a0_12 = a0_12 * c0 + p0 * v12;
    let v13 = vw3[0].zw;
    a0_13 = a0_13 * c0 + p0 * v13;
    let v14 = vw3[1].xy;
    a0_14 = a0_14 * c0 + p0 * v14;
    let v15 = vw3[1].zw;
    a0_15 = a0_15 * c0 + p0 * v15;
    let vw4 = ld_vc8(base + 32u);
    let v16 = vw4[0].xy;
    a0_16 = a0_16 * c0 + p0 * v16;
    let v17 = vw4[0].zw;
    a0_17 = a0_17 * c0 + p0 * v17;
    let v18 = vw4[1].xy;
    a0_18 = a0_18 * c0 + p0 * v18;
    let v19 = vw4[1].zw;
    a0_19 = a0_19 * c0 + p0 * v19;
    let vw5 = ld_vc8(base + 40u);
    let v20 = vw5[0].xy;
    a0_20 = a0_20 * c0 + p0 * v20;
    let v21 = vw5[0].zw;
    a0_21 = a0_21 * c0 + p0 * v21;
    let v22 = vw5[1].xy;
    a0_22 = a0_22 * c0 + p0 * v22;
    let v23 = vw5[1].zw;
    a0_23 = a0_23 * c0 + p0 * v23;
    let vw6 = ld_vc8(base + 48u);
    let v24 = vw6[0].xy;
    a0_24 = a0_24 * c0 + p0 * v24;
    let v25 = vw6[0].zw;
    a0_25 = a0_25 * c0 + p0 * v25;
    let v26 = vw6[1].xy;
    a0_26 = a0_26 * c0 + p0 * v26;
    let v27 = vw6[1].zw;
    a0_27 = a0_27 * c0 + p0 * v27;
    let vw7 = ld_vc8(base + 56u);
    let v28 = vw7[0].xy;
    a0_28 = a0_28 * c0 + p0 * v28;
    let v29 = vw7[0].zw;
    a0_29 = a0_29 * c0 + p0 * v29;
    let v30 = vw7[1].xy;
    a0_30 = a0_30 * c0 + p0 * v30;
    let v31 = vw7[1].zw;
    a0_31 = a0_31 * c0 + p0 * v31;
  }
  sm[lid * RW + 0u] = m0; sl[lid * RW + 0u] = l0;
  sacc[(lid * RW + 0u) * 32u + 0u] = a0_0;
  sacc[(lid * RW + 0u) * 32u + 1u] = a0_1;
  sacc[(lid * RW + 0u) * 32u + 2u] = a0_2;
  sacc[(lid * RW + 0u) * 32u + 3u] = a0_3;
  sacc[(lid * RW + 0u) * 32u + 4u] = a0_4;
  sacc[(lid * RW + 0u) * 32u + 5u] = a0_5;
  sacc[(lid * RW + 0u) * 32u + 6u] = a0_6;
  sacc[(lid * RW + 0u) * 32u + 7u] = a0_7;
  sacc[(lid * RW + 0u) * 32u + 8u] = a0_8;
  sacc[(lid * RW + 0u) * 32u + 9u] = a0_9;
  sacc[(lid * RW + 0u) * 32u + 10u] = a0_10;
  sacc[(lid * RW + 0u) * 32u + 11u] = a0_11;
  sacc[(lid * RW + 0u) * 32u + 12u] = a0_12;
  sacc[(lid * RW + 0u) * 32u + 13u] = a0_13;
  sacc[(lid * RW + 0u) * 32u + 14u] = a0_14;
  sacc[(lid * RW + 0u) * 32u + 15u] = a0_15;
  sacc[(lid * RW + 0u) * 32u + 16u] = a0_16;
  sacc[(lid * RW + 0u) * 32u + 17u] = a0_17;
  sacc[(lid * RW + 0u) * 32u + 18u] = a0_18;
  sacc[(lid * RW + 0u) * 32u + 19u] = a0_19;
  sacc[(lid * RW + 0u) * 32u + 20u] = a0_20;
  sacc[(lid * RW + 0u) * 32u + 21u] = a0_21;
  sacc[(lid * RW + 0u) * 32u + 22u] = a0_22;
  sacc[(lid * RW + 0u) * 32u + 23u] = a0_23;
  sacc[(lid * RW + 0u) * 32u + 24u] = a0_24;
  sacc[(lid * RW + 0u) * 32u + 25u] = a0_25;
  sacc[(lid * RW + 0u) * 32u + 26u] = a0_26;
  sacc[(lid * RW + 0u) * 32u + 27u] = a0_27;
  sacc[(lid * RW + 0u) * 32u + 28u] = a0_28;
  sacc[(lid * RW + 0u) * 32u + 29u] = a0_29;
  sacc[(lid * RW + 0u) * 32u + 30u] = a0_30;
  sacc[(lid * RW + 0u) * 32u + 31u] = a0_31;
  workgroupBarrier();
  for (var i = lid; i < 32u; i += W) {
    let r = i / 32u;
    let dp = i % 32u;
    var mAll = SENT;
    for (var k = 0u; k < W; k++) { mAll = max(mAll, sm[k * RW + r]); }
    var lAll = 0.0;
    var a = vec2<f32>(0.0);
    for (var k = 0u; k < W; k++) {
      let f = exp(sm[k * RW + r] - mAll);
      lAll += sl[k * RW + r] * f;
      a += sacc[(k * RW + r) * 32u + dp] * f;
    }
    emit(kvh, hg, split, nSplit, r, dp, a, mAll, lAll);
  }
}