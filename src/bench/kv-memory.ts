/**
 * The KV cache's memory per cache type, and the context lengths a model can take on an adapter with the
 * cache type that makes each fit: what the page's load options show beside the KV and context selects
 * (ui/kv-context.ts). DOM-free and GPU-free: it reads the model's GGUF header and a memory probe.
 */

import type { KvType } from '../core/types.ts';
import { KV_TYPES } from '../core/validate.ts';
import type { GgufFile } from '../gguf/types.ts';
import { llamaConfigFromGguf } from '../model/config.ts';
import { WEIGHT_TYPES } from '../webgpu/kernels/common.ts';
import type { FitsVerdict, MemoryProbe } from './llama-bench.ts';
import { modelFits } from './llama-bench-gpu.ts';

/** The KV cache's shape: layers and one layer's K (or V) width. */
export interface KvShape {
  nLayers: number;
  /** KV heads (GQA: fewer than the query heads). */
  nHeadKv: number;
  /** Head size of K and V. */
  headDim: number;
  /**
   * Tokens the sliding-window layers attend to (Gemma 2/3, Phi-3's long-context variant), if any. Our
   * engine indexes every layer's cache by position, so a sliding-window layer still holds the whole
   * context (webgpu/model/llama.ts): the bytes below do not shrink with it. Kept to say so.
   */
  slidingWindow?: number;
}

/**
 * Bytes of one row of `n` values of cache type `t`, as ggml's `ggml_row_size`: 4 per value for f32, 2 for
 * f16, 34 per block of 32 for q8_0 (an f16 scale and 32 int8), 18 per block of 32 for q4_0 (an f16 scale
 * and 32 nibbles). A quantized row needs whole blocks: `n` not a multiple of 32 is rounded up to them (the
 * engine refuses such a cache: webgpu/model/state.ts `checkKvCacheFits`).
 */
export function kvRowBytes(t: KvType, n: number): number {
  if (t === 'f32') return 4 * n;
  if (t === 'f16') return 2 * n;
  return Math.ceil(n / 32) * (t === 'q8_0' ? 34 : 18);
}

/**
 * Bytes of K and V per token per layer: `kvRowBytes(K, nHeadKv·headDim) + kvRowBytes(V, …)`. Llama-3.1-8B
 * (8 KV heads × 128): 4,096 (f16), 2,176 (q8_0), 1,152 (q4_0), as llama.cpp's `llama_kv_cache` allocates.
 */
export function kvBytesPerTokenLayer(s: KvShape, typeK: KvType, typeV: KvType = typeK): number {
  const kvDim = s.nHeadKv * s.headDim;
  return kvRowBytes(typeK, kvDim) + kvRowBytes(typeV, kvDim);
}

/**
 * Bytes the whole KV cache takes at `contextLength` tokens: layers × context × {@link kvBytesPerTokenLayer}
 * (every layer, sliding-window ones included, holds the whole context in our engine).
 * @throws RangeError for a context length that is not a positive integer.
 */
export function kvCacheBytes(
  s: KvShape,
  contextLength: number,
  typeK: KvType,
  typeV: KvType = typeK,
): number {
  if (!Number.isInteger(contextLength) || contextLength < 1)
    throw new RangeError(`contextLength must be a positive integer, got ${contextLength}`);
  return s.nLayers * contextLength * kvBytesPerTokenLayer(s, typeK, typeV);
}

/**
 * The KV shape and trained context of a GGUF header (`{arch}.context_length`, heads, layers).
 * @throws EngineError as config.ts `llamaConfigFromGguf` for a header the engine cannot run.
 */
export function kvShapeOf(file: GgufFile): KvShape & { contextLength: number } {
  const cfg = llamaConfigFromGguf(file, { supportedTypes: WEIGHT_TYPES });
  return {
    nLayers: cfg.nLayers,
    nHeadKv: cfg.nHeadKv,
    headDim: cfg.headDim,
    contextLength: cfg.contextLength,
    ...(cfg.gemma?.swa ? { slidingWindow: cfg.gemma.swa.window } : {}),
  };
}

/**
 * Context lengths to offer up to a model's trained maximum: 512 and each power of two above it below the
 * maximum, then the maximum itself (a model trained on fewer than 512 tokens: its maximum alone).
 */
export function contextChoices(trained: number): number[] {
  const out: number[] = [];
  for (let n = 512; n < trained; n *= 2) out.push(n);
  out.push(trained);
  return out;
}

/** The cache types tried for a context, cheapest in fidelity first (f32 is never needed to fit). */
export const FIT_ORDER: readonly KvType[] = ['f16', 'q8_0', 'q4_0'];

/** How a context length fits: the first type of {@link FIT_ORDER} that fits, or none, with its verdict. */
export interface ContextFit {
  contextLength: number;
  /** The cache type (K and V alike) that makes it fit, or null when even q4_0 does not. */
  kvType: KvType | null;
  /** The verdict for `kvType` (for null: q4_0's, which says why not). */
  verdict: FitsVerdict;
}

/**
 * For each context length, the first cache type (f16, q8_0, q4_0) with which the model fits the probed
 * adapter, by `modelFits` (weights, the cache, the run state and the repacking peak against the allocatable
 * memory; each tensor and each cache layer against maxStorageBufferBindingSize and maxBufferSize).
 * A context above the trained maximum is not offered: `modelFits` would clamp it.
 */
export function contextFits(file: GgufFile, mem: MemoryProbe, lengths: readonly number[]): ContextFit[] {
  const headDim = kvShapeOf(file).headDim;
  return lengths.map((ctx) => {
    let last: FitsVerdict | undefined;
    for (const t of FIT_ORDER) {
      if (kvTypeUnusable(t, headDim)) continue;
      const v = modelFits(file, mem, ctx, t);
      if (v.ok) return { contextLength: ctx, kvType: t, verdict: v };
      last = v;
    }
    return { contextLength: ctx, kvType: null, verdict: last as FitsVerdict };
  });
}

/**
 * Why a cache type cannot hold this model's K/V rows, or undefined when it can: ggml's Q8_0/Q4_0 blocks
 * hold 32 values, so each head's row must be a multiple of 32 (the engine refuses the load otherwise, as
 * llama.cpp does).
 */
export function kvTypeUnusable(t: KvType, headDim: number): string | undefined {
  return (t === 'q8_0' || t === 'q4_0') && headDim % 32 !== 0
    ? `needs a head size that is a multiple of 32 (this model's: ${headDim})`
    : undefined;
}

/** Every cache type's bytes at `contextLength` for K = V (the KV select's labels), in {@link KV_TYPES} order. */
export function kvBytesByType(s: KvShape, contextLength: number): { kvType: KvType; bytes: number }[] {
  return KV_TYPES.map((t) => ({ kvType: t, bytes: kvCacheBytes(s, contextLength, t) }));
}
