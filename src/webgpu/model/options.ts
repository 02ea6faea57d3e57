/**
 * What `LlamaModel.load` takes ({@link LlamaLoadOptions}: the kernel plan, context, KV type, callbacks) and
 * the parts a kernel plan is made of (the prefill matmul kernels, the attention policy, the kernel families
 * profiling counts). The engine resolves the plan per adapter (webgpu/kernel-plan.ts `resolveKernelPlan`);
 * tests and benchmarks force parts of it (`gpuPlan({ … })`).
 */
import type { KvType } from '../../core/types.ts';
import type { KernelPlan } from '../kernel-plan.ts';
import type { FlashLayout } from '../kernels/attention.ts';
import type { PrefillLayout } from '../kernels/attention-prefill.ts';
import type { SgmatAttentionOptions, SgmatAttentionTile } from '../kernels/attention-sgmat.ts';
import type { SgmatTile } from '../kernels/mmm-sgmat.ts';
import type { MmvLayout } from '../kernels/mmv.ts';

/** Kernel families of the forward pass (qwen3's Q/K norm counts as qkv). */
export type KernelFamilyName = 'embed' | 'qkv' | 'attention' | 'wo' | 'ffn' | 'down' | 'output' | 'argmax';

/** The decode matmuls, each of which may get its own {@link MmvLayout} (kernel-plan.ts `KernelPlan.mmv`). */
export type MatmulFamilyName = 'qkv' | 'wo' | 'ffn' | 'down' | 'output';

/** Every {@link MatmulFamilyName}, in forward order. */
export const MATMUL_FAMILIES: readonly MatmulFamilyName[] = ['qkv', 'wo', 'ffn', 'down', 'output'];

/** A timestamp hook on the forward pass's dispatches (llama.ts `LlamaModel.profiler`). */
export interface ForwardProfiler {
  /** Timestamp writes for the next pass (of `family`, in a forward pass of T tokens), or undefined. */
  passWrites(family: KernelFamilyName, T: number): GPUComputePassTimestampWrites | undefined;
}

/**
 * The prefill matrix × matrix kernels (kernel-plan.ts `KernelPlan.prefill`):
 * - `tile` (GPUs): kernels/mmm.ts, 32 tokens × 64 rows per workgroup through workgroup-memory tiles;
 * - `mmv`: kernels/mmv.ts's register-tiled kernels at `tokens` (≤ 16) tokens per workgroup row, which
 *   software adapters run fastest. `splitSegments` gives every segment (Q, K and V) its own dispatch:
 *   SwiftShader runs every branch of a kernel's segment switch under a lane mask, so one fused Q/K/V
 *   kernel costs the three bodies for every workgroup.
 * `normPass` (mmv) writes each batch's input RMSNorm once per layer and step (kernels/postnorm.ts
 * `rmsNormRowsWGSL`, into the run state's `xn`) for the Q/K/V and gate/up matmuls to read, instead of
 * each of their workgroups summing the squares and scaling by the norm weight inside its loop (faster on
 * SwiftShader). Measurements: BENCHMARKS.md, "Why the kernel defaults…", PrefillMatmul.
 * K not a multiple of 32 (float rows) falls back to matmul.ts's kernel in the `mmv` choice.
 * `intDot` on `tile` runs the integer-dot tile (mmm.ts `MmmOptions.intDot`; needs WGSL's
 * packed_4x8_integer_dot_product) for every matmul whose weights are all of mmm.ts's `INT_DOT_TYPES`; the
 * others keep the float tile.
 * `subgroupMatrix` on `tile` runs the subgroup-matrix tile (kernels/mmm-sgmat.ts; the GPU's matrix units)
 * for every matmul: `true` asks for it (the engine self-tests it at load and keeps the float tile, with the
 * reason in `kernels.prefill.subgroupMatrix`, where it is unavailable or fails), a shape runs that one;
 * `'int8'` asks for its integer variant (i8 → i32, self-tested against the integer-dot tile; the matmuls
 * whose weights are not all INT_DOT_TYPES keep the float tile; where it is unavailable or fails, the
 * integer-dot tile runs where WGSL has it, else the float tile); `'big'` asks for the large f16 tile (64
 * tokens × 128 rows, mmm-sgmat.ts `sgmatTileDims`; single-buffered where the device's workgroup memory
 * holds 32,256 B but not the double-buffered 47,616 B, none below).
 */
export type PrefillMatmul =
  | { kind: 'tile'; intDot?: boolean; subgroupMatrix?: boolean | 'int8' | 'big' | SgmatTile }
  | { kind: 'mmv'; layout: MmvLayout; tokens: number; splitSegments: boolean; normPass?: boolean };

/** Default prefill kernels for a GPU. */
export const GPU_PREFILL: PrefillMatmul = { kind: 'tile' };

/** Load-time options for llama.ts `LlamaModel.load`. */
export interface LlamaLoadOptions {
  /** KV cache length in tokens. */
  contextLength: number;
  /** The most tokens per prefill batch (the run state's buffers hold this many; engine default: prefill.ts). */
  batchSize: number;
  /** Largest buffer binding to use, bytes (default: the device's maxStorageBufferBindingSize). */
  maxBindingBytes?: number;
  /**
   * The kernels to run (webgpu/kernel-plan.ts; the engine resolves it per adapter with `resolveKernelPlan`).
   * Default `gpuPlan()`: a GPU's kernels without trials.
   */
  plan?: KernelPlan;
  signal?: AbortSignal;
  /** The K cache's element type, and V's unless {@link vKvType} (default f16, as llama.cpp). */
  kvType?: KvType;
  /** The V cache's element type where it differs from K's (llama.cpp's `-ctv`). */
  vKvType?: KvType;
  /** Bytes read from the source so far. */
  onFetch?: (done: number, total: number) => void;
  /** Bytes written to the GPU so far. */
  onUpload?: (done: number, total: number) => void;
  /** Pipelines compiled so far. */
  onCompile?: (done: number, total: number) => void;
}

/**
 * The decode attention's layout and chunking (kernel-plan.ts `KernelPlan.attention`; see
 * kernels/attention.ts `attentionSplit`): `fixedChunk` (tests) fixes the positions per chunk. `prefill`:
 * the prefill attention (kernels/attention-prefill.ts `prefillAttentionWGSL`; default `tiled`), the one on
 * subgroup matrices ({@link SgmatPrefillLayout}), or `per-token`
 * for the older one-workgroup-per-(head, token) kernel, which shapes the tiled kernel does not take
 * (head size not a multiple of 4 or above 256) use anyway.
 */
export interface AttentionPolicy {
  layout: FlashLayout;
  targetWorkgroups: number;
  minChunk: number;
  fixedChunk?: number;
  prefill?: PrefillLayout | SgmatPrefillLayout | 'per-token';
  /**
   * The attention of a small batch (2 … `KernelPlan.smallBatch` tokens: speculative decoding's verify pass,
   * a short prompt): `flash` (default where the head shape takes it), the decode kernel's flash-decoding
   * over chunks of the KV cache with up to 8 query tokens per workgroup, so a few tokens deep in the cache
   * fill the GPU as a decode step does (the prefill kernel runs one workgroup per tile of query tokens ×
   * heads of a KV group: on 8 tokens, 8–32 workgroups walking the whole cache); `prefill`: the prefill
   * kernel (`prefill` above).
   */
  small?: 'flash' | 'prefill';
}

/**
 * The prefill attention on subgroup matrices (kernels/attention-sgmat.ts). By default, where the adapter has
 * subgroup matrices, self-tested and timed against the float one at load (kernel-plan.ts
 * `resolvePrefillAttention`); forced as `{ kind: 'sgmat' }`
 * (`WebGpuEngineOptions.attention.prefill`; `kvTile` optional): the load self-tests it on the adapter
 * against the float kernel (kernels/attention-sgmat-check.ts) and runs it with the first configuration that
 * passes (`tile` and `kvTile` set), or keeps the adapter's float layout and records why
 * (`ModelInfo.kernels.attention.prefill.subgroupMatrix`). A plan made by hand (tests) may set `tile`,
 * which runs it untested.
 */
export interface SgmatPrefillLayout {
  kind: 'sgmat';
  tile?: SgmatAttentionTile;
  /** KV positions per tile (a multiple of the configuration's N and K); default from the workgroup memory. */
  kvTile?: number;
  /** Tests only: the WGSL generator (a test double such as the emulator); default the kernel's. */
  wgsl?: (o: SgmatAttentionOptions) => string;
}

/** Default decode attention for a GPU: tiled, chunks of ≥ 128 positions aiming at 256 workgroups. */
export const GPU_ATTENTION: AttentionPolicy = {
  layout: { kind: 'tiled', lanes: 1 },
  targetWorkgroups: 256,
  minChunk: 128,
};

/** Load timings in ms. */
export interface LlamaLoadTimes {
  fetchMs: number;
  uploadMs: number;
  compileMs: number;
}
