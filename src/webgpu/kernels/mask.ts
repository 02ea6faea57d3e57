/**
 * The token mask of constrained decoding (structured output, src/core/grammar.ts): one dispatch over the
 * logits [nVocab] f32 that sets every token whose bit is clear in the bitmask [ceil(nVocab / 32)] u32
 * (bit i of word i >> 5 = token i allowed, xgrammar's `getNextTokenBitmask` layout) to
 * {@link MASKED_LOGIT}, in place. It runs between the output matmul and the argmax or the GPU sampler
 * (kernels/argmax.ts, kernels/sample.ts), so both, and a logits readback, see the masked logits; only a
 * constrained step dispatches it, so unconstrained decoding keeps its plan and WGSL unchanged.
 *
 * The masked value is finite (the sampler's rule: no ±Inf) yet far below any real logit: exp(l − max)
 * underflows to exactly 0 in f32, so a masked token is never the argmax and never drawn while one token is
 * allowed, and a repetition penalty (× penalty on a logit ≤ 0) keeps it finite up to a penalty of 3e8.
 */

/** Threads per workgroup; one thread per logit. */
export const MASK_WG = 256;
/** The logit a masked token gets (finite: −1e30). */
export const MASKED_LOGIT = -1e30;

/** Bindings: 0 mask (the bitmask, read), 1 logits (read-write). Dispatch (ceil(nVocab / MASK_WG)). */
export function maskWGSL(o: { nVocab: number }): string {
  return `@group(0) @binding(0) var<storage, read> mask: array<u32>;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@compute @workgroup_size(${MASK_WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= ${o.nVocab}u) { return; }
  if (((mask[i >> 5u] >> (i & 31u)) & 1u) == 0u) { logits[i] = ${MASKED_LOGIT.toExponential()}; }
}`;
}

/**
 * The logit {@link rowMaskWGSL} gives a masked token: at or below the argmax's floor (kernels/argmax.ts:
 * values ≤ −3·10³⁸ are never the maximum), so a row whose allowed logits are all NaN still gives no index
 * (0xFFFFFFFF, reported as non-finite logits) rather than a token the grammar refuses.
 */
export const ROW_MASKED_LOGIT = -3.4e38;

/**
 * Speculative decoding's verify rows under a grammar: logits [T, nVocab] f32 (row stride nVocab) masked
 * in place by one bitmask per row, masks [T, words] u32 (words = ceil(nVocab / 32), the layout of
 * {@link maskWGSL}), each masked token set to {@link ROW_MASKED_LOGIT}, ahead of the per-row argmax only
 * (the sampled loop masks its rows on the CPU). Bindings: 0 masks (read), 1 logits (read-write).
 * Dispatch (ceil(nVocab / MASK_WG), T).
 */
export function rowMaskWGSL(o: { nVocab: number }): string {
  const words = Math.ceil(o.nVocab / 32);
  return `@group(0) @binding(0) var<storage, read> masks: array<u32>;
@group(0) @binding(1) var<storage, read_write> logits: array<f32>;
@compute @workgroup_size(${MASK_WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= ${o.nVocab}u) { return; }
  let r = gid.y;
  if (((masks[r * ${words}u + (i >> 5u)] >> (i & 31u)) & 1u) == 0u) {
    logits[r * ${o.nVocab}u + i] = ${ROW_MASKED_LOGIT.toExponential()};
  }
}`;
}

/** Workgroups of one mask dispatch. */
export function maskWorkgroups(nVocab: number): number {
  return Math.ceil(nVocab / MASK_WG);
}

/**
 * The CPU reference of {@link maskWGSL}: a copy of `logits` [≥ nVocab] with the tokens whose bit is clear
 * in `mask` set to {@link MASKED_LOGIT} (f32), the first nVocab values only.
 */
export function applyTokenMask(
  logits: Float32Array,
  mask: Uint32Array | Int32Array,
  nVocab: number,
): Float32Array {
  const out = logits.slice();
  for (let i = 0; i < nVocab; i++) if (((mask[i >> 5] >>> (i & 31)) & 1) === 0) out[i] = MASKED_LOGIT;
  return out;
}
