enable f16;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium.subgroup_matrix_uniformity);
struct Step { nTokens: u32, pos0: u32, p2: u32, p3: u32 };
@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> kc: array<vec2<u32>>;
fn ld_kc4(i: u32) -> vec4<f32> { let w = kc[i / 4u]; return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }
@group(0) @binding(3) var<storage, read> vc: array<vec2<u32>>;
fn ld_vc4(i: u32) -> vec4<f32> { let w = vc[i / 4u]; return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
const SENT: f32 = -1.0e30;
var<workgroup> qh: array<f16, 1152>; // [row][72]: q · scale
var<workgroup> kvs: array<f16, 2304>; // [position][72]: the tile's K rows, then its V rows
var<workgroup> sc: array<f32, 512>; // [row][position]: the tile's scores
var<workgroup> ph: array<f16, 640>; // [row][40]: the tile's probabilities
var<workgroup> ob: array<f32, 1024>; // [row][dim]: the output, unnormalised
var<workgroup> red: array<f32, 32>; // [lane]: its part of the row's max, then of l at the end

@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let kvh = wg.x / 1u;
  let h0 = kvh * 1u + (wg.x % 1u) * 1u;
  let t0 = wg.y * 16u;
  let pFirst = step.pos0 + t0;
  let pLast = step.pos0 + min(t0 + 16u, step.nTokens) - 1u;
  let kb = kvh * 64u;
  // Rows r = (token r / 1, head h0 + r % 1); rows past the batch (or the 16 rows of the
  // tile) hold zeros and are never stored.
  for (var i = lid; i < 256u; i += 32u) {
    let r = i / 16u;
    let d4 = i % 16u;
    let tok = r / 1u;
    var v = vec4<f32>(0.0);
    if (tok < 16u && t0 + tok < step.nTokens) {
      v = q[((t0 + tok) * 512u + (h0 + r % 1u) * 64u) / 4u + d4] * 1.250000000e-1f;
    }
    let qo = r * 72u + 4u * d4;
    qh[qo] = f16(v.x);
    qh[qo + 1u] = f16(v.y);
    qh[qo + 2u] = f16(v.z);
    qh[qo + 3u] = f16(v.w);
    let oo = r * 64u + 4u * d4;
    ob[oo] = 0.0;
    ob[oo + 1u] = 0.0;
    ob[oo + 2u] = 0.0;
    ob[oo + 3u] = 0.0;
  }
  // Lane lid serves row lr (its running max m, and l over the lane's columns lc + 2j) at the row's
  // position (rows past the batch: the last token's).
  let lr = lid / 2u;
  let lc = lid % 2u;
  let myPos = step.pos0 + min(t0 + min(lr / 1u, 15u), step.nTokens - 1u);
  var m = SENT;
  var l = 0.0;
  workgroupBarrier();
  for (var tile = 0u; tile <= pLast; tile += 32u) {
    // 1. K's rows (positions past pLast read row pLast: finite, and masked).
    for (var i = lid; i < 512u; i += 32u) {
      let c = i / 16u;
      let d4 = i % 16u;
      let kv4 = ld_kc4(min(tile + c, pLast) * 512u + kb + 4u * d4);
      let ko = c * 72u + 4u * d4;
      kvs[ko] = f16(kv4.x);
      kvs[ko + 1u] = f16(kv4.y);
      kvs[ko + 2u] = f16(kv4.z);
      kvs[ko + 3u] = f16(kv4.w);
    }
    workgroupBarrier();
    // 2. S = Q·Kᵀ, a result matrix per N positions (loops of constant bounds: the compiler unrolls them;
    // the zero value is explicit: a bare var in a loop kept the last tile's sums on SwiftShader).
    for (var n = 0u; n < 2u; n++) {
      var acc = subgroup_matrix_result<f32, 16, 16>();
      for (var kk = 0u; kk < 4u; kk++) {
        let qo = kk * 16u;
        let ko = n * 1152u + kk * 16u;
        acc = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&qh, qo, 72u), subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&kvs, ko, 72u), acc);
      }
      let so = n * 16u;
      subgroupMatrixStore<row_major>(&sc, so, acc, 32u);
    }
    workgroupBarrier();
    // 3. V's rows replace K's; the online softmax on 2 lanes per row (row lr = lid / 2, its columns
    // and output dims lc + 2j): each lane's max of its soft-capped, masked scores to red.
    for (var i = lid; i < 512u; i += 32u) {
      let c = i / 16u;
      let d4 = i % 16u;
      let vv4 = ld_vc4(min(tile + c, pLast) * 512u + kb + 4u * d4);
      let vo = c * 72u + 4u * d4;
      kvs[vo] = f16(vv4.x);
      kvs[vo + 1u] = f16(vv4.y);
      kvs[vo + 2u] = f16(vv4.z);
      kvs[vo + 3u] = f16(vv4.w);
    }
    var pm = SENT;
    for (var j = 0u; j < 16u; j++) {
      let c = lc + 2u * j;
      var s = sc[lr * 32u + c];
      if (tile + c > myPos) { s = SENT; }
      sc[lr * 32u + c] = s;
      pm = max(pm, s);
    }
    red[lid] = pm;
    workgroupBarrier();
    // The row's max over its lanes (each lane gets the same), P = exp(s − m) as f16, the lane's part of l
    // and of the output row rescaled by exp(m_old − m).
    var mx = m;
    for (var j = 0u; j < 2u; j++) { mx = max(mx, red[lr * 2u + j]); }
    let f = exp(m - mx);
    m = mx;
    var sum = 0.0;
    for (var j = 0u; j < 16u; j++) {
      let c = lc + 2u * j;
      let pr = f16(exp(sc[lr * 32u + c] - m));
      ph[lr * 40u + c] = pr;
      sum += f32(pr);
    }
    l = l * f + sum;
    for (var j = 0u; j < 32u; j++) { ob[lr * 64u + lc + 2u * j] *= f; }
    workgroupBarrier();
    // 4. O += P·V, a result matrix per N dims, loaded from and stored back to the accumulator.
    for (var n = 0u; n < 4u; n++) {
      let oo = n * 16u;
      var acc = subgroupMatrixLoad<subgroup_matrix_result<f32, 16, 16>, row_major>(&ob, oo, 64u);
      for (var kk = 0u; kk < 2u; kk++) {
        let po = kk * 16u;
        let vo = kk * 1152u + n * 16u;
        acc = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&ph, po, 40u), subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, row_major>(&kvs, vo, 72u), acc);
      }
      subgroupMatrixStore<row_major>(&ob, oo, acc, 64u);
    }
    workgroupBarrier();
  }
  // l of row r: the sum of its lanes' parts.
  red[lid] = l;
  workgroupBarrier();
  for (var i = lid; i < 1024u; i += 32u) {
    let r = i / 64u;
    let tok = r / 1u;
    if (tok < 16u && t0 + tok < step.nTokens) {
      var lsum = 0.0;
      for (var j = 0u; j < 2u; j++) { lsum += red[r * 2u + j]; }
      out[(t0 + tok) * 512u + (h0 + r % 1u) * 64u + i % 64u] = ob[i] / lsum;
    }
  }
}