/**
 * Sampling on the GPU: two dispatches turn the logits [nVocab] f32 into a token id [1] u32, so sampled
 * decode chains on the GPU like greedy decode (the id is copied into the next step's input and into a
 * 4-byte readback; the host never sees the logits). With 0 < top-k ≤ {@link SAMPLE_TOPK_CAP} the first,
 * over many workgroups ({@link sampleCandidatesWGSL}), compacts the vocabulary to each stripe's top-k
 * (issue 40: before, one workgroup made ~20 serial passes over 128k–152k logits); with top-k off and
 * top-p < 1, three passes over many workgroups ({@link sampleTopPWGSL}) compact it to a set that provably
 * holds the top-p set. The last, one workgroup ({@link sampleWGSL}), runs the chain below over that list,
 * or over the vocabulary when neither applies (top-k larger than 256 or with top-p 1 and no top-k, or a
 * distribution too flat for the top-p bound). The host encodes for each request only the passes its
 * parameters need ({@link samplePassesNeeded}); a pass encoded without its condition still returns at once.
 *
 * The chain is llama.cpp's default order (src/llama-sampling.cpp; common/common.h
 * `common_params_sampling::samplers`), the same as the CPU reference src/webgpu/sampler.ts:
 *
 * 1. repetition penalty over the distinct ids among the last `lastN` of the history ring: logit / penalty
 *    when > 0, × penalty when ≤ 0 (`llama_sampler_penalties`; written into `work`, a copy of the logits);
 * 2. top-k, 3. top-p (softmax at temperature 1 over the top-k set), 4. min-p (logit ≥ max + ln minP),
 * 5. temperature, 6. softmax and one inverse-CDF draw. Temperature 0 is the argmax of the penalised
 *    logits (lowest id on ties).
 *
 * **No sort.** Every filter keeps a prefix of one total order: logit descending, then id ascending (the
 * CPU sampler's sort order; equal logits are kept lower id first; −0 counts as +0). A prefix is named by
 * its last element (key K, id C): id i is in it when key(i) > K, or key(i) = K and i ≤ C, where key is
 * the f32 bit pattern mapped to an order-preserving u32. top-k finds the element at which the count of
 * the order reaches k, top-p the one at which the mass Σ exp(l − max) reaches p · Z: the same select
 * (`selectRank`), a most-significant-digit radix search over the 32-bit key, 4 bits a pass (16
 * per-thread bins summed in workgroup memory), then one id-ordered pass over the elements whose key equals
 * K to place C. This is zero-tvm's idea (abgnydn/zero-tvm `sampler.wgsl`: the top-p threshold bisected
 * on the f32 bit pattern) made exact at ties. 8 digit passes + 2 tie passes per filter, each a read of
 * the vocabulary; top-k's passes are skipped when it is off, top-p's when p = 1.
 *
 * **The draw** walks the kept ids in id order (each thread sums a contiguous chunk; the chunk sums are
 * scanned in order) with one uniform u = `keyedUniform(seed, draw)` (util/prng.ts): the first id whose cumulative
 * weight exceeds u · S. `Sampler` with `{ keyed: true }` draws the same way, so it picks the same id for
 * the same logits except where f32 rounding (here) and float64 (there) put u · S on different sides of a
 * cumulative boundary, or a top-p boundary's cumulative mass lies within f32 error (~1e-6 relative) of p.
 *
 * f32 throughout; finite sentinels (±3e38), never ±Inf. No subgroup operations (the reductions are in
 * workgroup memory, which every adapter has).
 */
import { argmaxSplit } from './argmax.ts';

/** Threads of the sampler's one workgroup. */
export const SAMPLE_WG = 128;
/** Radix bins per digit pass (4-bit digits: 8 passes cover the 32-bit key). */
const BINS = 16;
/** Words before the ring in the history buffer: [0] = ids appended so far, [1..3] unused. */
export const HISTORY_HEADER = 4;

/** The sampler's uniform, field by field (all 4-byte scalars); the WGSL struct and the packing come from it. */
const FIELDS = [
  ['invTemp', 'f32'], // 1 / temperature (f32-rounded on the host); unused when greedy
  ['topK', 'u32'], // 0 = off (also when ≥ nVocab)
  ['topP', 'f32'], // ≥ 1 = off
  ['minP', 'f32'], // 0 = off
  ['lnMinP', 'f32'], // f32(ln minP), computed on the host so every adapter uses the same threshold
  ['penalty', 'f32'], // 1 = off
  ['lastN', 'u32'], // ids of the history the penalty looks at; 0xffffffff = all
  ['seed', 'u32'],
  ['draw', 'u32'], // index of this draw in the request (the PRNG counter)
  ['greedy', 'u32'], // 1: argmax of the penalised logits
  ['pad0', 'u32'],
  ['pad1', 'u32'],
] as const;

type FieldName = (typeof FIELDS)[number][0];

/** WGSL declaration of the sampler's uniform struct `SampleParams`. */
export const SAMPLE_PARAMS_WGSL = `struct SampleParams { ${FIELDS.map(([n, t]) => `${n}: ${t}`).join(', ')} };`;
/** Bytes of the sampler's uniform. */
export const SAMPLE_PARAMS_BYTES = FIELDS.length * 4;
/** Byte offset of the `draw` field (written before each step). */
export const SAMPLE_DRAW_OFFSET = FIELDS.findIndex(([n]) => n === 'draw') * 4;

/** Sampling parameters as the engine resolves them (src/webgpu/sampler.ts `Sampler.params`). */
export interface SampleSettings {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repetitionPenalty: number;
  repetitionLastN: number;
}

/**
 * Packs the sampler's uniform (see {@link SAMPLE_PARAMS_WGSL}).
 * @param p resolved parameters (already validated: temperature ≥ 0, topP ∈ (0, 1], minP ∈ [0, 1], …).
 * @param seed PRNG seed (low 32 bits). @param draw draw index (low 32 bits). @param nVocab vocabulary size.
 */
export function packSampleParams(p: SampleSettings, seed: number, draw: number, nVocab: number): ArrayBuffer {
  const v: Record<FieldName, number> = {
    invTemp: p.temperature > 0 ? Math.fround(1 / p.temperature) : 0,
    topK: p.topK > 0 && p.topK < nVocab ? p.topK : 0,
    topP: p.topP,
    minP: p.minP,
    lnMinP: p.minP > 0 ? Math.fround(Math.log(p.minP)) : 0,
    penalty: p.repetitionPenalty,
    lastN: p.repetitionLastN < 0 ? 0xffffffff : Math.min(p.repetitionLastN, 0xffffffff),
    seed: seed >>> 0,
    draw: draw >>> 0,
    greedy: p.temperature > 0 ? 0 : 1,
    pad0: 0,
    pad1: 0,
  };
  const buf = new ArrayBuffer(SAMPLE_PARAMS_BYTES);
  const dv = new DataView(buf);
  FIELDS.forEach(([n, t], i) => {
    if (t === 'f32') dv.setFloat32(i * 4, v[n], true);
    else dv.setUint32(i * 4, v[n], true);
  });
  return buf;
}

/**
 * The history buffer's initial contents: header (count = ids.length) then the ring [ring] u32 holding the
 * last `ring` ids at position j mod ring. Shape [HISTORY_HEADER + ring] u32.
 */
export function packHistory(ids: readonly number[], ring: number): Uint32Array {
  const out = new Uint32Array(HISTORY_HEADER + ring);
  out[0] = ids.length;
  for (let j = Math.max(0, ids.length - ring); j < ids.length; j++) out[HISTORY_HEADER + (j % ring)] = ids[j];
  return out;
}

/** WGSL of `pcgHash`/`keyedUniform` (util/prng.ts), the same u32 arithmetic. */
export const PRNG_WGSL = `fn pcg(v: u32) -> u32 {
  let s = v * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}
fn keyed_uniform(seed: u32, index: u32) -> f32 { return f32(pcg(index + pcg(seed)) >> 8u) * (1.0 / 16777216.0); }`;

export interface SampleKernelOptions {
  /** Logits read (the first nVocab of `logits`). */
  nVocab: number;
  /** Capacity of the history ring in ids (≥ 1; the engine uses the context length). */
  ring: number;
  /**
   * Test variant: adds a binding `dbg` [nVocab] f32 that receives each id's final probability (−1 where
   * the id was filtered out), and makes `draws` draws (indices draw … draw + draws − 1) into out[0..draws)
   * without appending to the history.
   */
  debug?: { draws: number };
}

/**
 * The repetition penalty's rule (`llama_sampler_penalties`), shared by every pass that penalises: logit /
 * penalty when > 0, × penalty when ≤ 0, over the distinct ids among the last `lastN` of the history ring
 * (an id seen twice is written twice with the same value). Uses `params`, `hist`, RING and HDR.
 */
const PENALTY_WGSL = `fn penalised(v: f32) -> f32 { return select(v / params.penalty, v * params.penalty, v <= 0.0); }
// How many of the history's last ids the penalty looks at (0 when it is off).
fn penalty_window() -> u32 {
  if (params.penalty == 1.0) { return 0u; }
  return min(min(hist[0], RING), params.lastN);
}
// The j-th of the nh last ids of the history, oldest first.
fn penalty_id(j: u32, nh: u32) -> u32 { return hist[HDR + (hist[0] - nh + j) % RING]; }`;

/** The sampler's WGSL functions: order-preserving keys of logits, workgroup sums, the rank selection of top-k / top-p (histogram passes over key bits) and the inverse-CDF draw. They use the kernel's module constants (WG, BINS), the private n and ch and workgroup arrays. */
const SAMPLE_FNS_WGSL = `// Order-preserving u32 of an f32 (larger float, larger key); −0 is taken as +0.
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
    var h = array<f32, ${BINS}>(); // explicitly zeroed each pass (an uninitialised var in a loop is not, on every compiler)
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

`;

/** The most top-k for which the candidates pass compacts the vocabulary (larger k: the whole vocabulary). */
export const SAMPLE_TOPK_CAP = 256;
/** Threads per workgroup of the candidates pass. */
export const SAMPLE_CAND_WG = 256;
/** The largest stripe the candidates pass holds in workgroup memory (f32 each: 8 KiB). */
const MAX_STRIPE = 2048;

/** How the candidates pass splits the vocabulary. */
export interface SampleSplit {
  /** Logits per workgroup (argmax.ts `argmaxSplit`: ≥ 1,024, a multiple of 256). */
  chunk: number;
  /** Workgroups: ceil(nVocab / chunk), ≤ 256. */
  nParts: number;
  /**
   * The largest top-k compacted: {@link SAMPLE_TOPK_CAP}, or 0 (never; the candidates pass is not
   * planned) for one stripe (nVocab ≤ 1,024) or when a stripe exceeds workgroup memory.
   */
  cap: number;
  /** Why `cap` is 0 (the candidates and top-p passes are not planned); absent when it is not. */
  capReason?: string;
  /** Bytes of the candidates' id buffer `cand` [nParts · cap] u32 (at least 4). */
  candBytes: number;
}

/**
 * The candidates pass's split of `nVocab` logits (the argmax's stripes).
 * @throws RangeError when nVocab < 1.
 */
export function sampleSplit(nVocab: number): SampleSplit {
  const { chunk, nParts } = argmaxSplit(nVocab);
  // One stripe: the list would be the vocabulary's top-k read by one workgroup anyway; an extra dispatch
  // for nothing (SwiftShader, stories260K: sampled decode 138 → ~90 tok/s with it).
  const capReason =
    nParts === 1
      ? `one stripe (${nVocab} logits ≤ ${chunk}): the draw reads the vocabulary at once`
      : chunk > MAX_STRIPE
        ? `stripes of ${chunk} logits exceed the candidates pass's workgroup memory (${MAX_STRIPE} logits)`
        : undefined;
  const cap = capReason === undefined ? SAMPLE_TOPK_CAP : 0;
  return {
    chunk,
    nParts,
    cap,
    ...(capReason === undefined ? {} : { capReason }),
    candBytes: Math.max(4, nParts * cap * 4),
  };
}

/**
 * The top-p candidates' histogram: buckets of 1/TOPP_SCALE nat below the maximum penalised logit M
 * (bucket b holds l with b ≤ (M − l)·TOPP_SCALE < b + 1; the last, TOPP_BINS − 1, everything lower).
 */
const TOPP_BINS = 128;
const TOPP_SCALE = 8;
/**
 * The candidates' mass bound must reach (p + TOPP_SLACK) · Z: the one-workgroup pass sums the same weights
 * in f32 in another order (per-thread partials of ≤ 256 terms then 128 partials: relative error < 3e-5),
 * so the top-p boundary always lies inside. p > 1 − TOPP_SLACK takes the vocabulary path.
 */
const TOPP_SLACK = 1e-3;
/** Fixed-point scale of the per-bucket mass (u32 atomics; a stripe's ≤ 2,048 weights ≤ 1 fit). */
const TOPP_FIXED = 2 ** 20;

/**
 * Layout of the top-p passes' `stats` buffer [statsBytes / 4] u32: per stripe p the maximum penalised
 * logit (f32 bits) at p, Σ exp(l − M) (f32 bits) at nParts + p, the histogram's counts at `counts` +
 * p·TOPP_BINS + b and its mass (Σ ⌊exp(l − M) · 2^20⌋) at `masses` + p·TOPP_BINS + b; then the result for
 * the one-workgroup pass at `result`: [mode (1: the list holds the top-p set; 0: read the vocabulary),
 * n (candidates), Z (f32 bits), M (f32 bits)].
 */
export function sampleStatsLayout(nVocab: number): {
  counts: number;
  masses: number;
  result: number;
  statsBytes: number;
} {
  const { nParts } = sampleSplit(nVocab);
  const counts = 2 * nParts;
  const masses = counts + nParts * TOPP_BINS;
  const result = masses + nParts * TOPP_BINS;
  return { counts, masses, result, statsBytes: (result + 4) * 4 };
}

/**
 * The WGSL the many-workgroup passes share: bindings, constants, the stripe in workgroup memory `sv` and
 * `load_stripe` (the logits of stripe [s, s + len) with the repetition penalty applied, {@link PENALTY_WGSL}).
 */
function stripeModule(N: number, ring: number, out: readonly ('work' | 'cand' | 'stats')[]): string {
  const { chunk, cap, nParts } = sampleSplit(N);
  const W = SAMPLE_CAND_WG;
  // Only the bindings the pass uses (a pipeline's automatic layout drops the others).
  const decl = { work: 'f32', cand: 'u32', stats: 'u32' };
  const outs = out.map(
    (b, i) => `@group(0) @binding(${3 + i}) var<storage, read_write> ${b}: array<${decl[b]}>;\n`,
  );
  return `${SAMPLE_PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: SampleParams;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> hist: array<u32>;
${outs.join('')}const N = ${N}u;
const CHUNK = ${chunk}u;
const NPARTS = ${nParts}u;
const CAP = ${cap}u;
const W = ${W}u;
const CPT = ${chunk / W}u; // contiguous elements per thread in the id-ordered compaction
const RING = ${ring}u;
const HDR = ${HISTORY_HEADER}u;
var<workgroup> sv: array<f32, ${Math.min(chunk, MAX_STRIPE)}>;
var<workgroup> gt: array<u32, ${W}>;
var<workgroup> eq: array<u32, ${W}>;
fn key_of(v: f32) -> u32 {
  let b = select(bitcast<u32>(v), 0u, v == 0.0);
  return select(b | 0x80000000u, ~b, (b >> 31u) == 1u);
}
${PENALTY_WGSL}
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
`;
}

/**
 * The sampler's first pass (issue 40), over many workgroups: when 0 < topK ≤ cap ({@link sampleSplit}),
 * workgroup p loads its stripe [p·chunk, min((p+1)·chunk, nVocab)) of the logits into workgroup memory,
 * applies the repetition penalty to the history's ids in it, finds the stripe's k-th element of the order
 * (logit desc, id asc) by the same radix select over the 16 digits of the key (exact counts), and writes
 * the stripe's top min(k, stripe) elements in id order: penalised logits to work[p·k …] and ids to
 * cand[p·k …]. Every element of the global top-k is in its stripe's top-k, so the list (dense, id order:
 * (nParts − 1)·k + min(k, last stripe) entries) holds it; the one-workgroup pass ({@link sampleWGSL}) then
 * reads this list instead of the vocabulary, with the same results. Otherwise every workgroup returns at
 * once. Bindings (by name): `params`, `logits`, `work`, `hist`, `cand`. Dispatch (nParts).
 */
export function sampleCandidatesWGSL(o: { nVocab: number; ring: number }): string {
  return `${stripeModule(o.nVocab, o.ring, ['work', 'cand'])}var<workgroup> cnt: array<atomic<u32>, ${BINS}>;
@compute @workgroup_size(${SAMPLE_CAND_WG})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let k = params.topK;
  if (k == 0u || k > CAP) { return; }
  let s = wg.x * CHUNK;
  let len = min(CHUNK, N - s);
  load_stripe(lid, s, len);
  let base = wg.x * k;
  if (len <= k) {
    for (var j = lid; j < len; j += W) { work[base + j] = sv[j]; cand[base + j] = s + j; }
    return;
  }
  // The stripe's k-th element: digits of its key, highest first; A = elements whose key is above.
  var P = 0u;
  var A = 0u;
  for (var d = 0u; d < 8u; d++) {
    let shift = 28u - 4u * d;
    let hi = ~(0xffffffffu >> (4u * d));
    if (lid < ${BINS}u) { atomicStore(&cnt[lid], 0u); }
    workgroupBarrier();
    for (var j = lid; j < len; j += W) {
      let key = key_of(sv[j]);
      if (((key ^ P) & hi) == 0u) { atomicAdd(&cnt[(key >> shift) & 15u], 1u); }
    }
    workgroupBarrier();
    var chosen = ${BINS}u;
    for (var j = 0u; j < ${BINS}u; j++) {
      let b = ${BINS - 1}u - j;
      let h = atomicLoad(&cnt[b]);
      if (chosen == ${BINS}u && h > 0u) {
        if (A + h >= k) { chosen = b; } else { A += h; }
      }
    }
    P |= chosen << shift;
    workgroupBarrier();
  }
  let m = k - A; // ties at key P kept, lowest ids first
  // Compaction in id order: thread t owns [t·CPT, t·CPT + CPT).
  let lo = lid * CPT;
  let hi = min(lo + CPT, len);
  var g = 0u;
  var e = 0u;
  for (var j = lo; j < hi; j++) {
    let key = key_of(sv[j]);
    if (key > P) { g++; } else if (key == P) { e++; }
  }
  gt[lid] = g;
  eq[lid] = e;
  workgroupBarrier();
  var gp = 0u;
  var ep = 0u;
  for (var t = 0u; t < lid; t++) { gp += gt[t]; ep += eq[t]; }
  var pos = base + gp + min(ep, m);
  for (var j = lo; j < hi; j++) {
    let key = key_of(sv[j]);
    if (key > P || (key == P && ep < m)) {
      work[pos] = sv[j];
      cand[pos] = s + j;
      pos++;
    }
    if (key == P) { ep++; }
  }
}`;
}

/** The top-p passes, in dispatch order. */
export const SAMPLE_TOPP_PASSES = ['max', 'mass', 'compact'] as const;
export type SampleTopPPass = (typeof SAMPLE_TOPP_PASSES)[number];

/**
 * What one of the sampler's passes does, in dispatch order: `candidates` ({@link sampleCandidatesWGSL}),
 * `top_p_max` / `top_p_mass` / `top_p_compact` ({@link sampleTopPWGSL}), `draw` ({@link sampleWGSL}).
 */
export type SamplePassRole = 'candidates' | `top_p_${SampleTopPPass}` | 'draw';

/** Threads per workgroup of each pass (the `@workgroup_size` its WGSL declares). */
export const SAMPLE_PASS_THREADS: Readonly<Record<SamplePassRole, number>> = {
  candidates: SAMPLE_CAND_WG,
  top_p_max: SAMPLE_CAND_WG,
  top_p_mass: SAMPLE_CAND_WG,
  top_p_compact: SAMPLE_CAND_WG,
  draw: SAMPLE_WG,
};

/** One pass of the GPU sampler as a load plans it ({@link samplePassPlan}). */
export interface SamplePassPlan {
  role: SamplePassRole;
  /** Workgroups along x: the stripes ({@link sampleSplit} nParts), or 1 for the draw. */
  workgroups: number;
}

/**
 * The GPU sampler's passes a load plans for `nVocab` logits, in dispatch order (forward.ts builds its
 * kernels from this list): `candidates` and, with `topP`, the three top-p passes over the stripes when
 * {@link sampleSplit}'s cap is not 0 (more than one stripe, each within workgroup memory); `draw` (one
 * workgroup) always. `topP` false is a software adapter's plan (kernel-plan.ts `KernelPlan.sampleTopP`).
 * @throws RangeError when nVocab < 1.
 */
export function samplePassPlan(nVocab: number, topP: boolean): SamplePassPlan[] {
  const { cap, nParts } = sampleSplit(nVocab);
  const stripes: SamplePassPlan[] =
    cap === 0
      ? []
      : [
          { role: 'candidates', workgroups: nParts },
          ...(topP
            ? SAMPLE_TOPP_PASSES.map((x) => ({ role: `top_p_${x}` as const, workgroups: nParts }))
            : []),
        ];
  return [...stripes, { role: 'draw', workgroups: 1 }];
}

/**
 * The passes a request's parameters need (issue 40): the host encodes only these, so a request does not
 * pay for the dispatches that would return at once (on a software adapter an empty dispatch of many
 * workgroups costs ~27 ms). Each condition is the one the WGSL tests on the packed uniform
 * ({@link packSampleParams}), so a pass is left out exactly when it would write nothing and the draw
 * would not read what it writes:
 * - `candidates` when 0 < topK ≤ {@link SAMPLE_TOPK_CAP} after packing (topK ≥ nVocab is off), greedy or
 *   not: the draw then reads its list (`topKList`), also for the argmax;
 * - the three top-p passes when sampled (temperature > 0), top-k off and f32(topP) < 1 (`top_p_on`; the
 *   draw reads their result `stats` under the same condition, else never);
 * - `draw` always.
 * With one stripe (nVocab ≤ 1,024: {@link sampleSplit}'s cap 0) only the draw. The model may plan fewer
 * (no top-p passes on software adapters: the draw then finds `stats` never written, mode 0);
 * {@link selectSamplePasses} keeps the planned ones.
 * @returns the roles, in dispatch order.
 */
export function samplePassesNeeded(p: SampleSettings, nVocab: number): SamplePassRole[] {
  const topK = p.topK > 0 && p.topK < nVocab ? p.topK : 0;
  const sampled = p.temperature > 0;
  const { cap } = sampleSplit(nVocab);
  const out: SamplePassRole[] = [];
  if (topK > 0 && topK <= cap) out.push('candidates');
  if (cap > 0 && sampled && topK === 0 && Math.fround(p.topP) < 1)
    out.push(...SAMPLE_TOPP_PASSES.map((x) => `top_p_${x}` as const));
  out.push('draw');
  return out;
}

/**
 * The planned passes `planned` (in dispatch order, each with its role) that the request needs
 * ({@link samplePassesNeeded}), in the same order.
 */
export function selectSamplePasses<T extends { role: SamplePassRole }>(
  planned: readonly T[],
  p: SampleSettings,
  nVocab: number,
): T[] {
  const need = new Set(samplePassesNeeded(p, nVocab));
  return planned.filter((d) => need.has(d.role));
}

/**
 * The top-p candidates (issue 40): three passes over many workgroups that, when top-p < 1 with top-k off
 * (sampled, nVocab over one stripe), compact the vocabulary to a set that provably holds the top-p set, so
 * the one-workgroup pass ({@link sampleWGSL}) runs its selects and draw over it instead of ~10 passes over
 * the vocabulary. Each workgroup loads its stripe with the repetition penalty (`load_stripe`, the rule of
 * {@link PENALTY_WGSL}); then
 * - `max`: the stripe's maximum penalised logit → stats[p];
 * - `mass`: M = max over the stripes; the stripe's Σ exp(l − M) → stats[nParts + p], and per bucket
 *   b = ⌊(M − l)·{@link TOPP_SCALE}⌋ (the last bucket unbounded) the count of its logits and a lower bound
 *   of their mass (each weight rounded down to 2^−20; u32 atomics) → stats (see {@link sampleStatsLayout});
 * - `compact`: every workgroup sums the same partials in the same order: Z = Σ_p z_p, C_b and L_b the
 *   counts and mass bounds over the stripes; b* the smallest b with Σ_{b' ≤ b} L_b' ≥ (p +
 *   {@link TOPP_SLACK}) · Z. The top-p set (the shortest prefix of the order logit desc, id asc with mass
 *   ≥ p · Z) is then inside {bucket ≤ b*}, a prefix of the order that keeps
 *   whole ties. Each stripe writes those logits (penalised) and ids in id order to work / cand at its
 *   offset (the counts of the stripes before it), and workgroup 0 writes [1, n, Z, M] to the result. When
 *   b* is the last bucket or n exceeds the list (nParts · cap, the top-k list's buffer), it writes mode 0
 *   and the one-workgroup pass reads the vocabulary as before (the exact fallback: flat distributions).
 *
 * The one-workgroup pass then uses Z from here (the whole vocabulary's mass; the list has only part of it),
 * so its top-p select and draw give the vocabulary path's kept set and ids, up to f32 summation order.
 * Bindings (by name): `params`, `logits`, `work`, `hist`, `cand`, `stats` ({@link sampleStatsLayout}).
 * Dispatch (nParts). Not planned when {@link sampleSplit}'s cap is 0.
 * @throws Error when nVocab is not a positive integer.
 */
export function sampleTopPWGSL(o: { nVocab: number; ring: number }, pass: SampleTopPPass): string {
  const N = o.nVocab;
  if (!Number.isInteger(N) || N < 1) throw new Error(`nVocab must be a positive integer, got ${N}`);
  const { nParts, cap } = sampleSplit(N);
  const W = SAMPLE_CAND_WG;
  const head = `${stripeModule(N, o.ring, pass === 'compact' ? ['work', 'cand', 'stats'] : ['stats'])}const NB = ${TOPP_BINS}u;
const SCALE = ${TOPP_SCALE}.0;
const COUNTS = ${sampleStatsLayout(N).counts}u;
const MASSES = ${sampleStatsLayout(N).masses}u;
const RESULT = ${sampleStatsLayout(N).result}u;
const FIXED = ${TOPP_FIXED}.0;
const LIST = ${nParts * cap}u; // the most candidates the list holds
const NEG = -3.0e38;
var<workgroup> red: array<f32, ${W}>;
var<workgroup> bcast: u32;
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
@compute @workgroup_size(${W})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  if (!top_p_on()) { return; }
  let s = wg.x * CHUNK;
  let len = min(CHUNK, N - s);
`;
  if (pass === 'max')
    return `${head}  load_stripe(lid, s, len);
  var m = NEG;
  for (var j = lid; j < len; j += W) { m = max(m, sv[j]); }
  red[lid] = m;
  workgroupBarrier();
  if (lid == 0u) {
    var r = NEG;
    for (var j = 0u; j < W; j++) { r = max(r, red[j]); }
    stats[wg.x] = bitcast<u32>(r);
  }
}`;
  if (pass === 'mass')
    return `${head.replace('var<workgroup> bcast: u32;', `var<workgroup> bcast: u32;\nvar<workgroup> cnt: array<atomic<u32>, ${TOPP_BINS}>;\nvar<workgroup> cm: array<atomic<u32>, ${TOPP_BINS}>;`)}  let M = global_max(lid);
  for (var b = lid; b < NB; b += W) { atomicStore(&cnt[b], 0u); atomicStore(&cm[b], 0u); }
  load_stripe(lid, s, len);
  var z = 0.0;
  for (var j = lid; j < len; j += W) {
    let v = sv[j];
    let w = exp(v - M);
    z += w;
    let b = bucket(M, v);
    atomicAdd(&cnt[b], 1u);
    atomicAdd(&cm[b], u32(w * FIXED)); // rounded down: a lower bound of the bucket's mass
  }
  red[lid] = z;
  workgroupBarrier();
  if (lid == 0u) {
    var r = 0.0;
    for (var j = 0u; j < W; j++) { r += red[j]; }
    stats[NPARTS + wg.x] = bitcast<u32>(r);
  }
  for (var b = lid; b < NB; b += W) {
    stats[COUNTS + wg.x * NB + b] = atomicLoad(&cnt[b]);
    stats[MASSES + wg.x * NB + b] = atomicLoad(&cm[b]);
  }
}`;
  return `${head.replace('var<workgroup> bcast: u32;', `var<workgroup> bcast: u32;\nvar<workgroup> cb: array<u32, ${TOPP_BINS}>;\nvar<workgroup> mb: array<f32, ${TOPP_BINS}>;\nvar<workgroup> oc: array<u32, ${nParts}>;`)}  let M = global_max(lid);
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
    let goal = (params.topP + ${TOPP_SLACK}) * Z;
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
}`;
}
/**
 * The sampler kernel, after {@link sampleCandidatesWGSL} and {@link sampleTopPWGSL} in the same pass.
 * Bindings (by name): `params` uniform SampleParams, `logits` [≥ nVocab] f32 (read only; never modified),
 * `work` [nVocab] f32 scratch (the candidates' logits when a candidates pass ran), `hist` [HISTORY_HEADER +
 * ring] u32 (the sampled id is appended), `out` [1] u32 (the id; [draws] in the debug variant), `cand`
 * (the candidates' ids), `stats` (the top-p passes' result, read when top-p < 1 with top-k off), `dbg`
 * (debug only). Dispatch (1).
 * @throws Error when nVocab or ring is not a positive integer.
 */
export function sampleWGSL(o: SampleKernelOptions): string {
  const N = o.nVocab;
  const WG = SAMPLE_WG;
  if (!Number.isInteger(N) || N < 1) throw new Error(`nVocab must be a positive integer, got ${N}`);
  if (!Number.isInteger(o.ring) || o.ring < 1)
    throw new Error(`ring must be a positive integer, got ${o.ring}`);
  const { chunk, nParts, cap } = sampleSplit(N);
  const dbg = o.debug;
  return `${SAMPLE_PARAMS_WGSL}
@group(0) @binding(0) var<uniform> params: SampleParams;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> work: array<f32>;
@group(0) @binding(3) var<storage, read_write> hist: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> cand: array<u32>;
@group(0) @binding(6) var<storage, read_write> stats: array<u32>;
${dbg ? '@group(0) @binding(7) var<storage, read_write> dbg: array<f32>;' : ''}
const N = ${N}u;
const WG = ${WG}u;
const RESULT = ${sampleStatsLayout(N).result}u; // the top-p candidates' result in stats
const CHUNK = ${chunk}u; // the candidates pass's stripes
const NPARTS = ${nParts}u;
const CAP = ${cap}u;
const RING = ${o.ring}u;
const HDR = ${HISTORY_HEADER}u;
const BINS = ${BINS}u;
const NEG = -3.0e38;
var<workgroup> sh: array<f32, ${BINS * WG}>; // [BINS][WG] per-thread histograms, then reductions
var<workgroup> ids: array<u32, ${WG}>;
var<workgroup> csum: array<f32, ${WG}>; // per-chunk kept weight, id order
var<workgroup> bcast: u32;
var<workgroup> tot: array<f32, ${BINS}>; // the pass's bin totals
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

${PRNG_WGSL}

${PENALTY_WGSL}

${SAMPLE_FNS_WGSL}fn id_of(i: u32) -> u32 { return select(i, cand[i], listed && i < n); }

@compute @workgroup_size(${WG})
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
${
  dbg
    ? `  var S = 0.0;
  for (var t = 0u; t < WG; t++) { S += csum[t]; }
  if (listed) { for (var i = lid; i < N; i += WG) { dbg[i] = -1.0; } }
  storageBarrier();
  for (var i = lo; i < hi; i++) {
    let v = work[i];
    let id = id_of(i);
    if (!sampled) { dbg[id] = select(-1.0, 1.0, id == amax); }
    else { dbg[id] = select(-1.0, exp((v - gM) * params.invTemp) / S, kept(v, i)); }
  }
  for (var d = lid; d < ${dbg.draws}u; d += WG) {
    out[d] = select(amax, id_of(draw_one(keyed_uniform(params.seed, params.draw + d))), sampled);
  }`
    : `  if (lid == 0u) {
    let tok = select(amax, id_of(draw_one(keyed_uniform(params.seed, params.draw))), sampled);
    out[0] = tok;
    let total = hist[0];
    hist[HDR + total % RING] = tok;
    hist[0] = total + 1u;
  }`
}
}`;
}
