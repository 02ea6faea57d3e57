struct SampleParams { invTemp: f32, topK: u32, topP: f32, minP: f32, lnMinP: f32, penalty: f32, lastN: u32, seed: u32, draw: u32, greedy: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<uniform> params: SampleParams;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> work: array<f32>;
@group(0) @binding(3) var<storage, read_write> hist: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> cand: array<u32>;
@group(0) @binding(6) var<storage, read_write> stats: array<u32>;

const N = 32000u;
const WG = 128u;
const RESULT = 8256u; // the top-p candidates' result in stats
const CHUNK = 1024u; // the candidates pass's stripes
const NPARTS = 32u;
const CAP = 256u;
const RING = 256u;
const HDR = 4u;
const BINS = 16u;
const NEG = -3.0e38;
var<workgroup> sh: array<f32, 2048>; // [BINS][WG] per-thread histograms, then reductions
var<workgroup> ids: array<u32, 128>;
var<workgroup> csum: array<f32, 128>; // per-chunk kept weight, id order
var<workgroup> bcast: u32;
var<workgroup> tot: array<f32, 16>; // the pass's bin totals
// The kept prefix after top-k and top-p (key, last id), the max logit and the min-p threshold.
var<private> gK: u32;
var<private> gC: u32;
var<private> gM: f32;
var<private> gThr: f32;
// Elements read: the vocabulary (n = N, element i is id i) or the candidates (element i is id cand[i]),
// and ch elements per thread in the id-ordered passes (thread t: [t·ch, t·ch + ch) ∩ [0, n)).
var<private> n: u32;
var<private> ch: u32;
var<private> listed: bool;

fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}
fn keyed_uniform(seed: u32, index: u32) -> f32 { return f32(pcg(index + pcg(seed)) >> 8u) * (1.0 / 16777216.0); }

fn penalised(v: f32) -> f32 { return select(v / params.penalty, v * params.penalty, v <= 0.0); }
// How many of the history's last ids the penalty looks at (0 when it is off).
fn penalty_window() -> u32 {
  if (params.penalty == 1.0) { return 0u; }
  return min(min(hist[0], RING), params.lastN);
}
// The j-th of the nh last ids of the history, oldest first.
fn penalty_id(j: u32, nh: u32) -> u32 { return hist[HDR + (hist[0] - nh + j) % RING]; }

// Order-preserving u32 of an f32 (larger float, larger key); −0 is taken as +0.
fn key_of(v: f32) -> u32 {
  let b = select(bitcast<u32>(v), 0u, v == 0.0);
  return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}
fn value_of(k: u32) -> f32 { return bitcast<f32>(select(~k, k & 0x7fffffffu, (k >> 31u) == 1u)); }
// Is (key k, id i) in the prefix of the order (logit desc, id asc) that ends at (K, C)?
fn in_prefix(k: u32, i: u32, K: u32, C: u32) -> bool { return k > K || (k == K && i <= C); }
fn kept(v: f32, i: u32) -> bool { return in_prefix(key_of(v), i, gK, gC) && v >= gThr; }

// Reductions sum serially after one barrier rather than in a log2(WG)-barrier tree: a barrier costs
// ~20 µs per workgroup on a software adapter, and WG serial reads are cheap on a GPU.
fn wg_sum(lid: u32, v: f32) -> f32 {
  sh[lid] = v;
  workgroupBarrier();
  var r = 0.0;
  for (var j = 0u; j < WG; j++) { r += sh[j]; }
  workgroupBarrier();
  return r;
}

// The element of the order (logit desc, id asc), among those in the prefix (EK, EC), at which the
// cumulative weight first reaches goal (weight 1 when !mass, exp(l − gM) when mass); returns its
// (key, id). When rounding leaves the goal out of reach, the last element.
fn select_rank(lid: u32, mass: bool, goal: f32, EK: u32, EC: u32) -> vec2<u32> {
  var P = 0u;    // key digits chosen so far
  var A = 0.0;   // weight of the eligible elements whose key is above every key with prefix P
  for (var d = 0u; d < 8u; d++) {
    let shift = 28u - 4u * d;
    let hi = ~(0xffffffffu >> (4u * d)); // the digits already chosen
    var h = array<f32, 16>(); // explicitly zeroed each pass (an uninitialised var in a loop is not, on every compiler)
    for (var i = lid; i < n; i += WG) {
      let v = work[i];
      let k = key_of(v);
      if (((k ^ P) & hi) == 0u && in_prefix(k, i, EK, EC)) {
        let b = (k >> shift) & 15u;
        h[b] += select(1.0, exp(v - gM), mass);
      }
    }
    for (var b = 0u; b < BINS; b++) { sh[b * WG + lid] = h[b]; }
    workgroupBarrier();
    if (lid < BINS) {
      var t = 0.0;
      for (var j = 0u; j < WG; j++) { t += sh[lid * WG + j]; }
      tot[lid] = t;
    }
    workgroupBarrier();
    // Every thread reads the 16 totals and makes the same choice: the highest digit first.
    var chosen = BINS;
    var last = 0u;
    var lastA = A;
    for (var j = 0u; j < BINS; j++) {
      let b = BINS - 1u - j;
      let hb = tot[b];
      if (chosen == BINS && hb > 0.0) {
        if (A + hb >= goal) { chosen = b; } else { last = b; lastA = A; A += hb; }
      }
    }
    if (chosen == BINS) { chosen = last; A = lastA; }
    P |= chosen << shift;
    workgroupBarrier();
  }
  // Ties at key P, in id order: the m-th is the last one kept.
  let wt = select(1.0, exp(value_of(P) - gM), mass);
  let m = max(1u, u32(min(ceil((goal - A) / wt), 4.0e9)));
  let lo = lid * ch;
  let hi = min(lo + ch, n);
  var c = 0u;
  for (var i = lo; i < hi; i++) {
    if (key_of(work[i]) == P && in_prefix(P, i, EK, EC)) { c++; }
  }
  ids[lid] = c;
  if (lid == 0u) { bcast = 0xffffffffu; }
  workgroupBarrier();
  var pre = 0u;
  for (var t = 0u; t < lid; t++) { pre += ids[t]; }
  if (pre < m && pre + c >= m) {
    var seen = pre;
    for (var i = lo; i < hi; i++) {
      if (key_of(work[i]) == P && in_prefix(P, i, EK, EC)) {
        seen++;
        if (seen == m) { bcast = i; break; }
      }
    }
  }
  let C = workgroupUniformLoad(&bcast);
  return vec2<u32>(P, C);
}

// Inverse-CDF draw over the kept ids in id order (csum holds the chunk sums): the first id whose
// cumulative weight exceeds u · S, S = Σ csum in order; never a zero-weight id. One thread.
fn draw_one(u: f32) -> u32 {
  var S = 0.0;
  for (var t = 0u; t < WG; t++) { S += csum[t]; }
  var goal = u * S;
  var cum = 0.0;
  var tc = WG;
  var lastT = 0u;
  for (var t = 0u; t < WG; t++) {
    if (csum[t] > 0.0) {
      lastT = t;
      if (cum + csum[t] > goal) { tc = t; break; }
      cum += csum[t];
    }
  }
  if (tc == WG) { tc = lastT; goal = 3.0e38; } // rounding: u · S reached S; take the last kept id
  let lo = tc * ch;
  let hi = min(lo + ch, n);
  var last = lo;
  for (var i = lo; i < hi; i++) {
    let v = work[i];
    if (kept(v, i)) {
      let w = exp((v - gM) * params.invTemp);
      if (w > 0.0) {
        cum += w;
        last = i;
        if (cum > goal) { return i; }
      }
    }
  }
  return last;
}

fn id_of(i: u32) -> u32 { return select(i, cand[i], listed && i < n); }

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) lid: u32) {
  let sampled = params.greedy == 0u;
  let topKList = params.topK > 0u && params.topK <= CAP; // uniform (a private var is not, to WGSL)
  // The top-p candidates (sampleTopPWGSL) when they ran and proved their bound.
  if (lid == 0u) {
    let on = CAP > 0u && sampled && params.topK == 0u && params.topP < 1.0;
    bcast = select(0u, stats[RESULT], on);
  }
  let topPList = workgroupUniformLoad(&bcast) == 1u;
  let fromList = topKList || topPList;
  listed = fromList;
  n = N;
  if (topKList) { n = (NPARTS - 1u) * params.topK + min(params.topK, N - (NPARTS - 1u) * CHUNK); }
  if (topPList) { n = stats[RESULT + 1u]; }
  ch = (n + WG - 1u) / WG;
  if (!fromList) {
    // 1. work = logits with the repetition penalty (an id seen twice is written twice with the same value).
    for (var i = lid; i < N; i += WG) { work[i] = logits[i]; }
    storageBarrier();
    let nh = penalty_window();
    for (var j = lid; j < nh; j += WG) {
      let t = penalty_id(j, nh);
      if (t < N) { work[t] = penalised(logits[t]); }
    }
    storageBarrier();
  }

  // 2. max and argmax (lowest id on ties).
  var best = NEG;
  var bi = 0xffffffffu;
  for (var i = lid; i < n; i += WG) {
    let v = work[i];
    if (v > best) { best = v; bi = i; }
  }
  sh[lid] = best;
  ids[lid] = bi;
  workgroupBarrier();
  var mx = sh[0];
  var amax = ids[0];
  for (var j = 1u; j < WG; j++) {
    let v = sh[j];
    let k = ids[j];
    if (v > mx || (v == mx && k < amax)) { mx = v; amax = k; }
  }
  amax = id_of(amax);
  gM = mx;
  workgroupBarrier();
  gK = 0u; // the whole vocabulary (key 0 is a NaN pattern, below every finite logit)
  gC = 0xffffffffu;
  gThr = NEG;

  // 3. top-k: the prefix through the k-th element.
  if (sampled && params.topK > 0u) {
    let b = select_rank(lid, false, f32(params.topK), 0u, 0xffffffffu);
    gK = b.x;
    gC = b.y;
  }
  // 4. top-p over the top-k set (temperature 1): the shortest prefix with mass ≥ p · Z.
  if (sampled && params.topP < 1.0) {
    var z = 0.0;
    for (var i = lid; i < n; i += WG) {
      let v = work[i];
      if (in_prefix(key_of(v), i, gK, gC)) { z += exp(v - gM); }
    }
    // The list holds part of the mass: Z of the whole vocabulary comes from the top-p passes.
    let Z = select(wg_sum(lid, z), bitcast<f32>(stats[RESULT + 2u]), topPList);
    let b = select_rank(lid, true, params.topP * Z, gK, gC);
    gK = b.x;
    gC = b.y;
  }
  // 5. min-p: logit ≥ max + ln(minP).
  if (params.minP > 0.0) { gThr = gM + params.lnMinP; }

  // 6. temperature, softmax weights per contiguous chunk, then the draw.
  let lo = lid * ch;
  let hi = min(lo + ch, n);
  if (sampled) {
    var s = 0.0;
    for (var i = lo; i < hi; i++) {
      let v = work[i];
      if (kept(v, i)) { s += exp((v - gM) * params.invTemp); }
    }
    csum[lid] = s;
  }
  workgroupBarrier();
  if (lid == 0u) {
    let tok = select(amax, id_of(draw_one(keyed_uniform(params.seed, params.draw))), sampled);
    out[0] = tok;
    let total = hist[0];
    hist[HDR + total % RING] = tok;
    hist[0] = total + 1u;
  }
}