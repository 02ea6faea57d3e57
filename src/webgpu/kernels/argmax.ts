/**
 * Greedy sampling on the GPU: the index of the largest logit of each row (lowest index on ties, as
 * llama.cpp's greedy sampler), as a parallel reduction in two dispatches (issue 40):
 *
 *   partials  dispatch (nParts, nRows): workgroup (p, r) scans the contiguous stripe
 *             [p·chunk, min((p+1)·chunk, nVocab)) of row r, 64 threads reading consecutive logits
 *             (coalesced), then a tree reduction in workgroup memory → partials[r, p] = (max, index)
 *   final     dispatch (1, nRows): one workgroup per row reduces its nParts ≤ 256 partials → out[r]
 *
 * 64 threads per workgroup, not 256: a stripe of ≥ 1,024 logits gives each thread ≥ 16, and the tree
 * has 6 levels (6 barriers) instead of 8. On a GPU either shape is a few microseconds (32–149 workgroups
 * spread over the GPU); on SwiftShader, which runs a workgroup's invocations 4 at a time and switches
 * between them at every barrier, the partials pass over 32,000 logits took 114–168 ms with 256 threads
 * and 4.8–7.6 ms with 64 (Node, a loaded 2-core machine, 2026-12-05; BENCHMARKS.md "SwiftShader floor"):
 * 17% of a decode token's GPU time there and 10% of a 7-token prompt's (docs/kernels.md). The stripes
 * (argmaxSplit) are as before, so the GPU sampler's candidates pass (kernels/sample.ts), which shares
 * them, is unchanged.
 *
 * Two dispatches in one compute pass are ordered by WebGPU's usage scopes (the second sees the first's
 * writes), which a single dispatch whose last workgroup finishes the job cannot promise under WGSL's
 * relaxed atomics. Before, one workgroup of 64 threads scanned the whole vocabulary: 0.73 ms for
 * 128,256 logits on an H200 (../shared/notes/h200-2026-12-04.md).
 *
 * Non-finite logits behave as before: NaN, −∞ and values ≤ −3·10³⁸ are never the maximum, and a row
 * with none other gives 0xFFFFFFFF (generation.ts reports it as non-finite logits).
 */

/** The stripes' granularity: a stripe ({@link argmaxSplit} `chunk`) is a multiple of this many logits. */
export const ARGMAX_UNIT = 256;
/** Threads per workgroup of both passes (a divisor of {@link ARGMAX_UNIT}). */
export const ARGMAX_THREADS = 64;
/** The most partial maxima per row (the final pass's threads take 4 each). */
const MAX_PARTS = 4 * ARGMAX_THREADS;
/** The fewest logits per workgroup of the partials pass (16 per thread: enough work to hide a launch). */
const MIN_CHUNK = 4 * ARGMAX_UNIT;

/** How the partials pass splits a row of `nVocab` logits. */
export interface ArgmaxSplit {
  /** Logits per workgroup (a multiple of {@link ARGMAX_UNIT}). */
  chunk: number;
  /** Workgroups per row, 1..256: ceil(nVocab / chunk). */
  nParts: number;
}

/**
 * The split of a row of `nVocab` logits: stripes of at least 1,024 logits, at most 256 of them
 * (128,256 logits → 126 stripes of 1,024; 151,936 → 149).
 * @throws RangeError when nVocab < 1.
 */
export function argmaxSplit(nVocab: number): ArgmaxSplit {
  if (!(Number.isInteger(nVocab) && nVocab >= 1)) throw new RangeError(`nVocab must be ≥ 1, got ${nVocab}`);
  const chunk = Math.max(MIN_CHUNK, Math.ceil(nVocab / MAX_PARTS / ARGMAX_UNIT) * ARGMAX_UNIT);
  return { chunk, nParts: Math.ceil(nVocab / chunk) };
}

/** The tree reduction of (bv, bi) over the workgroup, lowest index on ties; the result in bv[0], bi[0]. */
const reduceWG = `  bv[lid] = best;
  bi[lid] = bidx;
  workgroupBarrier();
  for (var s = ${ARGMAX_THREADS / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let v = bv[lid + s];
      let k = bi[lid + s];
      if (v > bv[lid] || (v == bv[lid] && k < bi[lid])) { bv[lid] = v; bi[lid] = k; }
    }
    workgroupBarrier();
  }`;

const shared = `var<workgroup> bv: array<f32, ${ARGMAX_THREADS}>;
var<workgroup> bi: array<u32, ${ARGMAX_THREADS}>;`;

/**
 * The partials pass. Shapes: logits [nRows, nVocab] f32 → partials [nRows, nParts, 2] u32 (the
 * maximum's f32 bits, its index). Bindings: 0 logits, 1 partials. Dispatch ({@link argmaxSplit}
 * nParts, nRows).
 */
export function argmaxPartialsWGSL(o: { nVocab: number }): string {
  const { chunk, nParts } = argmaxSplit(o.nVocab);
  return `@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> partials: array<u32>;
${shared}
@compute @workgroup_size(${ARGMAX_THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let part = wg.x;
  let row = wg.y;
  let base = row * ${o.nVocab}u;
  let end = min((part + 1u) * ${chunk}u, ${o.nVocab}u);
  var best = -3.0e38;
  var bidx = 0xffffffffu;
  // Each thread's indices increase, so a strict > keeps its lowest index of a tie.
  for (var i = part * ${chunk}u + lid; i < end; i += ${ARGMAX_THREADS}u) {
    let v = logits[base + i];
    if (v > best) { best = v; bidx = i; }
  }
${reduceWG}
  if (lid == 0u) {
    let at = (row * ${nParts}u + part) * 2u;
    partials[at] = bitcast<u32>(bv[0]);
    partials[at + 1u] = bi[0];
  }
}`;
}

/**
 * The final pass. Shapes: partials [nRows, nParts, 2] u32 → out [nRows] u32. Bindings: 0 partials,
 * 1 out. Dispatch (1, nRows).
 */
export function argmaxFinalWGSL(o: { nVocab: number }): string {
  const { nParts } = argmaxSplit(o.nVocab);
  return `@group(0) @binding(0) var<storage, read> partials: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
${shared}
@compute @workgroup_size(${ARGMAX_THREADS})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let row = wg.y;
  var best = -3.0e38;
  var bidx = 0xffffffffu;
  // Parts lid, lid + ${ARGMAX_THREADS}, …: their indices increase, so a strict > keeps the lowest of a tie.
  for (var p = lid; p < ${nParts}u; p += ${ARGMAX_THREADS}u) {
    let at = (row * ${nParts}u + p) * 2u;
    let v = bitcast<f32>(partials[at]);
    if (v > best) { best = v; bidx = partials[at + 1u]; }
  }
${reduceWG}
  if (lid == 0u) { out[row] = bi[0]; }
}`;
}

/** The two passes of an argmax over rows of `nVocab` logits ({@link argmaxPartialsWGSL}, {@link argmaxFinalWGSL}). */
export interface ArgmaxKernels {
  partials: string;
  final: string;
  /** Workgroups along x of the partials pass; the final pass has 1. */
  nParts: number;
  /** Bytes of the partials buffer per row (nParts × 8). */
  partialBytesPerRow: number;
}

/** The argmax's two kernels for rows of `nVocab` logits, and the partials buffer they share. */
export function argmaxKernels(o: { nVocab: number }): ArgmaxKernels {
  const { nParts } = argmaxSplit(o.nVocab);
  return {
    partials: argmaxPartialsWGSL(o),
    final: argmaxFinalWGSL(o),
    nParts,
    partialBytesPerRow: nParts * 8,
  };
}
