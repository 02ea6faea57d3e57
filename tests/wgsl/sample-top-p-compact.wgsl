struct SampleParams { invTemp: f32, topK: u32, topP: f32, minP: f32, lnMinP: f32, penalty: f32, lastN: u32, seed: u32, draw: u32, greedy: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<uniform> params: SampleParams;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> hist: array<u32>;
@group(0) @binding(3) var<storage, read_write> work: array<f32>;
@group(0) @binding(4) var<storage, read_write> cand: array<u32>;
@group(0) @binding(5) var<storage, read_write> stats: array<u32>;
const N = 32000u;
const CHUNK = 1024u;
const NPARTS = 32u;
const CAP = 256u;
const W = 256u;
const CPT = 4u; // contiguous elements per thread in the id-ordered compaction
const RING = 256u;
const HDR = 4u;
var<workgroup> sv: array<f32, 1024>;
var<workgroup> gt: array<u32, 256>;
var<workgroup> eq: array<u32, 256>;
fn key_of(v: f32) -> u32 {
  let b = select(bitcast<u32>(v), 0u, v == 0.0);
  return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}
fn penalised(v: f32) -> f32 { return select(v / params.penalty, v * params.penalty, v <= 0.0); }
// How many of the history's last ids the penalty looks at (0 when it is off).
fn penalty_window() -> u32 {
  if (params.penalty == 1.0) { return 0u; }
  return min(min(hist[0], RING), params.lastN);
}
// The j-th of the nh last ids of the history, oldest first.
fn penalty_id(j: u32, nh: u32) -> u32 { return hist[HDR + (hist[0] - nh + j) % RING]; }
fn load_stripe(lid: u32, s: u32, len: u32) {
  for (var j = lid; j < len; j += W) { sv[j] = logits[s + j]; }
  workgroupBarrier();
  let nh = penalty_window();
  for (var j = lid; j < nh; j += W) {
    let t = penalty_id(j, nh);
    if (t >= s && t < s + len) { sv[t - s] = penalised(logits[t]); }
  }
  workgroupBarrier();
}
const NB = 128u;
const SCALE = 8.0;
const COUNTS = 64u;
const MASSES = 4160u;
const RESULT = 8256u;
const FIXED = 1048576.0;
const LIST = 8192u; // the most candidates the list holds
const NEG = -3.0e38;
var<workgroup> red: array<f32, 256>;
var<workgroup> bcast: u32;
var<workgroup> cb: array<u32, 128>;
var<workgroup> mb: array<f32, 128>;
var<workgroup> oc: array<u32, 32>;
// The top-p candidates run when top-p < 1, top-k off, sampled (uniform).
fn top_p_on() -> bool { return params.greedy == 0u && params.topK == 0u && params.topP < 1.0; }
// The bucket of a penalised logit below the maximum M.
fn bucket(M: f32, v: f32) -> u32 { return u32(min(max((M - v) * SCALE, 0.0), f32(NB - 1u))); }
// M: the maximum of the stripes' maxima (every workgroup the same value).
fn global_max(lid: u32) -> f32 {
  var m = NEG;
  for (var q = lid; q < NPARTS; q += W) { m = max(m, bitcast<f32>(stats[q])); }
  red[lid] = m;
  workgroupBarrier();
  var r = NEG;
  for (var j = 0u; j < W; j++) { r = max(r, red[j]); }
  workgroupBarrier();
  return r;
}
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  if (!top_p_on()) { return; }
  let s = wg.x * CHUNK;
  let len = min(CHUNK, N - s);
  let M = global_max(lid);
  for (var b = lid; b < NB; b += W) {
    var c = 0u;
    var m = 0.0;
    for (var q = 0u; q < NPARTS; q++) {
      c += stats[COUNTS + q * NB + b];
      m += f32(stats[MASSES + q * NB + b]);
    }
    cb[b] = c;
    mb[b] = m / FIXED;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var Z = 0.0;
    for (var q = 0u; q < NPARTS; q++) { Z += bitcast<f32>(stats[NPARTS + q]); }
    let goal = (params.topP + 0.001) * Z;
    var lb = 0.0;
    var total = 0u;
    var bs = NB - 1u;
    for (var b = 0u; b < NB - 1u; b++) {
      lb += mb[b];
      total += cb[b];
      if (lb >= goal) { bs = b; break; }
    }
    if (bs == NB - 1u || total > LIST) { bs = NB; } // no bound: the vocabulary path
    if (wg.x == 0u) {
      stats[RESULT] = select(1u, 0u, bs == NB);
      stats[RESULT + 1u] = total;
      stats[RESULT + 2u] = bitcast<u32>(Z);
      stats[RESULT + 3u] = bitcast<u32>(M);
    }
    bcast = bs;
  }
  let bs = workgroupUniformLoad(&bcast);
  if (bs == NB) { return; }
  // This stripe's offset in the list: the candidates of the stripes before it.
  for (var q = lid; q < NPARTS; q += W) {
    var c = 0u;
    for (var b = 0u; b <= bs; b++) { c += stats[COUNTS + q * NB + b]; }
    oc[q] = c;
  }
  load_stripe(lid, s, len); // its barriers also publish oc
  var off = 0u;
  for (var q = 0u; q < wg.x; q++) { off += oc[q]; }
  // Compaction in id order: thread t owns [t·CPT, t·CPT + CPT).
  let lo = lid * CPT;
  let hi = min(lo + CPT, len);
  var g = 0u;
  for (var j = lo; j < hi; j++) { if (bucket(M, sv[j]) <= bs) { g++; } }
  gt[lid] = g;
  workgroupBarrier();
  var pos = off;
  for (var t = 0u; t < lid; t++) { pos += gt[t]; }
  for (var j = lo; j < hi; j++) {
    let v = sv[j];
    if (bucket(M, v) <= bs) {
      work[pos] = v;
      cand[pos] = s + j;
      pos++;
    }
  }
}