/**
 * Prefill batch sizes: how many tokens the engine's buffers hold per batch ({@link defaultBatchSize}, the
 * load-time capacity), and how many tokens each batch of a cancellable prefill runs
 * ({@link nextPrefillBatch}, LlamaModel.prefill): batches start at one token tile and grow or shrink so a
 * batch takes about `targetMs`, so a Stop lands within one batch on a slow adapter while a fast GPU soon
 * runs full batches.
 */

/** What a cancellable prefill aims one batch's GPU time at, ms (LlamaModel.prefill's `targetBatchMs`). */
export const PREFILL_TARGET_MS = 100;

/** The largest default batch on a GPU (llama.cpp's default ubatch). */
export const MAX_DEFAULT_BATCH = 512;

/** The default batch on a software (fallback) adapter, and the engine's default before issue 16. */
export const FALLBACK_BATCH = 64;

/**
 * The default prefill batch (LoadOptions.batchSize): on a software adapter {@link FALLBACK_BATCH}; on a
 * GPU the largest multiple of `tile` up to {@link MAX_DEFAULT_BATCH} whose per-batch buffers fit one
 * binding and one buffer (`min(maxStorageBufferBindingSize, maxBufferSize, maxBindingBytes)`): the widest
 * is B × max(nFF, nVocab, nEmbd, qDim) × 4 bytes (the SwiGLU hidden [B, nFF], and the every-position logits
 * [B, nVocab] of teacher-forced scoring with its readback). Never more than the context length, never
 * below 1.
 */
export function defaultBatchSize(o: {
  isFallback: boolean;
  contextLength: number;
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  /** An extra cap on bytes per binding (the engine option of the same name). */
  maxBindingBytes?: number;
  nEmbd: number;
  nFF: number;
  nVocab: number;
  /** nHead × headDim. */
  qDim: number;
  /** The prefill kernel's tokens per tile (default 32, the tiled kernel's; batches are multiples of it). */
  tile?: number;
}): number {
  const ctx = Math.max(1, Math.floor(o.contextLength));
  if (o.isFallback) return Math.min(FALLBACK_BATCH, ctx);
  const tile = o.tile ?? 32;
  const limit = Math.min(
    o.maxStorageBufferBindingSize,
    o.maxBufferSize,
    o.maxBindingBytes ?? Number.POSITIVE_INFINITY,
  );
  const widest = Math.max(o.nFF, o.nVocab, o.nEmbd, o.qDim) * 4;
  let b = Math.min(MAX_DEFAULT_BATCH, Math.floor(limit / widest), ctx);
  if (b >= tile) b -= b % tile;
  return Math.max(1, b);
}

/**
 * Tokens in the first batch of an adaptive prefill: one tile (at most the buffers' capacity `max`).
 */
export function firstPrefillBatch(o: { tile: number; max: number }): number {
  return Math.max(1, Math.min(o.tile, o.max));
}

/**
 * Tokens in the next batch of an adaptive prefill, from the last batch (`tokens` in `ms`): the rate it
 * ran at × `targetMs`, rounded to a multiple of `tile` (at least one tile), growing at most 4× a batch
 * (a short batch's time is mostly fixed cost, so its rate is a poor guide to a long one's), and never
 * above `max` (the buffers' capacity). A batch that ran past the target shrinks the next at once. A
 * target of 0 keeps every batch at one tile.
 */
export function nextPrefillBatch(
  last: { tokens: number; ms: number },
  o: { tile: number; max: number; targetMs: number },
): number {
  const max = Math.max(1, o.max);
  const tile = Math.max(1, Math.min(o.tile, max));
  if (!(o.targetMs > 0)) return tile;
  const grow = 4 * Math.max(tile, last.tokens);
  // A batch measured at 0 ms (a coarse clock, or a target of 0) gives an infinite or NaN rate.
  const want = last.ms > 0 ? (last.tokens / last.ms) * o.targetMs : grow;
  const rounded = Math.max(tile, Math.round((Number.isFinite(want) ? want : grow) / tile) * tile);
  return Math.max(1, Math.min(rounded, grow, max));
}
