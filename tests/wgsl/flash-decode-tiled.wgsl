enable subgroups;
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

const W: u32 = 64u;
const P: u32 = 16u;
var<workgroup> sc: array<f32, 16>;
var<workgroup> mrow: array<f32, 1>;
var<workgroup> crow: array<f32, 1>;

@compute @workgroup_size(64)
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
  if (lid < RW) { mrow[lid] = SENT; }
  let pl = lid / 4u;
  let lane = lid % 4u;
  let pg = lid / 8u;
  let w = lid % 8u;
  var acc: array<vec4<f32>, 2>;
  var lsum: array<f32, 1>;
  workgroupBarrier();
  for (var tile = start; tile < end; tile += P) {
    // Scores of position tile + pl for every row (lanes split the head dimension).
    let j = tile + pl;
    let base = min(j, end - 1u) * 512u + kb;
    var s: array<f32, 1>;
    for (var r = 0u; r < RW; r++) { s[r] = 0.0; }
    for (var i = 0u; i < 2u; i++) {
      let e = i * 4u + lane;
      let kw = ld_kc8(base + 8u * e);
      for (var r = 0u; r < RW; r++) {
        s[r] += dot(qs[r * 16u + 2u * e], kw[0]);
        s[r] += dot(qs[r * 16u + 2u * e + 1u], kw[1]);
      }
    }
    for (var r = 0u; r < RW; r++) { s[r] += subgroupShuffleXor(s[r], 1u); }
    for (var r = 0u; r < RW; r++) { s[r] += subgroupShuffleXor(s[r], 2u); }
    if (lane == 0u) {
      for (var r = 0u; r < RW; r++) {
        let ok = j < end && rowTok(r) < step.nTokens && j <= step.pos0 + rowTok(r);
        sc[r * P + pl] = select(SENT, s[r], ok);
      }
    }
    workgroupBarrier();
    if (lid < RW) {
      var mx = mrow[lid];
      for (var p = 0u; p < P; p++) { mx = max(mx, sc[lid * P + p]); }
      crow[lid] = exp(mrow[lid] - mx);
      mrow[lid] = mx;
    }
    workgroupBarrier();
    for (var i = lid; i < 16u; i += W) {
      let sv = sc[i];
      sc[i] = select(0.0, exp(sv - mrow[i / P]), sv > -1.0e29);
    }
    workgroupBarrier();
    if (pg < 8u) {
      for (var r = 0u; r < RW; r++) {
        let c = crow[r];
        lsum[r] *= c;
        acc[2u * r] *= c;
        acc[2u * r + 1u] *= c;
      }
      for (var p = pg; p < P; p += 8u) {
        let vw = ld_vc8(min(tile + p, end - 1u) * 512u + kb + 8u * w);
        for (var r = 0u; r < RW; r++) {
          let pr = sc[r * P + p];
          acc[2u * r] += select(vec4<f32>(0.0), pr * vw[0], pr > 0.0);
          acc[2u * r + 1u] += select(vec4<f32>(0.0), pr * vw[1], pr > 0.0);
          lsum[r] += pr;
        }
      }
    }
    workgroupBarrier();
  }
  for (var g = 1u; g < 8u; g++) {
    workgroupBarrier();
    if (pg == g) {
      for (var r = 0u; r < RW; r++) {
        qs[r * 16u + 2u * w] = acc[2u * r];
        qs[r * 16u + 2u * w + 1u] = acc[2u * r + 1u];
        if (w == 0u) { crow[r] = lsum[r]; }
      }
    }
    workgroupBarrier();
    if (pg == 0u) {
      for (var r = 0u; r < RW; r++) {
        acc[2u * r] += qs[r * 16u + 2u * w];
        acc[2u * r + 1u] += qs[r * 16u + 2u * w + 1u];
        lsum[r] += crow[r];
      }
    }
  }
  if (pg == 0u) {
    for (var r = 0u; r < RW; r++) {
      let a = acc[2u * r];
      let b = acc[2u * r + 1u];
      emit(kvh, hg, split, nSplit, r, 4u * w, a.xy, mrow[r], lsum[r]);
      emit(kvh, hg, split, nSplit, r, 4u * w + 1u, a.zw, mrow[r], lsum[r]);
      emit(kvh, hg, split, nSplit, r, 4u * w + 2u, b.xy, mrow[r], lsum[r]);
      emit(kvh, hg, split, nSplit, r, 4u * w + 3u, b.zw, mrow[r], lsum[r]);
    }
  }
}